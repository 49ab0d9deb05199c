#include "agent/env/wayland/wayland_input.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>
#include <wayland-client.h>
#include <xkbcommon/xkbcommon.h>

#include "agent/env/desktop/desktop_actions.h"
#include "agent/env/wayland/wayland_connection.h"
#include "virtual-keyboard-unstable-v1-client-protocol.h"
#include "wlr-virtual-pointer-unstable-v1-client-protocol.h"

namespace iris::agent {
namespace {

// Linux input event codes (linux/input-event-codes.h) of the mouse buttons.
constexpr std::uint32_t kButtonLeft = 0x110;
constexpr std::uint32_t kButtonRight = 0x111;
constexpr std::uint32_t kButtonMiddle = 0x112;
// One wheel notch, in the axis units libinput reports for a mouse wheel (degrees).
constexpr int kNotchValue = 15;
constexpr std::uint32_t kKeymapFormatXkbV1 = 1;  // wl_keyboard.keymap_format.xkb_v1

std::uint32_t evdevButton(MouseButton button) {
    switch (button) {
        case MouseButton::Left:
            return kButtonLeft;
        case MouseButton::Middle:
            return kButtonMiddle;
        case MouseButton::Right:
            return kButtonRight;
    }
    return kButtonLeft;
}

std::uint32_t nowMs() {
    return static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
}

}  // namespace

Result<std::unique_ptr<WaylandInput>> WaylandInput::create(WaylandConnection& connection,
                                                           wl_output* output) {
    const std::string where = "the Wayland compositor at " + connection.name();
    if (connection.pointerManager() == nullptr) {
        return Status::unsupported("desktop: " + where +
                                   " offers no zwlr_virtual_pointer_manager_v1, so Iris cannot "
                                   "move the pointer (GNOME and KDE need the portal path, which "
                                   "Iris does not have yet)");
    }
    if (zwlr_virtual_pointer_manager_v1_get_version(connection.pointerManager()) < 2) {
        return Status::unsupported("desktop: " + where +
                                   " offers zwlr_virtual_pointer_manager_v1 version 1; Iris needs "
                                   "version 2 (pointers bound to an output)");
    }
    if (connection.keyboardManager() == nullptr || connection.seat() == nullptr) {
        return Status::unsupported("desktop: " + where +
                                   " offers no zwp_virtual_keyboard_manager_v1 (or no seat), so "
                                   "Iris cannot type");
    }
    std::unique_ptr<WaylandInput> input(new WaylandInput(connection));
    input->m_pointer = zwlr_virtual_pointer_manager_v1_create_virtual_pointer_with_output(
        connection.pointerManager(), connection.seat(), output);
    input->m_keyboard = zwp_virtual_keyboard_manager_v1_create_virtual_keyboard(
        connection.keyboardManager(), connection.seat());
    input->m_context = xkb_context_new(XKB_CONTEXT_NO_DEFAULT_INCLUDES);
    if (input->m_context == nullptr) return Status::internal("xkbcommon: no context");
    IRIS_RETURN_IF_ERROR(input->uploadKeymapIfChanged());
    IRIS_RETURN_IF_ERROR(input->flush("creating the virtual pointer and keyboard"));
    return input;
}

WaylandInput::~WaylandInput() {
    if (m_pointer != nullptr) zwlr_virtual_pointer_v1_destroy(m_pointer);
    if (m_keyboard != nullptr) zwp_virtual_keyboard_v1_destroy(m_keyboard);
    if (m_state != nullptr) xkb_state_unref(m_state);
    if (m_keymap != nullptr) xkb_keymap_unref(m_keymap);
    if (m_context != nullptr) xkb_context_unref(m_context);
}

Status WaylandInput::flush(std::string_view what) {
    return m_connection->roundtrip(what);
}

Status WaylandInput::uploadKeymapIfChanged() {
    if (!m_keys.changed()) return Status::ok();
    const std::string text = m_keys.text();
    // Compiled here first: a keymap the compositor rejects would end the connection.
    xkb_keymap* keymap = xkb_keymap_new_from_string(
        m_context, text.c_str(), XKB_KEYMAP_FORMAT_TEXT_V1, XKB_KEYMAP_COMPILE_NO_FLAGS);
    if (keymap == nullptr)
        return Status::internal("desktop: the generated XKB keymap does not compile");
    int fd = ::memfd_create("iris-keymap", MFD_CLOEXEC);
    const std::size_t size = text.size() + 1;  // with its terminating NUL, as compositors expect
    if (fd < 0 || ::write(fd, text.c_str(), size) != static_cast<ssize_t>(size)) {
        if (fd >= 0) ::close(fd);
        xkb_keymap_unref(keymap);
        return Status::ioError("desktop: cannot write the keymap to shared memory");
    }
    // libwayland duplicates the descriptor as it queues the request.
    zwp_virtual_keyboard_v1_keymap(m_keyboard, kKeymapFormatXkbV1, fd,
                                   static_cast<std::uint32_t>(size));
    ::close(fd);
    if (m_state != nullptr) xkb_state_unref(m_state);
    if (m_keymap != nullptr) xkb_keymap_unref(m_keymap);
    m_keymap = keymap;
    m_state = xkb_state_new(keymap);
    // Keys held across the change keep their modifiers. The compositor re-presses them on its
    // side but sends clients no modifiers with the new keymap (clients reset their state on a
    // keymap), so the modifiers are cleared and set again to make it send them.
    for (unsigned keycode : m_heldKeys)
        xkb_state_update_key(m_state, keycode, XKB_KEY_DOWN);
    if (!m_heldKeys.empty()) zwp_virtual_keyboard_v1_modifiers(m_keyboard, 0, 0, 0, 0);
    sendModifiers();
    m_keys.markUploaded();
    return Status::ok();
}

void WaylandInput::sendModifiers() {
    zwp_virtual_keyboard_v1_modifiers(
        m_keyboard, xkb_state_serialize_mods(m_state, XKB_STATE_MODS_DEPRESSED),
        xkb_state_serialize_mods(m_state, XKB_STATE_MODS_LATCHED),
        xkb_state_serialize_mods(m_state, XKB_STATE_MODS_LOCKED),
        xkb_state_serialize_layout(m_state, XKB_STATE_LAYOUT_EFFECTIVE));
}

Status WaylandInput::key(unsigned keycode, bool press) {
    // The virtual keyboard protocol takes evdev codes; the compositor does not derive the
    // modifier state from them, so it is sent after every key as a real keyboard would.
    zwp_virtual_keyboard_v1_key(
        m_keyboard, nowMs(), keycode - 8,
        press ? WL_KEYBOARD_KEY_STATE_PRESSED : WL_KEYBOARD_KEY_STATE_RELEASED);
    xkb_state_update_key(m_state, keycode, press ? XKB_KEY_DOWN : XKB_KEY_UP);
    sendModifiers();
    if (press) {
        m_heldKeys.insert(keycode);
    } else {
        m_heldKeys.erase(keycode);
    }
    return Status::ok();
}

AbsoluteMotion absoluteMotionFor(int x, int y, int width, int height, int transform) {
    auto u = [](int value) { return static_cast<std::uint32_t>(value); };
    // Each case inverts the turn wlroots applies (x' and y' as fractions of the extents).
    switch (transform) {
        case 1:  // 90
            return {u(y), u(width - x), u(height), u(width)};
        case 2:  // 180
            return {u(width - x), u(height - y), u(width), u(height)};
        case 3:  // 270
            return {u(height - y), u(x), u(height), u(width)};
        case 4:  // flipped
            return {u(width - x), u(y), u(width), u(height)};
        case 5:  // flipped 90
            return {u(y), u(x), u(height), u(width)};
        case 6:  // flipped 180
            return {u(x), u(height - y), u(width), u(height)};
        case 7:  // flipped 270
            return {u(height - y), u(width - x), u(height), u(width)};
        default:
            return {u(x), u(y), u(width), u(height)};
    }
}

Status WaylandInput::moveTo(int x, int y, int width, int height, int transform) {
    AbsoluteMotion motion = absoluteMotionFor(x, y, width, height, transform);
    zwlr_virtual_pointer_v1_motion_absolute(m_pointer, nowMs(), motion.x, motion.y, motion.xExtent,
                                            motion.yExtent);
    zwlr_virtual_pointer_v1_frame(m_pointer);
    return flush("moving the pointer");
}

Status WaylandInput::button(MouseButton which, bool press) {
    std::uint32_t code = evdevButton(which);
    zwlr_virtual_pointer_v1_button(
        m_pointer, nowMs(), code,
        press ? WL_POINTER_BUTTON_STATE_PRESSED : WL_POINTER_BUTTON_STATE_RELEASED);
    zwlr_virtual_pointer_v1_frame(m_pointer);
    if (press) {
        m_heldButtons.insert(code);
    } else {
        m_heldButtons.erase(code);
    }
    return flush(press ? "pressing a mouse button" : "releasing a mouse button");
}

Status WaylandInput::scroll(int dx, int dy) {
    // One frame per notch, as a wheel sends them.
    auto notches = [this](std::uint32_t axis, int count) {
        for (int i = 0; i < std::abs(count); ++i) {
            int sign = count > 0 ? 1 : -1;
            zwlr_virtual_pointer_v1_axis_source(m_pointer, WL_POINTER_AXIS_SOURCE_WHEEL);
            zwlr_virtual_pointer_v1_axis_discrete(m_pointer, nowMs(), axis,
                                                  wl_fixed_from_int(sign * kNotchValue), sign);
            zwlr_virtual_pointer_v1_frame(m_pointer);
        }
    };
    notches(WL_POINTER_AXIS_VERTICAL_SCROLL, dy);
    notches(WL_POINTER_AXIS_HORIZONTAL_SCROLL, dx);
    return flush("scrolling");
}

Result<std::vector<unsigned>> WaylandInput::keycodesFor(const std::vector<KeySymbol>& keysyms,
                                                        std::string_view what) {
    std::set<unsigned> keep = m_heldKeys;
    std::vector<unsigned> keycodes;
    for (KeySymbol keysym : keysyms) {
        Result<unsigned> keycode = m_keys.keycodeFor(keysym, keep);
        if (!keycode) return keycode.status().withContext(std::string(what) + ": ");
        keep.insert(*keycode);
        keycodes.push_back(*keycode);
    }
    return keycodes;
}

Status WaylandInput::typeKeycodes(const std::vector<unsigned>& keycodes) {
    IRIS_RETURN_IF_ERROR(uploadKeymapIfChanged());
    for (unsigned keycode : keycodes) {
        IRIS_RETURN_IF_ERROR(key(keycode, true));
        IRIS_RETURN_IF_ERROR(key(keycode, false));
    }
    return flush("typing");
}

Status WaylandInput::typeText(std::string_view utf8) {
    Result<std::vector<KeySymbol>> keysyms = keysymsForText(utf8);
    if (!keysyms) return keysyms.status();
    // Keys for as many characters as there are free keycodes, typed, then the next stretch.
    std::vector<unsigned> pending;
    std::set<unsigned> keep = m_heldKeys;
    for (KeySymbol keysym : *keysyms) {
        Result<unsigned> keycode = m_keys.keycodeFor(keysym, keep);
        if (!keycode && !pending.empty()) {
            IRIS_RETURN_IF_ERROR(typeKeycodes(pending));
            pending.clear();
            keep = m_heldKeys;
            keycode = m_keys.keycodeFor(keysym, keep);
        }
        if (!keycode) return keycode.status().withContext("type: ");
        keep.insert(*keycode);
        pending.push_back(*keycode);
    }
    return typeKeycodes(pending);
}

Status WaylandInput::pressKeys(const std::vector<std::string>& names) {
    if (names.empty()) return Status::invalidArgument("press: no keys given");
    std::vector<KeySymbol> keysyms;
    for (const std::string& name : names) {
        KeySymbol keysym = keysymForKeyName(name);
        if (keysym == 0) return Status::invalidArgument("press: unknown key name '" + name + "'");
        keysyms.push_back(keysym);
    }
    Result<std::vector<unsigned>> keycodes = keycodesFor(keysyms, "press");
    if (!keycodes) return keycodes.status();
    IRIS_RETURN_IF_ERROR(uploadKeymapIfChanged());
    for (unsigned keycode : *keycodes)
        IRIS_RETURN_IF_ERROR(key(keycode, true));
    for (auto it = keycodes->rbegin(); it != keycodes->rend(); ++it)
        IRIS_RETURN_IF_ERROR(key(*it, false));
    return flush("pressing keys");
}

Status WaylandInput::keyDown(std::string_view name) {
    KeySymbol keysym = keysymForKeyName(name);
    if (keysym == 0) {
        return Status::invalidArgument("key_down: unknown key name '" + std::string(name) + "'");
    }
    Result<std::vector<unsigned>> keycodes = keycodesFor({keysym}, "key_down");
    if (!keycodes) return keycodes.status();
    IRIS_RETURN_IF_ERROR(uploadKeymapIfChanged());
    IRIS_RETURN_IF_ERROR(key(keycodes->front(), true));
    return flush("pressing a key");
}

Status WaylandInput::keyUp(std::string_view name) {
    KeySymbol keysym = keysymForKeyName(name);
    if (keysym == 0) {
        return Status::invalidArgument("key_up: unknown key name '" + std::string(name) + "'");
    }
    Result<std::vector<unsigned>> keycodes = keycodesFor({keysym}, "key_up");
    if (!keycodes) return keycodes.status();
    IRIS_RETURN_IF_ERROR(uploadKeymapIfChanged());
    IRIS_RETURN_IF_ERROR(key(keycodes->front(), false));
    return flush("releasing a key");
}

Status WaylandInput::releaseAll() {
    for (unsigned keycode : std::set<unsigned>(m_heldKeys))
        IRIS_RETURN_IF_ERROR(key(keycode, false));
    for (std::uint32_t code : std::set<std::uint32_t>(m_heldButtons)) {
        zwlr_virtual_pointer_v1_button(m_pointer, nowMs(), code, WL_POINTER_BUTTON_STATE_RELEASED);
        zwlr_virtual_pointer_v1_frame(m_pointer);
    }
    m_heldButtons.clear();
    return flush("releasing held keys and buttons");
}

}  // namespace iris::agent
