#include "agent/env/wayland/wayland_connection.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <poll.h>
#include <unistd.h>
#include <wayland-client.h>

#include "ext-image-capture-source-v1-client-protocol.h"
#include "ext-image-copy-capture-v1-client-protocol.h"
#include "virtual-keyboard-unstable-v1-client-protocol.h"
#include "wlr-foreign-toplevel-management-unstable-v1-client-protocol.h"
#include "wlr-screencopy-unstable-v1-client-protocol.h"
#include "wlr-virtual-pointer-unstable-v1-client-protocol.h"
#include "xdg-output-unstable-v1-client-protocol.h"

namespace iris::agent {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kRoundtripTimeout{10000};

template <typename T>
T* bind(wl_registry* registry, std::uint32_t name, const wl_interface* interface,
        std::uint32_t offered, std::uint32_t wanted) {
    return static_cast<T*>(wl_registry_bind(registry, name, interface, std::min(offered, wanted)));
}

}  // namespace

struct OutputEvents {
    static WaylandOutput& of(void* data) { return *static_cast<WaylandOutput*>(data); }
    static constexpr wl_output_listener kOutput = {
        .geometry = [](void* data, wl_output*, std::int32_t, std::int32_t, std::int32_t,
                       std::int32_t, std::int32_t, const char*, const char*,
                       std::int32_t transform) { of(data).transform = transform; },
        .mode =
            [](void* data, wl_output*, std::uint32_t flags, std::int32_t width, std::int32_t height,
               std::int32_t) {
                if ((flags & WL_OUTPUT_MODE_CURRENT) == 0) return;
                of(data).modeWidth = width;
                of(data).modeHeight = height;
            },
        .done = [](void*, wl_output*) {},
        .scale = [](void* data, wl_output*, std::int32_t scale) { of(data).scale = scale; },
        .name = [](void*, wl_output*, const char*) {},
        .description = [](void*, wl_output*, const char*) {},
    };
    static constexpr zxdg_output_v1_listener kXdgOutput = {
        .logical_position =
            [](void* data, zxdg_output_v1*, std::int32_t x, std::int32_t y) {
                of(data).logicalX = x;
                of(data).logicalY = y;
            },
        .logical_size =
            [](void* data, zxdg_output_v1*, std::int32_t width, std::int32_t height) {
                of(data).logicalWidth = width;
                of(data).logicalHeight = height;
            },
        .done = [](void*, zxdg_output_v1*) {},
        .name = [](void* data, zxdg_output_v1*, const char* name) { of(data).name = name; },
        .description = [](void*, zxdg_output_v1*, const char*) {},
    };
};

// wlroots' foreign-toplevel protocol: a handle per window, whose title, app id and state arrive
// as pending values that its `done` event applies.
struct ToplevelEvents {
    static WaylandToplevel& of(void* data) { return *static_cast<WaylandToplevel*>(data); }
    static constexpr zwlr_foreign_toplevel_handle_v1_listener kHandle = {
        .title = [](void* data, zwlr_foreign_toplevel_handle_v1*,
                    const char* title) { of(data).pendingTitle = title; },
        .app_id = [](void* data, zwlr_foreign_toplevel_handle_v1*,
                     const char* appId) { of(data).pendingAppId = appId; },
        .output_enter = [](void*, zwlr_foreign_toplevel_handle_v1*, wl_output*) {},
        .output_leave = [](void*, zwlr_foreign_toplevel_handle_v1*, wl_output*) {},
        .state =
            [](void* data, zwlr_foreign_toplevel_handle_v1*, wl_array* states) {
                bool activated = false;
                const auto* state = static_cast<const std::uint32_t*>(states->data);
                for (std::size_t i = 0; i < states->size / sizeof(std::uint32_t); ++i)
                    activated |= state[i] == ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED;
                of(data).pendingActivated = activated;
            },
        .done =
            [](void* data, zwlr_foreign_toplevel_handle_v1*) {
                WaylandToplevel& toplevel = of(data);
                toplevel.title = toplevel.pendingTitle;
                toplevel.appId = toplevel.pendingAppId;
                toplevel.activated = toplevel.pendingActivated;
            },
        .closed =
            [](void* data, zwlr_foreign_toplevel_handle_v1* handle) {
                // Dropped from the list when the next window arrives (the list is the
                // connection's, and this event knows only the window).
                zwlr_foreign_toplevel_handle_v1_destroy(handle);
                of(data) = WaylandToplevel{};
            },
        .parent = [](void*, zwlr_foreign_toplevel_handle_v1*, zwlr_foreign_toplevel_handle_v1*) {},
    };
    static constexpr zwlr_foreign_toplevel_manager_v1_listener kManager = {
        .toplevel =
            [](void* data, zwlr_foreign_toplevel_manager_v1*,
               zwlr_foreign_toplevel_handle_v1* handle) {
                auto& toplevels = static_cast<WaylandConnection*>(data)->m_toplevels;
                std::erase_if(toplevels, [](const auto& t) { return t->handle == nullptr; });
                toplevels.push_back(std::make_unique<WaylandToplevel>());
                toplevels.back()->handle = handle;
                zwlr_foreign_toplevel_handle_v1_add_listener(handle, &kHandle,
                                                             toplevels.back().get());
            },
        .finished =
            [](void* data, zwlr_foreign_toplevel_manager_v1* manager) {
                // The compositor no longer lists windows (it is going away).
                auto& self = *static_cast<WaylandConnection*>(data);
                zwlr_foreign_toplevel_manager_v1_destroy(manager);
                self.m_toplevelManager = nullptr;
            },
    };
};

