#pragma once
// The agent's mouse and keyboard actions as RemoteDesktop portal calls on the shared streams:
// absolute pointer motion in the logical coordinates of the stream under the point, evdev
// buttons, discrete wheel steps, and keysyms (the compositor picks keycodes and modifiers for
// them: keysym 0x01000000 + code point above Latin-1). GNOME and KDE type only the keysyms of
// the keyboard layout, so text beyond printable ASCII is pasted through the desktop's
// clipboard where the session has it (PortalClient::clipboardEnabled).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/actions/action.h"
#include "agent/env/desktop/monitor.h"
#include "agent/env/portal/portal_client.h"
#include "base/status.h"

namespace iris::agent {

// A shared monitor as observations show it: its stream, and the rectangle of observation
// pixels its frame fills (the stream's logical size times the pixels per logical unit).
struct PortalScreen {
    PortalStream stream;
    Monitor place;
};

class PortalInput {
public:
    // A point of the observation goes to the screen whose place holds it. The client must
    // outlive this.
    PortalInput(PortalClient& client, std::vector<PortalScreen> screens);
    // One screen filling the observation: `pixelsPerUnit` observation pixels per logical unit
    // of the stream (2 when the observation is the stream's frame at scale 2).
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
    Status typeKeysyms(std::u32string_view text);
    Status paste(std::u32string_view text);
    Status key(const std::string& name, bool pressed);
    Status pressKeys(const std::vector<std::string>& keys);

    PortalClient& m_client;
    std::vector<PortalScreen> m_screens;
    std::optional<Point> m_pointer;  // in observation pixels, once moved
};

}  // namespace iris::agent
