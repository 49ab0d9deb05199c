#include "agent/env/portal/portal_input.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <type_traits>
#include <utility>

#include "agent/env/desktop/key_names.h"
#include "base/utf8.h"

namespace iris::agent {
namespace {

// A drag moves in steps so that applications that track motion between press and release
// (sliders, selections) see it, as the X11 environment does.
constexpr int kDragSteps = 8;
// After the session's first pointer motion, before anything else.
constexpr std::chrono::milliseconds kFirstPointerSettle{200};

int evdevButton(MouseButton button) {
    switch (button) {
        case MouseButton::Right:
            return kEvdevButtonRight;
        case MouseButton::Middle:
            return kEvdevButtonMiddle;
        case MouseButton::Left:
            break;
    }
    return kEvdevButtonLeft;
}

}  // namespace

PortalInput::PortalInput(PortalClient& client, std::vector<PortalScreen> screens)
    : m_client(client), m_screens(std::move(screens)) {}

PortalInput::PortalInput(PortalClient& client, PortalStream stream, double pixelsPerUnit)
    : PortalInput(client, {{stream,
                            {0, 0, static_cast<int>(std::lround(stream.width * pixelsPerUnit)),
                             static_cast<int>(std::lround(stream.height * pixelsPerUnit))}}}) {}

Status PortalInput::moveTo(Point p) {
    for (const PortalScreen& screen : m_screens) {
        const Monitor& place = screen.place;
        if (p.x < place.x || p.y < place.y || p.x >= place.x + place.width ||
            p.y >= place.y + place.height) {
            continue;
        }
        // Observation pixels to the stream's logical units, by the ratio of the two sizes.
        const double x = (p.x - place.x) * screen.stream.width / place.width;
        const double y = (p.y - place.y) * screen.stream.height / place.height;
        IRIS_RETURN_IF_ERROR(m_client.pointerMotionAbsolute(screen.stream.nodeId, x, y));
        // A desktop with no mouse attached (a virtual machine, a headless session) gains a
        // pointer only now: applications bind it when the seat announces it, and a button sent
        // before that is lost (seen on a headless GNOME 43: the first click of every session).
        if (!m_pointer) std::this_thread::sleep_for(kFirstPointerSettle);
        m_pointer = p;
        return Status::ok();
    }
    const std::string point = "pointer (" + std::to_string(p.x) + ", " + std::to_string(p.y) + ")";
    if (m_screens.size() == 1) {
        const Monitor& place = m_screens.front().place;
        return Status::outOfRange(point + " is outside the shared screen of " +
                                  std::to_string(place.width) + "x" + std::to_string(place.height) +
                                  " pixels");
    }
    return Status::outOfRange(point + " is on none of the " + std::to_string(m_screens.size()) +
                              " shared monitors (outside them, or between them)");
}

Status PortalInput::pointerTo(const std::optional<Point>& at) {
    return at ? moveTo(*at) : Status::ok();
}

Status PortalInput::click(int button, int count) {
    for (int i = 0; i < count; ++i) {
        IRIS_RETURN_IF_ERROR(m_client.pointerButton(button, true));
        IRIS_RETURN_IF_ERROR(m_client.pointerButton(button, false));
    }
    return Status::ok();
}

Status PortalInput::drag(const Drag& drag) {
    IRIS_RETURN_IF_ERROR(pointerTo(drag.from));
    if (!m_pointer) {
        return Status::invalidArgument("drag: no start point and the pointer was never moved");
    }
    const Point start = *m_pointer;
    const int button = evdevButton(drag.button);
    IRIS_RETURN_IF_ERROR(m_client.pointerButton(button, true));
    Status status = Status::ok();
    for (int step = 1; step <= kDragSteps && status.isOk(); ++step) {
        double t = static_cast<double>(step) / kDragSteps;
        status = moveTo({start.x + (drag.to.x - start.x) * t, start.y + (drag.to.y - start.y) * t});
    }
    Status released = m_client.pointerButton(button, false);
    return status.isOk() ? released : status;
}

Status PortalInput::scroll(const Scroll& scroll) {
    IRIS_RETURN_IF_ERROR(pointerTo(scroll.at));
    // Positive steps scroll the content down / right, like the action's dy / dx.
    if (scroll.dy != 0) {
        IRIS_RETURN_IF_ERROR(m_client.pointerAxisDiscrete(ScrollAxis::Vertical, scroll.dy));
    }
    if (scroll.dx != 0) {
        IRIS_RETURN_IF_ERROR(m_client.pointerAxisDiscrete(ScrollAxis::Horizontal, scroll.dx));
    }
    return Status::ok();
}

Status PortalInput::typeKeysyms(std::u32string_view text) {
    for (char32_t c : text) {
        KeySymbol keysym = keysymForCodePoint(c);
        if (keysym == 0) continue;  // control characters other than newline and tab
        IRIS_RETURN_IF_ERROR(m_client.keyboardKeysym(static_cast<std::uint32_t>(keysym), true));
        IRIS_RETURN_IF_ERROR(m_client.keyboardKeysym(static_cast<std::uint32_t>(keysym), false));
    }
    return Status::ok();
}

Status PortalInput::paste(std::u32string_view text) {
    std::string bytes;
    for (char32_t c : text)
        utf8::append(bytes, c);
    IRIS_RETURN_IF_ERROR(m_client.offerClipboardText(bytes));
    Status pressed = pressKeys({"ctrl", "v"});
    Status served = m_client.waitForClipboardRequest();  // also when the key failed: it forgets
    return pressed.isOk() ? served : pressed;
}

Status PortalInput::typeText(const std::string& text) {
    auto codePoints = utf8::decode(text);
    if (!codePoints) return codePoints.status().withContext("type: ");
    // GNOME and KDE drop the keysyms their keyboard layout lacks, so with the desktop's
    // clipboard shared, a run of text beyond printable ASCII is pasted. Newline and tab stay
    // keys between the runs: Return submits a form, Tab moves the focus; pasted, they would not.
    auto anyLayoutTypes = [](char32_t c) { return c >= 0x20 && c < 0x7f; };
    std::u32string_view rest = *codePoints;
    while (!rest.empty()) {
        std::size_t end = rest.find_first_of(U"\n\t");
        const std::u32string_view run = rest.substr(0, end);
        if (m_client.clipboardEnabled() && !std::all_of(run.begin(), run.end(), anyLayoutTypes)) {
            IRIS_RETURN_IF_ERROR(paste(run).withContext("type: "));
        } else {
            IRIS_RETURN_IF_ERROR(typeKeysyms(run));
        }
        if (end == std::u32string_view::npos) break;
        IRIS_RETURN_IF_ERROR(typeKeysyms(rest.substr(end, 1)));
        rest.remove_prefix(end + 1);
    }
    return Status::ok();
}

Status PortalInput::key(const std::string& name, bool pressed) {
    KeySymbol keysym = keysymForKeyName(name);
    if (keysym == 0) return Status::invalidArgument("key: unknown key name \"" + name + "\"");
    return m_client.keyboardKeysym(static_cast<std::uint32_t>(keysym), pressed);
}

Status PortalInput::pressKeys(const std::vector<std::string>& keys) {
    for (const auto& name : keys) {  // check all names before pressing any
        if (keysymForKeyName(name) == 0) {
            return Status::invalidArgument("hotkey: unknown key name \"" + name + "\"");
        }
    }
    std::size_t pressed = 0;
    Status status = Status::ok();
    for (; pressed < keys.size() && status.isOk(); ++pressed)
        status = key(keys[pressed], true);
    // Release in reverse whatever went down, even after an error, so no modifier stays held.
    for (std::size_t i = pressed; i-- > 0;) {
        Status released = key(keys[i], false);
        if (status.isOk()) status = released;
    }
    return status;
}

Status PortalInput::execute(const Action& action) {
    return std::visit(
        [this](const auto& a) -> Status {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, Click>) {
                if (a.count < 1 || a.count > 3) {
                    return Status::invalidArgument("click: count must be 1, 2 or 3, not " +
                                                   std::to_string(a.count));
                }
                IRIS_RETURN_IF_ERROR(pointerTo(a.at));
                return click(evdevButton(a.button), a.count);
            } else if constexpr (std::is_same_v<T, MoveTo>) {
                return moveTo(a.to);
            } else if constexpr (std::is_same_v<T, MouseDown>) {
                return m_client.pointerButton(evdevButton(a.button), true);
            } else if constexpr (std::is_same_v<T, MouseUp>) {
                return m_client.pointerButton(evdevButton(a.button), false);
            } else if constexpr (std::is_same_v<T, Drag>) {
                return drag(a);
            } else if constexpr (std::is_same_v<T, Scroll>) {
                return scroll(a);
            } else if constexpr (std::is_same_v<T, TypeText>) {
                return typeText(a.text);
            } else if constexpr (std::is_same_v<T, PressKeys>) {
                return pressKeys(a.keys);
            } else if constexpr (std::is_same_v<T, KeyDown>) {
                return key(a.key, true);
            } else if constexpr (std::is_same_v<T, KeyUp>) {
                return key(a.key, false);
            } else {
                return Status::unsupported(std::string(actionName(a)) +
                                           ": not an input action of the portal desktop");
            }
        },
        action);
}

}  // namespace iris::agent
