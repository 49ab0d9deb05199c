#pragma once
// Synthetic pointer and keyboard input on a wlroots compositor: zwlr_virtual_pointer_v1 bound
// to one output (absolute motion in that output's physical pixels) and zwp_virtual_keyboard_v1
// with a keymap Iris generates (virtual_keymap.h) and uploads again whenever a character needs a
// key it lacks. Keymap changes and keystrokes travel in order on one connection, so a client
// reads every keystroke with the keymap it was typed with: no waiting as on X11.
// Internal to agent/env/wayland.
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/actions/action.h"
#include "agent/env/wayland/virtual_keymap.h"
#include "base/status.h"

struct wl_output;
struct xkb_context;
struct xkb_keymap;
struct xkb_state;
struct zwlr_virtual_pointer_v1;
struct zwp_virtual_keyboard_v1;

namespace iris::agent {

class WaylandConnection;

// Absolute pointer motion for a pointer bound to an output: wlroots reads it in the output's
// unrotated (mode) orientation, as a touchscreen glued to the panel reports, and turns it by the
// output's transform. The point and extents that land on (x, y) of the width x height picture
// its user sees.
struct AbsoluteMotion {
    std::uint32_t x, y, xExtent, yExtent;
};
AbsoluteMotion absoluteMotionFor(int x, int y, int width, int height, int transform);

class WaylandInput final {
public:
    // Unsupported, naming the missing protocol, when the compositor lacks either manager.
    static Result<std::unique_ptr<WaylandInput>> create(WaylandConnection& connection,
                                                        wl_output* output);
    ~WaylandInput();
    WaylandInput(const WaylandInput&) = delete;
    WaylandInput& operator=(const WaylandInput&) = delete;

    // (x, y) of a width x height output, in its physical pixels as its user sees it; `transform`
    // is the output's wl_output transform.
    Status moveTo(int x, int y, int width, int height, int transform);
    Status button(MouseButton button, bool press);
    // Wheel notches: positive dy scrolls down (towards the end), positive dx right.
    Status scroll(int dx, int dy);

    Status typeText(std::string_view utf8);
    // Pressed in order, released in reverse. Unknown names fail before any key is pressed.
    Status pressKeys(const std::vector<std::string>& names);
    Status keyDown(std::string_view name);
    Status keyUp(std::string_view name);
    // Releases every key and button held down (after KeyDown or MouseDown).
    Status releaseAll();

private:
    explicit WaylandInput(WaylandConnection& connection) : m_connection(&connection) {}
    Status uploadKeymapIfChanged();
    Status key(unsigned keycode, bool press);
    void sendModifiers();
    Result<std::vector<unsigned>> keycodesFor(const std::vector<KeySymbol>& keysyms,
                                              std::string_view what);
    Status typeKeycodes(const std::vector<unsigned>& keycodes);
    Status flush(std::string_view what);

    WaylandConnection* m_connection;
    zwlr_virtual_pointer_v1* m_pointer = nullptr;
    zwp_virtual_keyboard_v1* m_keyboard = nullptr;
    xkb_context* m_context = nullptr;
    xkb_keymap* m_keymap = nullptr;
    xkb_state* m_state = nullptr;  // our own view of the modifiers, sent with every key
    VirtualKeymap m_keys;
    std::set<unsigned> m_heldKeys;
    std::set<unsigned> m_heldButtons;  // evdev button codes
};

}  // namespace iris::agent
