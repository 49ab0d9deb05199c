#pragma once
// The agent's mouse and keyboard actions as RemoteDesktop portal calls on one shared stream:
// absolute pointer motion in the stream's logical coordinates, evdev buttons, discrete wheel
// steps, and keysyms (the compositor picks keycodes and modifiers for them, so any Unicode
// character can be typed: keysym 0x01000000 + code point above Latin-1).
#include <cstdint>
#include <optional>

#include "agent/actions/action.h"
#include "agent/env/portal/portal_client.h"
#include "base/status.h"

namespace iris::agent {

class PortalInput {
public:
    // `pixelsPerUnit`: observation pixels per logical unit of the stream (2 when the
    // observation is the stream's frame at scale 2). The client must outlive this.
    PortalInput(PortalClient& client, PortalStream stream, double pixelsPerUnit = 1.0);

    // Click, MoveTo, MouseDown/Up, Drag, Scroll, TypeText, PressKeys, KeyDown/Up. Other actions
    // are Unsupported.
    Status execute(const Action& action);

private:
    Status moveTo(Point observationPoint);
    Status pointerTo(const std::optional<Point>& at);
    Status click(int button, int count);
    Status drag(const Drag& drag);
    Status scroll(const Scroll& scroll);
    Status typeText(const std::string& text);
    Status key(const std::string& name, bool pressed);
    Status pressKeys(const std::vector<std::string>& keys);

    PortalClient& m_client;
    PortalStream m_stream;
    double m_pixelsPerUnit;
    std::optional<Point> m_pointer;  // in observation pixels, once moved
};

}  // namespace iris::agent