struct RegistryEvents {
    static void global(void* data, wl_registry* registry, std::uint32_t name, const char* interface,
                       std::uint32_t version) {
        auto& self = *static_cast<WaylandConnection*>(data);
        std::string_view kind = interface;
        self.m_interfaces.emplace_back(kind);
        if (kind == wl_output_interface.name) {
            auto output = std::make_unique<WaylandOutput>();
            output->globalName = name;
            // Named by xdg-output where the compositor has it (every wlroots one does).
            output->name = "wl_output " + std::to_string(name);
            output->output = bind<wl_output>(registry, name, &wl_output_interface, version, 3);
            wl_output_add_listener(output->output, &OutputEvents::kOutput, output.get());
            self.m_outputs.push_back(std::move(output));
            self.describeOutput(*self.m_outputs.back());
        } else if (kind == wl_seat_interface.name && self.m_seat == nullptr) {
            self.m_seat = bind<wl_seat>(registry, name, &wl_seat_interface, version, 1);
        } else if (kind == wl_shm_interface.name) {
            self.m_shm = bind<wl_shm>(registry, name, &wl_shm_interface, version, 1);
        } else if (kind == zxdg_output_manager_v1_interface.name) {
            self.m_xdgOutputManager = bind<zxdg_output_manager_v1>(
                registry, name, &zxdg_output_manager_v1_interface, version, 3);
        } else if (kind == zwlr_screencopy_manager_v1_interface.name) {
            self.m_screencopy = bind<zwlr_screencopy_manager_v1>(
                registry, name, &zwlr_screencopy_manager_v1_interface, version, 3);
        } else if (kind == zwlr_virtual_pointer_manager_v1_interface.name) {
            self.m_pointerManager = bind<zwlr_virtual_pointer_manager_v1>(
                registry, name, &zwlr_virtual_pointer_manager_v1_interface, version, 2);
        } else if (kind == zwp_virtual_keyboard_manager_v1_interface.name) {
            self.m_keyboardManager = bind<zwp_virtual_keyboard_manager_v1>(
                registry, name, &zwp_virtual_keyboard_manager_v1_interface, version, 1);
        } else if (kind == ext_output_image_capture_source_manager_v1_interface.name) {
            self.m_outputSources = bind<ext_output_image_capture_source_manager_v1>(
                registry, name, &ext_output_image_capture_source_manager_v1_interface, version, 1);
        } else if (kind == ext_image_copy_capture_manager_v1_interface.name) {
            self.m_imageCopy = bind<ext_image_copy_capture_manager_v1>(
                registry, name, &ext_image_copy_capture_manager_v1_interface, version, 1);
        } else if (kind == zwlr_foreign_toplevel_manager_v1_interface.name &&
                   self.m_toplevelManager == nullptr) {
            self.m_toplevelManager = bind<zwlr_foreign_toplevel_manager_v1>(
                registry, name, &zwlr_foreign_toplevel_manager_v1_interface, version, 3);
            zwlr_foreign_toplevel_manager_v1_add_listener(self.m_toplevelManager,
                                                          &ToplevelEvents::kManager, &self);
        }
    }
    static void globalRemove(void* data, wl_registry*, std::uint32_t name) {
        auto& self = *static_cast<WaylandConnection*>(data);
        for (auto& output : self.m_outputs) {
            if (output->globalName == name) output->gone = true;
        }
    }
    static constexpr wl_registry_listener kListener = {.global = global,
                                                       .global_remove = globalRemove};
};

