#pragma once
// The XKB keymap Iris uploads to a Wayland compositor's virtual keyboard. Every keysym Iris needs
// gets a key of its own, on one level: typing a character is one keystroke whatever the layout,
// and any Unicode character can be typed (as the X11 environment does with spare keycodes).
// The modifiers sit at their evdev places (left ctrl, shift, alt, super) with their usual
// modifier mapping, so chords arrive with the right modifier state. Pure: no connection needed.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/env/desktop/key_names.h"
#include "base/status.h"

namespace iris::agent {

class VirtualKeymap final {
public:
    VirtualKeymap();

    // The XKB keycode (evdev code + 8) whose key types `keysym`. A keysym without a key gets a
    // free keycode, or the least recently used one not in `keep` (keys still to be typed or held
    // down); OutOfRange when every keycode is in `keep`.
    Result<unsigned> keycodeFor(KeySymbol keysym, const std::set<unsigned>& keep);
    // The keysym on `keycode`, 0 when it has none.
    KeySymbol keysymAt(unsigned keycode) const;

    // Whether keys were added since the last markUploaded().
    bool changed() const { return m_changed; }
    void markUploaded() { m_changed = false; }

    // The keymap in XKB's text format (xkb_keymap_new_from_string, XKB_KEYMAP_FORMAT_TEXT_V1).
    std::string text() const;

    static constexpr unsigned kMinKeycode = 8;
    static constexpr unsigned kMaxKeycode = 255;

private:
    std::map<unsigned, KeySymbol> m_keys;  // keycode -> keysym
    std::vector<unsigned> m_recent;        // keycodes given out, least recently used first
    bool m_changed = true;
};

}  // namespace iris::agent
