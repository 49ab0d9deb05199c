#pragma once
// The agent's desktop on a Wayland compositor of the wlroots family (sway, Hyprland, river,
// labwc): screenshots with ext-image-copy-capture-v1 or zwlr_screencopy_manager_v1, input with
// zwlr_virtual_pointer_v1 and zwp_virtual_keyboard_v1, the focused window's title from
// zwlr_foreign_toplevel_manager_v1, on an existing compositor or on a private headless sway it
// starts itself. The same Environment as the X11 desktop (agent/env/desktop); not thread-safe.
//
// Coordinate frame, one output (chosen, or the only one): an observation is that output in its
// physical pixels as its user sees them (the mode, rotated by the output's transform; a scale-2
// output of 640x400 logical pixels is a 1280x800 image), shrunk by observationScale. A click at
// device pixel (x, y) of the output lands at logical position (x, y) * logical size / pixel size
// inside it: (x / 2, y / 2) at scale 2, exactly, since pointer motion carries fractions. Device
// pixels are the output's own, so an observation's origin is (0, 0) whichever output it shows.
//
// The whole desktop (no output chosen, several outputs): one picture of the compositor's logical
// layout, its bounding box drawn at the pixel density of the densest output, so that no output
// loses a pixel: device pixel (x, y) is logical position (left + x / d, top + y / d), where d is
// that density (2 with a scale-2 output beside a scale-1 one). The densest outputs appear
// pixel for pixel; the others are enlarged by nearest-neighbour sampling (each pixel of a scale-1
// output beside a scale-2 one becomes 2x2), and what lies between outputs is black. A click at
// (x, y) lands at that logical position on whichever output holds it; the pointer is not bound to
// an output, so the compositor reads it in layout coordinates. The outputs are those there at
// connection (or reset()); one that goes fails the step naming it, as a chosen one does, and so
// does one plugged in (it would move the layout the pointer is mapped over).
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/env/desktop/monitor.h"
#include "agent/environment.h"

namespace iris::agent {

class ChildProcess;
class SwayCompositor;
class WaylandConnection;
class WaylandInput;
struct WaylandOutput;

struct WaylandDesktopOptions {
    // The compositor's socket: a name in $XDG_RUNTIME_DIR ("wayland-1") or an absolute path;
    // empty: $WAYLAND_DISPLAY. Ignored when privateCompositor is set.
    std::string display;
    // Start a private headless sway with `outputs` outputs of width x height physical pixels at
    // `scale`, side by side.
    bool privateCompositor = false;
    int width = 1920;
    int height = 1080;
    double scale = 1.0;
    int outputs = 1;
    // The output to observe and act on, left to right (0 = leftmost); nullopt: the whole desktop
    // (every output in one picture; the output itself when there is one).
    std::optional<int> output;
    // Screenshot size / device size, in (0, 1] (as DesktopOptions::observationScale).
    double observationScale = 1.0;
    // Started on creation and restarted by reset(), with $WAYLAND_DISPLAY set; no shell.
    std::vector<std::string> startCommand;
    // observe() waits until this long after the last action, for the screen to catch up.
    std::chrono::milliseconds settleTime{250};
};

class WaylandDesktopEnvironment final : public Environment {
public:
    // Connects to (or starts) the compositor, checks that it offers screen copies and virtual
    // input (Unsupported naming what is missing), then runs the start command.
    static Result<std::unique_ptr<WaylandDesktopEnvironment>> create(
        const WaylandDesktopOptions& options);
    ~WaylandDesktopEnvironment() override;
    WaylandDesktopEnvironment(const WaylandDesktopEnvironment&) = delete;
    WaylandDesktopEnvironment& operator=(const WaylandDesktopEnvironment&) = delete;

    // Releases held keys and buttons, stops the start command, reconnects (a private compositor
    // is replaced by a fresh one), then starts the command again.
    Status reset() override;
    // IoError naming the output once it is gone (unplugged, disabled) or the compositor is.
    Result<Observation> observe() override;
    // As DesktopEnvironment::execute.
    ActionResult execute(const Action& action) override;
    // "desktop:wayland wayland-1 HEADLESS-1, capture wlr-screencopy", "... HEADLESS-1 (private),
    // capture ...".
    std::string describe() const override;

    // The socket connected to (an absolute path for a private compositor).
    const std::string& displayName() const { return m_displayName; }
    // The observed output's name ("HEADLESS-1"; the whole desktop: the names joined by '+') and
    // the observation's size in device pixels.
    const std::string& outputName() const { return m_outputName; }
    const Monitor& observedArea() const { return m_area; }
    // Whether observations show the whole desktop of several outputs (see the frame above).
    bool observesWholeDesktop() const { return m_outputGlobals.size() > 1; }
    // The private compositor, for tests (nullptr on an existing one).
    SwayCompositor* privateCompositor() const { return m_private.get(); }

private:
    explicit WaylandDesktopEnvironment(WaylandDesktopOptions options);
    Status connect();
    Status startCommand();
    void disconnect();
    // The observed outputs as they are now; IoError naming one that is gone. Updates the frame.
    Result<std::vector<const WaylandOutput*>> currentOutputs(const char* what);
    Status placeOutputs(const std::vector<const WaylandOutput*>& outputs);
    Result<cv::Mat> captureDesktop(const std::vector<const WaylandOutput*>& outputs);
    Result<Point> toDevice(Point point, const char* what) const;
    Status pointerTo(const std::optional<Point>& point, const char* what);
    Status moveTo(Point device);
    Status click(MouseButton button, int count);
    Status drag(const Drag& drag);
    Status run(const Action& action);

    WaylandDesktopOptions m_options;
    std::unique_ptr<SwayCompositor> m_private;
    std::unique_ptr<WaylandConnection> m_connection;
    std::unique_ptr<WaylandInput> m_input;
    std::unique_ptr<ChildProcess> m_command;
    std::string m_displayName;
    std::string m_outputName;
    std::string m_lost;  // why the connection was dropped, for every step after that
    std::vector<std::uint32_t> m_outputGlobals;  // the observed outputs, left to right
    Monitor m_area;                              // the observation, device pixels
    std::vector<Monitor> m_places;  // the whole desktop: where each output is in the picture
    int m_transform = 0;            // one output: its wl_output transform; the whole desktop: 0
    Point m_pointer;                // where this environment last put the pointer, device pixels
    std::chrono::steady_clock::time_point m_lastAction{};
};

}  // namespace iris::agent
