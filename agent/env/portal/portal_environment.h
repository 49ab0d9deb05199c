#pragma once
// The user's own GNOME or KDE Wayland desktop as the agent's environment, through
// xdg-desktop-portal: observations are the frames of the shared monitors' PipeWire streams
// (the person may share several in the consent dialog; `monitor` picks one, counted from the
// left, else all are shown), actions are RemoteDesktop input on them (portal_client.h,
// portal_input.h, pipewire_capture.h).
//
// Coordinates, one monitor (chosen, or the only one shared): an observation is the stream's
// frame at its own pixel size (device pixels), so devicePixelRatio is 1 and `origin` is the
// monitor's position scaled to device pixels. The portal takes pointer positions in the
// monitor's logical pixels; frame pixels per logical pixel (the monitor's scale, 2 on a HiDPI
// screen) come from the first frame's width over the logical width the portal reported.
//
// Several shared monitors, none chosen: one picture of the bounding box of their logical
// places, at the pixels per logical pixel of the densest one (so none loses a pixel): the
// densest frames appear pixel for pixel, the others enlarged by nearest-neighbour sampling,
// the space between monitors black. `origin` is the box's corner in those pixels, and a point
// goes to the monitor under it, in that monitor's logical pixels.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <QDBusConnection>

#include "agent/env/portal/pipewire_capture.h"
#include "agent/env/portal/portal_client.h"
#include "agent/env/portal/portal_input.h"
#include "agent/environment.h"

namespace iris::agent {

struct PortalEnvironmentOptions {
    PortalClientOptions client;
    int firstFrameTimeoutMs = 10000;  // the compositor sends a frame as soon as the stream runs
    // observe() waits until this long after the last action, for the screen to show it: the
    // first frame after an action may come before the application has redrawn (seen on GNOME
    // with two monitors), so a new frame is no sign that the action is visible.
    int settleMs = 300;
    // Which shared monitor: 0 = the leftmost (by the logical position the portal reports, ties
    // broken by the top edge). Out of range: open() says how many were shared. nullopt: every
    // shared monitor, in one picture.
    std::optional<int> monitor;
};

class PortalEnvironment final : public Environment {
public:
    // The handshake (the consent dialog unless `tokens` holds a valid restore token), the
    // PipeWire streams of the shown monitors and their first frames. `tokens` may be null and
    // must outlive the environment.
    static Result<std::unique_ptr<PortalEnvironment>> open(QDBusConnection bus,
                                                           RestoreTokenStore* tokens,
                                                           PortalEnvironmentOptions options = {});

    Status reset() override { return Status::ok(); }  // the user's own desktop: nothing to undo
    Result<Observation> observe() override;
    ActionResult execute(const Action& action) override;
    std::string describe() const override;

    // How many shared monitors observations show.
    std::size_t monitorsShown() const { return m_screens.size(); }

private:
    PortalEnvironment() = default;
    // Places the screens in the picture from their first frames' sizes (see the frame above).
    void placeScreens(const std::vector<cv::Size>& firstFrames);

    struct Screen {
        PortalStream stream;
        std::unique_ptr<PipeWireCapture> capture;
        Monitor place;  // in the observation, device pixels
    };

    PortalEnvironmentOptions m_options;
    std::unique_ptr<PortalClient> m_client;
    std::vector<Screen> m_screens;  // left to right
    std::unique_ptr<PortalInput> m_input;
    Monitor m_area;  // the observation, device pixels
    Point m_origin;  // its top-left corner on the desktop, device pixels
    std::chrono::steady_clock::time_point m_lastAction{};
};

}  // namespace iris::agent
