#pragma once
// The user's own GNOME or KDE Wayland desktop as the agent's environment, through
// xdg-desktop-portal: observations are the frames of one shared monitor's PipeWire stream
// (the person may share several in the consent dialog; `monitor` picks one, counted from the
// left), actions are RemoteDesktop input on it (portal_client.h, portal_input.h,
// pipewire_capture.h).
//
// Coordinates: an observation is the stream's frame at its own pixel size (device pixels), so
// devicePixelRatio is 1 and `origin` is the monitor's position scaled to device pixels. The
// portal takes pointer positions in the monitor's logical pixels; frame pixels per logical
// pixel (the monitor's scale, 2 on a HiDPI screen) come from the first frame's width over the
// logical width the portal reported.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <QDBusConnection>

#include "agent/env/portal/pipewire_capture.h"
#include "agent/env/portal/portal_client.h"
#include "agent/env/portal/portal_input.h"
#include "agent/environment.h"

namespace iris::agent {

struct PortalEnvironmentOptions {
    PortalClientOptions client;
    int firstFrameTimeoutMs = 10000;  // the compositor sends a frame as soon as the stream runs
    int settleMs = 300;  // after an action, how long observe() waits for a frame showing it
    // Which shared monitor: 0 = the leftmost (by the logical position the portal reports, ties
    // broken by the top edge). Out of range: open() says how many were shared.
    int monitor = 0;
};

class PortalEnvironment final : public Environment {
public:
    // The handshake (the consent dialog unless `tokens` holds a valid restore token), the
    // PipeWire stream of the chosen shared monitor and its first frame. `tokens` may be null and
    // must outlive the environment.
    static Result<std::unique_ptr<PortalEnvironment>> open(QDBusConnection bus,
                                                           RestoreTokenStore* tokens,
                                                           PortalEnvironmentOptions options = {});

    Status reset() override { return Status::ok(); }  // the user's own desktop: nothing to undo
    Result<Observation> observe() override;
    ActionResult execute(const Action& action) override;
    std::string describe() const override;

private:
    PortalEnvironment() = default;

    PortalEnvironmentOptions m_options;
    std::unique_ptr<PortalClient> m_client;
    std::unique_ptr<PipeWireCapture> m_capture;
    std::unique_ptr<PortalInput> m_input;
    PortalStream m_stream;
    double m_pixelsPerUnit = 1.0;
    std::uint64_t m_framesAtLastAction = 0;
    bool m_actedSinceObserve = false;
};

}  // namespace iris::agent
