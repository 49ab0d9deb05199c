// A plain Wayland client for the Wayland desktop tests: one xdg-shell toplevel that fills the
// size the compositor gives it with test_pattern.h's picture (a wl_shm XRGB8888 buffer at the
// scale given on the command line), and writes every pointer and keyboard event it receives to
// a file, one line each, keys decoded with the keymap the compositor sent (xkbcommon):
//
//   drawn W H                    a picture of W x H surface coordinates is on screen (once for
//                                each size the compositor asks for)
//   enter X Y | motion X Y       pointer position, surface coordinates (over the window, the
//                                client shows no pointer image, so captures show its pixels)
//   button CODE STATE X Y        evdev button code, 1 pressed / 0 released, at the position
//   axis AXIS VALUE              wl_pointer axis (0 vertical, 1 horizontal), in axis units
//   key STATE KEYSYM UTF8HEX MODS   state 1/0, keysym name, the UTF-8 typed (hex), modifiers C S A
//   L focus                        keyboard focus entered
//
// Usage: iris_wayland_test_client --scale N --events FILE [--title TITLE]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/mman.h>
#include <unistd.h>
#include <wayland-client.h>
#include <xkbcommon/xkbcommon.h>

#include "tests/agent/env/wayland/test_pattern.h"
#include "xdg-shell-client-protocol.h"

namespace {

struct Client {
    wl_display* display = nullptr;
    wl_compositor* compositor = nullptr;
    wl_shm* shm = nullptr;
    xdg_wm_base* wmBase = nullptr;
    wl_seat* seat = nullptr;
    wl_pointer* pointer = nullptr;
    wl_keyboard* keyboard = nullptr;
    wl_surface* surface = nullptr;
    xdg_surface* xdgSurface = nullptr;
    xdg_toplevel* toplevel = nullptr;
    xkb_context* xkb = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
    xkb_keymap* keymap = nullptr;
    xkb_state* state = nullptr;
    int scale = 1;
    int width = 0, height = 0;                  // surface coordinates, from the last configure
    int reportedWidth = 0, reportedHeight = 0;  // the last size reported as drawn
    double x = 0, y = 0;
    FILE* events = nullptr;

