#pragma once
// Synthetic pointer and keyboard input through XTest on one connection. Internal to
// agent/env/desktop. Characters without a key in the current keymap are typed by borrowing a
// keycode that has no symbols: it stays mapped until releaseAll() (or until it is recycled for
// another character), because clients read a changed keymap only when they next look up a key,
// and restoring it right after the keystroke races with them.
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/env/desktop/key_names.h"
#include "agent/env/desktop/x_connection.h"
#include "base/status.h"

namespace iris::agent {

class XInput final {
public:
    // Unsupported when the server lacks the XTEST extension.
    static Result<XInput> create(XConnection& connection);

    Status moveTo(int x, int y);
    // X button numbers: 1 left, 2 middle, 3 right, 4/5 wheel up/down, 6/7 wheel left/right.
    Status button(unsigned button, bool press);

    Status typeText(std::string_view utf8);
    // Pressed in order, released in reverse. Unknown names fail before any key is pressed.
    Status pressKeys(const std::vector<std::string>& names);
    Status keyDown(std::string_view name);
    Status keyUp(std::string_view name);

    // Releases every key and button this object holds down (after KeyDown or MouseDown) and
    // restores borrowed keycodes to no symbols.
    Status releaseAll();

private:
    struct Stroke {
        unsigned keycode = 0;
        bool shift = false;  // the keysym sits on the shifted level
    };

    explicit XInput(XConnection& connection) : m_connection(&connection) {}
    Status loadKeymap();
    Result<Stroke> strokeFor(KeySymbol keysym, std::string_view what);
    Status key(unsigned keycode, bool press);
    Status tap(const Stroke& stroke, bool release = true);
    Status mapKeycode(unsigned keycode, KeySymbol keysym);
    Status settleMapping();
    Status typeStrokes(std::vector<Stroke>& strokes);
    Status restoreBorrowed();

    XConnection* m_connection;
    int m_minKeycode = 8;
    int m_maxKeycode = 255;
    int m_symbolsPerKeycode = 0;
    std::vector<KeySymbol> m_keymap;   // the server's core keymap, m_symbolsPerKeycode per key
    std::vector<unsigned> m_borrowed;  // keycodes mapped by this object, least recently used first
    std::set<unsigned> m_pinned;       // borrowed keycodes the current call still has to press
    bool m_mappedSinceSettle = false;
    std::set<unsigned> m_heldKeys;
    std::set<unsigned> m_heldButtons;
};

}  // namespace iris::agent
