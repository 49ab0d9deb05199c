#pragma once
// One libwayland-client connection to a compositor: its globals, its outputs (with their names,
// modes, scales, transforms and logical places from xdg-output), its windows' titles (wlroots'
// foreign-toplevel protocol) and screen copies into shared-memory buffers through
// ext-image-copy-capture-v1 or, where that is missing, zwlr_screencopy_manager_v1. Protocol
// errors and a lost connection come back as Status. Internal to agent/env/wayland.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "base/status.h"

struct wl_display;
struct wl_registry;
struct wl_output;
struct wl_seat;
struct wl_shm;
struct zxdg_output_manager_v1;
struct zxdg_output_v1;
struct zwlr_screencopy_manager_v1;
struct zwlr_foreign_toplevel_manager_v1;
struct zwlr_foreign_toplevel_handle_v1;
struct ext_image_copy_capture_manager_v1;
struct ext_output_image_capture_source_manager_v1;
struct zwlr_virtual_pointer_manager_v1;
struct zwp_virtual_keyboard_manager_v1;

namespace iris::agent {

struct WaylandOutput {
    std::uint32_t globalName = 0;
    wl_output* output = nullptr;
    zxdg_output_v1* xdgOutput = nullptr;
    std::string name;   // "HEADLESS-1", "DP-1"
    int modeWidth = 0;  // the current mode, physical pixels, before the transform
    int modeHeight = 0;
    int scale = 1;      // wl_output's integer scale (a fractional one is rounded up)
    int transform = 0;  // wl_output transform, 0..7
    int logicalX = 0, logicalY = 0, logicalWidth = 0, logicalHeight = 0;  // from xdg-output
    bool gone = false;  // its global was removed (unplugged, disabled)

    // The output as its user sees it, in physical pixels: the mode, rotated by the transform.
    int pixelWidth() const { return transform % 2 == 1 ? modeHeight : modeWidth; }
    int pixelHeight() const { return transform % 2 == 1 ? modeWidth : modeHeight; }
};

// A window as the foreign-toplevel protocol describes it, as of its last `done` event.
struct WaylandToplevel {
    zwlr_foreign_toplevel_handle_v1* handle = nullptr;
    std::string title;
    std::string appId;
    bool activated = false;  // it has the keyboard focus
    // What the compositor sent since its last `done`, applied all at once by `done`.
    std::string pendingTitle, pendingAppId;
    bool pendingActivated = false;
};

// The protocol screen copies go through.
enum class CaptureProtocol { None, ExtImageCopyCapture, WlrScreencopy };

class WaylandConnection final {
public:
    // `display`: a socket name in $XDG_RUNTIME_DIR ("wayland-1") or an absolute path; empty:
    // $WAYLAND_DISPLAY.
    static Result<std::unique_ptr<WaylandConnection>> open(const std::string& display);
    ~WaylandConnection();
    WaylandConnection(const WaylandConnection&) = delete;
    WaylandConnection& operator=(const WaylandConnection&) = delete;

    wl_display* display() const { return m_display; }
    const std::string& name() const { return m_name; }
    wl_seat* seat() const { return m_seat; }
    zwlr_virtual_pointer_manager_v1* pointerManager() const { return m_pointerManager; }
    zwp_virtual_keyboard_manager_v1* keyboardManager() const { return m_keyboardManager; }
    // Interface names of every global the compositor offers.
    const std::vector<std::string>& interfaces() const { return m_interfaces; }
    bool offers(std::string_view interface) const;

    // Sends what is queued and handles every event the compositor has sent in reply.
    Status roundtrip(std::string_view what);
    // Dispatches events until `done` holds, the connection fails or `timeout` passes.
    Status dispatchUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout,
                         std::string_view what);

    // Outputs that are still there, left to right (then top to bottom), each fully described.
    std::vector<const WaylandOutput*> outputs() const;
    // Waits until at least `count` outputs are described (a compositor just started creates
    // its outputs after it opens its socket).
    Status waitForOutputs(std::size_t count, std::chrono::milliseconds timeout);
    // The output with this global name, also once it is gone; nullptr if never seen.
    const WaylandOutput* outputByGlobal(std::uint32_t globalName) const;

    // Unsupported, naming what is missing when screen copies are impossible.
    Status requireScreenCopy() const;
    // ext-image-copy-capture-v1 where the compositor offers it (the protocol wayland-protocols
    // standardised; wlroots 0.19 and later, and other compositors), else wlr-screencopy.
    CaptureProtocol captureProtocol() const;
    // The output's current picture as BGR, physical pixels, transform applied (what its user
    // sees), with the pointer drawn in. IoError naming the output when it is gone or the compositor
    // refuses the copy.
    Result<cv::Mat> capture(const WaylandOutput& output);

    // The title of the window that has the keyboard focus, as of the events handled so far
    // (roundtrip() first for the latest); empty when none has it or the compositor does not say
    // (it lists windows through zwlr_foreign_toplevel_manager_v1).
    std::string activeWindowTitle() const;

private:
    WaylandConnection(wl_display* display, std::string name);
    Status bindGlobals();
    void describeOutput(WaylandOutput& output);
    Status connectionError(std::string_view what) const;
    // The two capture paths (wayland_capture.cpp).
    Result<cv::Mat> captureWithImageCopy(const WaylandOutput& output, const std::string& what);
    Result<cv::Mat> captureWithScreencopy(const WaylandOutput& output, const std::string& what);

    friend struct RegistryEvents;
    friend struct OutputEvents;
    friend struct ToplevelEvents;

    wl_display* m_display;
    std::string m_name;
    wl_registry* m_registry = nullptr;
    wl_seat* m_seat = nullptr;
    wl_shm* m_shm = nullptr;
    zxdg_output_manager_v1* m_xdgOutputManager = nullptr;
    zwlr_screencopy_manager_v1* m_screencopy = nullptr;
    zwlr_virtual_pointer_manager_v1* m_pointerManager = nullptr;
    zwp_virtual_keyboard_manager_v1* m_keyboardManager = nullptr;
    ext_output_image_capture_source_manager_v1* m_outputSources = nullptr;
    ext_image_copy_capture_manager_v1* m_imageCopy = nullptr;
    zwlr_foreign_toplevel_manager_v1* m_toplevelManager = nullptr;
    std::vector<std::string> m_interfaces;
    std::vector<std::unique_ptr<WaylandOutput>> m_outputs;
    std::vector<std::unique_ptr<WaylandToplevel>> m_toplevels;
};

}  // namespace iris::agent