    void line(const std::string& text) {
        std::fprintf(events, "%s\n", text.c_str());
        std::fflush(events);
    }
};

void draw(Client& c);

const wl_callback_listener kFrameDone = {
    .done = [](void* data, wl_callback* callback, std::uint32_t) {
        wl_callback_destroy(callback);
        auto& c = *static_cast<Client*>(data);
        if (c.width == c.reportedWidth && c.height == c.reportedHeight) return;
        c.reportedWidth = c.width;
        c.reportedHeight = c.height;
        c.line("drawn " + std::to_string(c.width) + " " + std::to_string(c.height));
    }};

void draw(Client& c) {
    int w = c.width * c.scale, h = c.height * c.scale, stride = w * 4;
    std::size_t size = static_cast<std::size_t>(stride) * static_cast<std::size_t>(h);
    int fd = memfd_create("iris-test-client", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) std::exit(3);
    auto* pixels =
        static_cast<std::uint32_t*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    for (int py = 0; py < h; ++py) {
        for (int px = 0; px < w; ++px) {
            iris::agent::testing::Rgb rgb = iris::agent::testing::patternAt(px, py);
            pixels[py * w + px] = 0xff000000u | static_cast<std::uint32_t>(rgb.r) << 16 |
                                  static_cast<std::uint32_t>(rgb.g) << 8 | rgb.b;
        }
    }
    munmap(pixels, size);
    wl_shm_pool* pool = wl_shm_create_pool(c.shm, fd, static_cast<std::int32_t>(size));
    wl_buffer* buffer = wl_shm_pool_create_buffer(pool, 0, w, h, stride, WL_SHM_FORMAT_XRGB8888);
    wl_shm_pool_destroy(pool);
    close(fd);
    wl_surface_set_buffer_scale(c.surface, c.scale);
    wl_surface_attach(c.surface, buffer, 0, 0);
    wl_surface_damage_buffer(c.surface, 0, 0, w, h);
    wl_callback_add_listener(wl_surface_frame(c.surface), &kFrameDone, &c);
    wl_surface_commit(c.surface);
}

std::string hex(const char* text) {
    std::string out;
    char byte[4];
    for (const char* p = text; *p != '\0'; ++p) {
        std::snprintf(byte, sizeof(byte), "%02x", static_cast<unsigned char>(*p));
        out += byte;
    }
    return out.empty() ? "-" : out;
}

const wl_pointer_listener kPointer = {
    .enter =
        [](void* data, wl_pointer* pointer, std::uint32_t serial, wl_surface*, wl_fixed_t x,
           wl_fixed_t y) {
            auto& c = *static_cast<Client*>(data);
            // No pointer image over the window, sent before the line that tells the test.
            wl_pointer_set_cursor(pointer, serial, nullptr, 0, 0);
            wl_display_flush(c.display);
            c.x = wl_fixed_to_double(x);
            c.y = wl_fixed_to_double(y);
            c.line("enter " + std::to_string(c.x) + " " + std::to_string(c.y));
        },
    .leave = [](void*, wl_pointer*, std::uint32_t, wl_surface*) {},
    .motion =
        [](void* data, wl_pointer*, std::uint32_t, wl_fixed_t x, wl_fixed_t y) {
            auto& c = *static_cast<Client*>(data);
            c.x = wl_fixed_to_double(x);
            c.y = wl_fixed_to_double(y);
            c.line("motion " + std::to_string(c.x) + " " + std::to_string(c.y));
        },
    .button =
        [](void* data, wl_pointer*, std::uint32_t, std::uint32_t, std::uint32_t button,
           std::uint32_t state) {
            auto& c = *static_cast<Client*>(data);
            c.line("button " + std::to_string(button) + " " + std::to_string(state) + " " +
                   std::to_string(c.x) + " " + std::to_string(c.y));
        },
    .axis =
        [](void* data, wl_pointer*, std::uint32_t, std::uint32_t axis, wl_fixed_t value) {
            static_cast<Client*>(data)->line("axis " + std::to_string(axis) + " " +
                                             std::to_string(wl_fixed_to_double(value)));
        },
    .frame = [](void*, wl_pointer*) {},
    .axis_source = [](void*, wl_pointer*, std::uint32_t) {},
    .axis_stop = [](void*, wl_pointer*, std::uint32_t, std::uint32_t) {},
    .axis_discrete = [](void*, wl_pointer*, std::uint32_t, std::int32_t) {},
    .axis_value120 = [](void*, wl_pointer*, std::uint32_t, std::int32_t) {},
};

const wl_keyboard_listener kKeyboard = {
    .keymap =
        [](void* data, wl_keyboard*, std::uint32_t, std::int32_t fd, std::uint32_t size) {
            auto& c = *static_cast<Client*>(data);
            void* text = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
            close(fd);
            if (text == MAP_FAILED) std::exit(4);
            if (c.state != nullptr) xkb_state_unref(c.state);
            if (c.keymap != nullptr) xkb_keymap_unref(c.keymap);
            c.keymap =
                xkb_keymap_new_from_string(c.xkb, static_cast<const char*>(text),
                                           XKB_KEYMAP_FORMAT_TEXT_V1, XKB_KEYMAP_COMPILE_NO_FLAGS);
            munmap(text, size);
            if (c.keymap == nullptr) std::exit(5);
            c.state = xkb_state_new(c.keymap);
        },
    .enter = [](void* data, wl_keyboard*, std::uint32_t, wl_surface*,
                wl_array*) { static_cast<Client*>(data)->line("focus"); },
    .leave = [](void*, wl_keyboard*, std::uint32_t, wl_surface*) {},
    .key =
        [](void* data, wl_keyboard*, std::uint32_t, std::uint32_t, std::uint32_t key,
           std::uint32_t state) {
            auto& c = *static_cast<Client*>(data);
            if (c.state == nullptr) return;
            xkb_keysym_t keysym = xkb_state_key_get_one_sym(c.state, key + 8);
            char name[64] = "?";
            xkb_keysym_get_name(keysym, name, sizeof(name));
            char utf8[64] = "";
            xkb_state_key_get_utf8(c.state, key + 8, utf8, sizeof(utf8));
            std::string mods;
            auto active = [&](const char* mod) {
                return xkb_state_mod_name_is_active(c.state, mod, XKB_STATE_MODS_EFFECTIVE) > 0;
            };
            if (active(XKB_MOD_NAME_CTRL)) mods += "C";
            if (active(XKB_MOD_NAME_SHIFT)) mods += "S";
            if (active(XKB_MOD_NAME_ALT)) mods += "A";
            if (active(XKB_MOD_NAME_LOGO)) mods += "L";
            c.line("key " + std::to_string(state) + " " + name + " " + hex(utf8) + " " +
                   (mods.empty() ? "-" : mods));
        },
    .modifiers =
        [](void* data, wl_keyboard*, std::uint32_t, std::uint32_t depressed, std::uint32_t latched,
           std::uint32_t locked, std::uint32_t group) {
            auto& c = *static_cast<Client*>(data);
            if (c.state != nullptr)
                xkb_state_update_mask(c.state, depressed, latched, locked, 0, 0, group);
        },
    .repeat_info = [](void*, wl_keyboard*, std::int32_t, std::int32_t) {},
};

const xdg_wm_base_listener kWmBase = {
    .ping = [](void*, xdg_wm_base* base, std::uint32_t serial) { xdg_wm_base_pong(base, serial); }};

const xdg_surface_listener kXdgSurface = {
    .configure = [](void* data, xdg_surface* surface, std::uint32_t serial) {
        auto& c = *static_cast<Client*>(data);
        xdg_surface_ack_configure(surface, serial);
        draw(c);
    }};

const xdg_toplevel_listener kToplevel = {
    .configure =
        [](void* data, xdg_toplevel*, std::int32_t width, std::int32_t height, wl_array*) {
            auto& c = *static_cast<Client*>(data);
            c.width = width > 0 ? width : 300;
            c.height = height > 0 ? height : 200;
        },
    .close = [](void*, xdg_toplevel*) { std::exit(0); },
    .configure_bounds = [](void*, xdg_toplevel*, std::int32_t, std::int32_t) {},
    .wm_capabilities = [](void*, xdg_toplevel*, wl_array*) {},
};

const wl_registry_listener kRegistry = {
    .global =
        [](void* data, wl_registry* registry, std::uint32_t name, const char* interface,
           std::uint32_t version) {
            auto& c = *static_cast<Client*>(data);
            std::string kind = interface;
            if (kind == wl_compositor_interface.name) {
                c.compositor = static_cast<wl_compositor*>(
                    wl_registry_bind(registry, name, &wl_compositor_interface, 4));
            } else if (kind == wl_shm_interface.name) {
                c.shm =
                    static_cast<wl_shm*>(wl_registry_bind(registry, name, &wl_shm_interface, 1));
            } else if (kind == xdg_wm_base_interface.name) {
                c.wmBase = static_cast<xdg_wm_base*>(
                    wl_registry_bind(registry, name, &xdg_wm_base_interface, 1));
            } else if (kind == wl_seat_interface.name && c.seat == nullptr) {
                c.seat = static_cast<wl_seat*>(wl_registry_bind(registry, name, &wl_seat_interface,
                                                                version < 5 ? version : 5));
            }
        },
    .global_remove = [](void*, wl_registry*, std::uint32_t) {},
};

}  // namespace

