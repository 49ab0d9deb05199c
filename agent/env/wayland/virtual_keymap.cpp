#include "agent/env/wayland/virtual_keymap.h"

#include <algorithm>
#include <sstream>

#include <xkbcommon/xkbcommon.h>

namespace iris::agent {
namespace {

// XKB keycodes (evdev + 8) of the fixed modifier keys.
struct FixedKey {
    unsigned keycode;
    KeySymbol keysym;
};
constexpr FixedKey kFixedKeys[] = {
    {37, XKB_KEY_Control_L},
    {50, XKB_KEY_Shift_L},
    {64, XKB_KEY_Alt_L},
    {133, XKB_KEY_Super_L},
};

// The real modifier a modifier keysym sets; empty for other keysyms.
const char* modifierOf(KeySymbol keysym) {
    switch (keysym) {
        case XKB_KEY_Shift_L:
        case XKB_KEY_Shift_R:
            return "Shift";
        case XKB_KEY_Control_L:
        case XKB_KEY_Control_R:
            return "Control";
        case XKB_KEY_Alt_L:
        case XKB_KEY_Alt_R:
        case XKB_KEY_Meta_L:
        case XKB_KEY_Meta_R:
            return "Mod1";
        case XKB_KEY_Super_L:
        case XKB_KEY_Super_R:
            return "Mod4";
        case XKB_KEY_ISO_Level3_Shift:
            return "Mod5";
        default:
            return "";
    }
}

bool isFixed(unsigned keycode) {
    return std::any_of(std::begin(kFixedKeys), std::end(kFixedKeys),
                       [keycode](const FixedKey& key) { return key.keycode == keycode; });
}

}  // namespace

VirtualKeymap::VirtualKeymap() {
    for (const FixedKey& key : kFixedKeys)
        m_keys[key.keycode] = key.keysym;
}

KeySymbol VirtualKeymap::keysymAt(unsigned keycode) const {
    auto found = m_keys.find(keycode);
    return found == m_keys.end() ? 0 : found->second;
}

Result<unsigned> VirtualKeymap::keycodeFor(KeySymbol keysym, const std::set<unsigned>& keep) {
    for (const auto& [keycode, existing] : m_keys) {
        if (existing != keysym) continue;
        auto recent = std::find(m_recent.begin(), m_recent.end(), keycode);
        if (recent != m_recent.end()) {  // now the most recently used
            m_recent.erase(recent);
            m_recent.push_back(keycode);
        }
        return keycode;
    }
    // Keycode 8 is left out: X11 clients under Xwayland cannot use it.
    unsigned chosen = 0;
    for (unsigned keycode = kMaxKeycode; keycode > kMinKeycode && chosen == 0; --keycode) {
        if (m_keys.count(keycode) == 0 && !isFixed(keycode)) chosen = keycode;
    }
    if (chosen == 0) {
        auto recyclable = std::find_if(m_recent.begin(), m_recent.end(), [&keep](unsigned keycode) {
            return keep.count(keycode) == 0;
        });
        if (recyclable == m_recent.end()) {
            return Status::outOfRange("every virtual keycode is in use");
        }
        chosen = *recyclable;
        m_recent.erase(recyclable);
    }
    m_keys[chosen] = keysym;
    m_recent.push_back(chosen);
    m_changed = true;
    return chosen;
}

std::string VirtualKeymap::text() const {
    std::ostringstream out;
    out << "xkb_keymap {\n"
        << "xkb_keycodes \"iris\" {\n"
        << "  minimum = " << kMinKeycode << ";\n  maximum = " << kMaxKeycode << ";\n";
    for (const auto& [keycode, keysym] : m_keys)
        out << "  <I" << keycode << "> = " << keycode << ";\n";
    out << "};\n"
        << "xkb_types \"iris\" {\n"
        << "  type \"ONE_LEVEL\" { modifiers = none; level_name[Level1] = \"Any\"; };\n"
        << "};\n"
        << "xkb_compatibility \"iris\" {\n"
        // A key with a modifier mapping sets that modifier while it is held.
        << "  interpret Any+AnyOf(all) { action = SetMods(modifiers=modMapMods,clearLocks); };\n"
        << "};\n"
        << "xkb_symbols \"iris\" {\n";
    for (const auto& [keycode, keysym] : m_keys) {
        char name[64];
        if (xkb_keysym_get_name(static_cast<xkb_keysym_t>(keysym), name, sizeof(name)) < 0)
            continue;
        out << "  key <I" << keycode << "> { type = \"ONE_LEVEL\", [ " << name << " ] };\n";
        const char* modifier = modifierOf(keysym);
        if (*modifier != '\0')
            out << "  modifier_map " << modifier << " { <I" << keycode << "> };\n";
    }
    out << "};\n};\n";
    return out.str();
}

}  // namespace iris::agent
