#include "agent/env/desktop/x_input.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "agent/env/desktop/desktop_actions.h"

namespace iris::agent {
namespace {

// Before a borrowed keycode is remapped or restored: clients fetch a changed keymap only when they
// next look a key up, so its last keystroke must have been read first (xdotool waits likewise).
constexpr std::chrono::milliseconds kRemapSettle{200};

}  // namespace

Result<XInput> XInput::create(XConnection& connection) {
    int eventBase = 0;
    int errorBase = 0;
    int major = 0;
    int minor = 0;
    if (!XTestQueryExtension(connection.display(), &eventBase, &errorBase, &major, &minor)) {
        return Status::unsupported("X display " + connection.name() +
                                   " has no XTEST extension, so input cannot be synthesised");
    }
    XInput input(connection);
    IRIS_RETURN_IF_ERROR(input.loadKeymap());
    return input;
}

Status XInput::loadKeymap() {
    Display* display = m_connection->display();
    XDisplayKeycodes(display, &m_minKeycode, &m_maxKeycode);
    int perKeycode = 0;
    KeySym* symbols = XGetKeyboardMapping(display, static_cast<KeyCode>(m_minKeycode),
                                          m_maxKeycode - m_minKeycode + 1, &perKeycode);
    IRIS_RETURN_IF_ERROR(m_connection->sync("reading the keyboard mapping"));
    if (symbols == nullptr || perKeycode <= 0) {
        return Status::internal("the X server returned an empty keyboard mapping");
    }
    m_symbolsPerKeycode = perKeycode;
    m_keymap.assign(
        symbols,
        symbols + static_cast<std::ptrdiff_t>(m_maxKeycode - m_minKeycode + 1) * perKeycode);
    XFree(symbols);
    return Status::ok();
}

Result<XInput::Stroke> XInput::strokeFor(KeySymbol keysym, std::string_view what) {
    auto columns = static_cast<std::size_t>(m_symbolsPerKeycode);
    auto at = [&](int keycode, std::size_t column) {
        return column < columns
                   ? m_keymap[static_cast<std::size_t>(keycode - m_minKeycode) * columns + column]
                   : static_cast<KeySymbol>(NoSymbol);
    };
    auto found = [&](int keycode, bool shift) {
        auto code = static_cast<unsigned>(keycode);
        auto borrowed = std::find(m_borrowed.begin(), m_borrowed.end(), code);
        if (borrowed != m_borrowed.end()) {  // now the most recently used
            m_borrowed.erase(borrowed);
            m_borrowed.push_back(code);
        }
        return Stroke{code, shift};
    };
    // Unshifted first: a keysym on level 1 of one key and level 2 of another (e.g. '<' on a
    // 102-key layout) is typed without shift.
    for (int keycode = m_minKeycode; keycode <= m_maxKeycode; ++keycode) {
        if (at(keycode, 0) == keysym) return found(keycode, false);
    }
    for (int keycode = m_minKeycode; keycode <= m_maxKeycode; ++keycode) {
        KeySymbol shifted = at(keycode, 1);
        if (shifted == NoSymbol) {  // core rule: a lone letter's shifted level is its capital
            KeySym lower = 0;
            KeySym upper = 0;
            XConvertCase(at(keycode, 0), &lower, &upper);
            if (lower != upper) shifted = upper;
        }
        if (shifted == keysym) return found(keycode, true);
    }

    // No key has it: borrow a keycode with no symbols, from the top (least likely to be a
    // physical key), or else recycle the least recently borrowed one.
    for (int keycode = m_maxKeycode; keycode >= m_minKeycode; --keycode) {
        bool empty = true;
        for (std::size_t column = 0; column < columns && empty; ++column) {
            empty = at(keycode, column) == NoSymbol;
        }
        if (!empty) continue;
        auto code = static_cast<unsigned>(keycode);
        IRIS_RETURN_IF_ERROR(mapKeycode(code, keysym));
        m_borrowed.push_back(code);
        m_mappedSinceSettle = true;
        return Stroke{code, false};
    }
    auto recyclable = std::find_if(m_borrowed.begin(), m_borrowed.end(),
                                   [&](unsigned code) { return m_heldKeys.count(code) == 0; });
    if (recyclable == m_borrowed.end()) {
        return Status::unsupported("cannot type " + std::string(what) +
                                   ": no key has it and no keycode is free to map it");
    }
    unsigned code = *recyclable;
    m_borrowed.erase(recyclable);
    std::this_thread::sleep_for(kRemapSettle);  // its last keystroke may not be read yet
    IRIS_RETURN_IF_ERROR(mapKeycode(code, keysym));
    m_borrowed.push_back(code);
    m_mappedSinceSettle = true;
    return Stroke{code, false};
}

Status XInput::mapKeycode(unsigned keycode, KeySymbol keysym) {
    auto columns = static_cast<std::size_t>(m_symbolsPerKeycode);
    std::vector<KeySym> symbols(columns, NoSymbol);
    if (keysym != NoSymbol) {
        symbols[0] = keysym;
        if (columns > 1) symbols[1] = keysym;  // the same character whatever shift says
    }
    XChangeKeyboardMapping(m_connection->display(), static_cast<int>(keycode), m_symbolsPerKeycode,
                           symbols.data(), 1);
    IRIS_RETURN_IF_ERROR(
        m_connection->sync("changing the mapping of keycode " + std::to_string(keycode)));
    std::copy(symbols.begin(), symbols.end(),
              m_keymap.begin() + static_cast<std::ptrdiff_t>(
                                     (keycode - static_cast<unsigned>(m_minKeycode)) * columns));
    return Status::ok();
}

Status XInput::restoreBorrowed() {
    if (m_borrowed.empty()) return Status::ok();
    std::this_thread::sleep_for(kRemapSettle);
    Status status;
    for (unsigned keycode : m_borrowed) {
        Status restored = mapKeycode(keycode, NoSymbol);
        if (status.isOk()) status = restored;
    }
    m_borrowed.clear();
    return status;
}

Status XInput::moveTo(int x, int y) {
    XTestFakeMotionEvent(m_connection->display(), DefaultScreen(m_connection->display()), x, y,
                         CurrentTime);
    return m_connection->sync("moving the pointer");
}

Status XInput::button(unsigned button, bool press) {
    XTestFakeButtonEvent(m_connection->display(), button, press ? True : False, CurrentTime);
    if (press) {
        m_heldButtons.insert(button);
    } else {
        m_heldButtons.erase(button);
    }
    return m_connection->sync(press ? "pressing a mouse button" : "releasing a mouse button");
}

Status XInput::key(unsigned keycode, bool press) {
    XTestFakeKeyEvent(m_connection->display(), keycode, press ? True : False, CurrentTime);
    if (press) {
        m_heldKeys.insert(keycode);
    } else {
        m_heldKeys.erase(keycode);
    }
    return m_connection->sync(press ? "pressing a key" : "releasing a key");
}

Status XInput::tap(const Stroke& stroke, bool release) {
    unsigned shift = 0;
    if (stroke.shift) {
        Result<Stroke> shiftKey = strokeFor(XK_Shift_L, "Shift");
        if (!shiftKey) return shiftKey.status();
        shift = shiftKey->keycode;
        IRIS_RETURN_IF_ERROR(key(shift, true));
    }
    Status status = key(stroke.keycode, true);
    if (status.isOk() && release) status = key(stroke.keycode, false);
    if (shift != 0) {
        Status released = key(shift, false);
        if (status.isOk()) status = released;
    }
    return status;
}

Status XInput::settleMapping() {
    // Clients read a changed keymap from the event stream; give them the time to do so before
    // the first keystroke that needs it.
    if (m_mappedSinceSettle) std::this_thread::sleep_for(kRemapSettle);
    m_mappedSinceSettle = false;
    return Status::ok();
}

Status XInput::typeStrokes(std::vector<Stroke>& strokes) {
    IRIS_RETURN_IF_ERROR(settleMapping());
    for (const Stroke& stroke : strokes)
        IRIS_RETURN_IF_ERROR(tap(stroke));
    strokes.clear();
    m_pinned.clear();
    return Status::ok();
}

Status XInput::typeText(std::string_view utf8) {
    Result<std::vector<KeySymbol>> keysyms = keysymsForText(utf8);
    if (!keysyms) return keysyms.status();
    IRIS_RETURN_IF_ERROR(loadKeymap());  // another client may have changed the layout
    // Keys are found (and keycodes borrowed) ahead of typing, so that one settle covers them all.
    std::vector<Stroke> strokes;
    m_pinned.clear();
    for (std::size_t i = 0; i < keysyms->size(); ++i) {
        std::string what = "character " + std::to_string(i);
        Result<Stroke> stroke = strokeFor((*keysyms)[i], what);
        if (!stroke && stroke.status().code() == StatusCode::Unsupported && !strokes.empty()) {
            // Every spare keycode is pinned by a character still to be typed: type those first.
            IRIS_RETURN_IF_ERROR(typeStrokes(strokes));
            stroke = strokeFor((*keysyms)[i], what);
        }
        if (!stroke) {
            m_pinned.clear();
            return stroke.status();
        }
        m_pinned.insert(stroke->keycode);
        strokes.push_back(*stroke);
    }
    return typeStrokes(strokes);
}

Status XInput::pressKeys(const std::vector<std::string>& names) {
    if (names.empty()) return Status::invalidArgument("press: no keys given");
    std::vector<KeySymbol> keysyms;
    for (const std::string& name : names) {
        KeySymbol keysym = keysymForKeyName(name);
        if (keysym == 0) return Status::invalidArgument("press: unknown key name '" + name + "'");
        keysyms.push_back(keysym);
    }
    IRIS_RETURN_IF_ERROR(loadKeymap());
    // The keycodes to press, with the shift a character needs just before it.
    std::vector<unsigned> sequence;
    m_pinned.clear();
    for (std::size_t i = 0; i < keysyms.size(); ++i) {
        Result<Stroke> stroke = strokeFor(keysyms[i], "key '" + names[i] + "'");
        Result<Stroke> shift = stroke && stroke->shift ? strokeFor(XK_Shift_L, "Shift") : stroke;
        if (!stroke || !shift) {
            m_pinned.clear();
            return stroke ? shift.status() : stroke.status();
        }
        m_pinned.insert(stroke->keycode);
        if (stroke->shift) sequence.push_back(shift->keycode);
        sequence.push_back(stroke->keycode);
    }
    m_pinned.clear();
    IRIS_RETURN_IF_ERROR(settleMapping());
    // Pressed in order, released in reverse, including after a failed press.
    std::vector<unsigned> pressed;
    Status status;
    for (unsigned keycode : sequence) {
        status = key(keycode, true);
        if (!status.isOk()) break;
        pressed.push_back(keycode);
    }
    for (auto it = pressed.rbegin(); it != pressed.rend(); ++it) {
        Status released = key(*it, false);
        if (status.isOk()) status = released;
    }
    return status;
}

Status XInput::keyDown(std::string_view name) {
    KeySymbol keysym = keysymForKeyName(name);
    if (keysym == 0) {
        return Status::invalidArgument("key_down: unknown key name '" + std::string(name) + "'");
    }
    IRIS_RETURN_IF_ERROR(loadKeymap());
    Result<Stroke> stroke = strokeFor(keysym, "key '" + std::string(name) + "'");
    if (!stroke) return stroke.status();
    IRIS_RETURN_IF_ERROR(settleMapping());
    // As pyautogui does: shift only around the press, so the key alone stays held.
    return tap(*stroke, /*release=*/false);
}

Status XInput::keyUp(std::string_view name) {
    KeySymbol keysym = keysymForKeyName(name);
    if (keysym == 0) {
        return Status::invalidArgument("key_up: unknown key name '" + std::string(name) + "'");
    }
    Result<Stroke> stroke = strokeFor(keysym, "key '" + std::string(name) + "'");
    if (!stroke) return stroke.status();
    return key(stroke->keycode, false);
}

Status XInput::releaseAll() {
    Status status;
    for (unsigned keycode : std::set<unsigned>(m_heldKeys)) {
        Status released = key(keycode, false);
        if (status.isOk()) status = released;
    }
    for (unsigned held : std::set<unsigned>(m_heldButtons)) {
        Status released = button(held, false);
        if (status.isOk()) status = released;
    }
    Status restored = restoreBorrowed();
    return status.isOk() ? restored : status;
}

}  // namespace iris::agent