int main(int argc, char** argv) {
    Client c;
    std::string events, title = "iris wayland test";
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--scale") c.scale = std::atoi(argv[i + 1]);
        if (flag == "--events") events = argv[i + 1];
        if (flag == "--title") title = argv[i + 1];
    }
    c.events = std::fopen(events.c_str(), "w");
    if (c.events == nullptr || c.scale < 1) return 2;
    c.display = wl_display_connect(nullptr);
    if (c.display == nullptr) return 1;
    wl_registry_add_listener(wl_display_get_registry(c.display), &kRegistry, &c);
    wl_display_roundtrip(c.display);
    if (c.compositor == nullptr || c.shm == nullptr || c.wmBase == nullptr || c.seat == nullptr)
        return 1;
    xdg_wm_base_add_listener(c.wmBase, &kWmBase, &c);
    c.pointer = wl_seat_get_pointer(c.seat);
    wl_pointer_add_listener(c.pointer, &kPointer, &c);
    c.keyboard = wl_seat_get_keyboard(c.seat);
    wl_keyboard_add_listener(c.keyboard, &kKeyboard, &c);
    c.surface = wl_compositor_create_surface(c.compositor);
    c.xdgSurface = xdg_wm_base_get_xdg_surface(c.wmBase, c.surface);
    xdg_surface_add_listener(c.xdgSurface, &kXdgSurface, &c);
    c.toplevel = xdg_surface_get_toplevel(c.xdgSurface);
    xdg_toplevel_add_listener(c.toplevel, &kToplevel, &c);
    xdg_toplevel_set_title(c.toplevel, title.c_str());
    wl_surface_commit(c.surface);
    while (wl_display_dispatch(c.display) != -1) {
    }
    return 0;
}