Result<std::unique_ptr<WaylandConnection>> WaylandConnection::open(const std::string& display) {
    std::string name = display;
    if (name.empty()) {
        const char* fromEnvironment = std::getenv("WAYLAND_DISPLAY");
        if (fromEnvironment == nullptr || *fromEnvironment == '\0') {
            return Status::invalidArgument(
                "desktop: $WAYLAND_DISPLAY is not set; name a compositor's socket or use a "
                "private one (desktop:private-wayland)");
        }
        name = fromEnvironment;
    }
    wl_display* connection = wl_display_connect(name.c_str());
    if (connection == nullptr) {
        const char* runtimeDir = std::getenv("XDG_RUNTIME_DIR");
        // A bare socket name is looked up in $XDG_RUNTIME_DIR, which root shells often lack.
        std::string hint = name.front() != '/' && (runtimeDir == nullptr || *runtimeDir == '\0')
                               ? "; $XDG_RUNTIME_DIR is not set, so give the socket's full path"
                               : "";
        return Status::ioError("desktop: cannot connect to the Wayland compositor at '" + name +
                               "' (" + std::strerror(errno) + ")" + hint);
    }
    std::unique_ptr<WaylandConnection> result(new WaylandConnection(connection, name));
    IRIS_RETURN_IF_ERROR(result->bindGlobals());
    return result;
}

WaylandConnection::WaylandConnection(wl_display* display, std::string name)
    : m_display(display), m_name(std::move(name)) {}

WaylandConnection::~WaylandConnection() {
    for (auto& output : m_outputs) {
        if (output->xdgOutput != nullptr) zxdg_output_v1_destroy(output->xdgOutput);
        if (output->output != nullptr) wl_output_destroy(output->output);
    }
    for (auto& toplevel : m_toplevels) {
        if (toplevel->handle != nullptr) zwlr_foreign_toplevel_handle_v1_destroy(toplevel->handle);
    }
    if (m_toplevelManager != nullptr) {
        zwlr_foreign_toplevel_manager_v1_stop(m_toplevelManager);
        zwlr_foreign_toplevel_manager_v1_destroy(m_toplevelManager);
    }
    if (m_imageCopy != nullptr) ext_image_copy_capture_manager_v1_destroy(m_imageCopy);
    if (m_outputSources != nullptr) {
        ext_output_image_capture_source_manager_v1_destroy(m_outputSources);
    }
    if (m_screencopy != nullptr) zwlr_screencopy_manager_v1_destroy(m_screencopy);
    if (m_pointerManager != nullptr) zwlr_virtual_pointer_manager_v1_destroy(m_pointerManager);
    if (m_keyboardManager != nullptr) zwp_virtual_keyboard_manager_v1_destroy(m_keyboardManager);
    if (m_xdgOutputManager != nullptr) zxdg_output_manager_v1_destroy(m_xdgOutputManager);
    if (m_shm != nullptr) wl_shm_destroy(m_shm);
    if (m_seat != nullptr) wl_seat_destroy(m_seat);
    if (m_registry != nullptr) wl_registry_destroy(m_registry);
    wl_display_disconnect(m_display);
}

Status WaylandConnection::bindGlobals() {
    m_registry = wl_display_get_registry(m_display);
    wl_registry_add_listener(m_registry, &RegistryEvents::kListener, this);
    IRIS_RETURN_IF_ERROR(roundtrip("reading the compositor's globals"));
    // Outputs announced before the xdg-output manager get their xdg-output now.
    for (auto& output : m_outputs)
        describeOutput(*output);
    return roundtrip("reading the outputs");
}

void WaylandConnection::describeOutput(WaylandOutput& output) {
    if (m_xdgOutputManager == nullptr || output.xdgOutput != nullptr) return;
    output.xdgOutput = zxdg_output_manager_v1_get_xdg_output(m_xdgOutputManager, output.output);
    zxdg_output_v1_add_listener(output.xdgOutput, &OutputEvents::kXdgOutput, &output);
}

bool WaylandConnection::offers(std::string_view interface) const {
    return std::find(m_interfaces.begin(), m_interfaces.end(), interface) != m_interfaces.end();
}

Status WaylandConnection::connectionError(std::string_view what) const {
    int code = wl_display_get_error(m_display);
    if (code == EPROTO) {
        const wl_interface* interface = nullptr;
        std::uint32_t id = 0;
        std::uint32_t protocolCode = wl_display_get_protocol_error(m_display, &interface, &id);
        return Status::ioError(std::string(what) + ": the Wayland compositor at " + m_name +
                               " reported protocol error " + std::to_string(protocolCode) + " on " +
                               (interface != nullptr ? interface->name : "an object") + "@" +
                               std::to_string(id));
    }
    return Status::ioError(std::string(what) +
                           ": lost the connection to the Wayland compositor at " + m_name + " (" +
                           std::strerror(code != 0 ? code : EPIPE) + ")");
}

Status WaylandConnection::dispatchUntil(const std::function<bool()>& done, milliseconds timeout,
                                        std::string_view what) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
        if (wl_display_dispatch_pending(m_display) < 0) return connectionError(what);
        if (done()) return Status::ok();
        auto left =
            std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return Status::ioError(std::string(what) + ": the Wayland compositor at " + m_name +
                                   " did not answer within " + std::to_string(timeout.count()) +
                                   " ms");
        }
        if (wl_display_prepare_read(m_display) != 0) continue;  // events queued meanwhile
        if (wl_display_flush(m_display) < 0 && errno != EAGAIN) {
            wl_display_cancel_read(m_display);
            return connectionError(what);
        }
        pollfd request{wl_display_get_fd(m_display), POLLIN, 0};
        int ready = ::poll(&request, 1, static_cast<int>(std::min<long>(left.count(), 100)));
        if (ready > 0) {
            if (wl_display_read_events(m_display) < 0) return connectionError(what);
        } else {
            wl_display_cancel_read(m_display);
        }
    }
}

Status WaylandConnection::roundtrip(std::string_view what) {
    bool done = false;
    wl_callback* callback = wl_display_sync(m_display);
    static constexpr wl_callback_listener kDone = {
        .done = [](void* data, wl_callback*, std::uint32_t) { *static_cast<bool*>(data) = true; }};
    wl_callback_add_listener(callback, &kDone, &done);
    Status status = dispatchUntil([&done] { return done; }, kRoundtripTimeout, what);
    wl_callback_destroy(callback);
    return status;
}

std::vector<const WaylandOutput*> WaylandConnection::outputs() const {
    std::vector<const WaylandOutput*> result;
    for (const auto& output : m_outputs) {
        if (!output->gone && output->modeWidth > 0) result.push_back(output.get());
    }
    std::stable_sort(result.begin(), result.end(), [](const auto* a, const auto* b) {
        return std::pair(a->logicalX, a->logicalY) < std::pair(b->logicalX, b->logicalY);
    });
    return result;
}

Status WaylandConnection::waitForOutputs(std::size_t count, milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (outputs().size() < count) {
        if (std::chrono::steady_clock::now() > deadline) {
            return Status::ioError("desktop: the Wayland compositor at " + m_name + " has " +
                                   std::to_string(outputs().size()) + " output(s), not " +
                                   std::to_string(count) + ", after " +
                                   std::to_string(timeout.count()) + " ms");
        }
        IRIS_RETURN_IF_ERROR(roundtrip("waiting for outputs"));
        for (auto& output : m_outputs)
            describeOutput(*output);
        ::usleep(10000);
    }
    return Status::ok();
}

const WaylandOutput* WaylandConnection::outputByGlobal(std::uint32_t globalName) const {
    for (const auto& output : m_outputs) {
        if (output->globalName == globalName) return output.get();
    }
    return nullptr;
}

std::string WaylandConnection::activeWindowTitle() const {
    for (const auto& toplevel : m_toplevels) {
        if (toplevel->activated) return toplevel->title;
    }
    return {};
}

}  // namespace iris::agent
