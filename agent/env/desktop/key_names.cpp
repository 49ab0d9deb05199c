#include "agent/env/desktop/key_names.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include <X11/XF86keysym.h>
#include <X11/keysym.h>

#include "base/strings.h"
#include "base/utf8.h"

namespace iris::agent {
namespace {

struct NamedKey {
    std::string_view name;
    KeySymbol keysym;
};

// pyautogui's KEYBOARD_KEYS names (pyautogui/_pyautogui_x11.py), lower case.
constexpr std::array kNamedKeys = std::to_array<NamedKey>({
    {"enter", XK_Return},
    {"return", XK_Return},
    {"tab", XK_Tab},
    {"space", XK_space},
    {"backspace", XK_BackSpace},
    {"esc", XK_Escape},
    {"escape", XK_Escape},
    {"delete", XK_Delete},
    {"del", XK_Delete},
    {"insert", XK_Insert},
    {"home", XK_Home},
    {"end", XK_End},
    {"pageup", XK_Page_Up},
    {"pgup", XK_Page_Up},
    {"pagedown", XK_Page_Down},
    {"pgdn", XK_Page_Down},
    {"up", XK_Up},
    {"down", XK_Down},
    {"left", XK_Left},
    {"right", XK_Right},
    {"ctrl", XK_Control_L},
    {"ctrlleft", XK_Control_L},
    {"ctrlright", XK_Control_R},
    {"control", XK_Control_L},
    {"shift", XK_Shift_L},
    {"shiftleft", XK_Shift_L},
    {"shiftright", XK_Shift_R},
    {"alt", XK_Alt_L},
    {"altleft", XK_Alt_L},
    {"altright", XK_Alt_R},
    {"option", XK_Alt_L},
    {"optionleft", XK_Alt_L},
    {"optionright", XK_Alt_R},
    {"win", XK_Super_L},
    {"winleft", XK_Super_L},
    {"winright", XK_Super_R},
    {"super", XK_Super_L},
    {"cmd", XK_Super_L},
    {"command", XK_Super_L},
    {"meta", XK_Super_L},
    {"capslock", XK_Caps_Lock},
    {"numlock", XK_Num_Lock},
    {"scrolllock", XK_Scroll_Lock},
    {"pause", XK_Pause},
    {"print", XK_Print},
    {"printscreen", XK_Print},
    {"prntscrn", XK_Print},
    {"prtsc", XK_Print},
    {"prtscr", XK_Print},
    {"apps", XK_Menu},
    {"menu", XK_Menu},
    {"help", XK_Help},
    {"clear", XK_Clear},
    {"select", XK_Select},
    {"execute", XK_Execute},
    {"modechange", XK_Mode_switch},
    {"add", XK_KP_Add},
    {"subtract", XK_KP_Subtract},
    {"multiply", XK_KP_Multiply},
    {"divide", XK_KP_Divide},
    {"decimal", XK_KP_Decimal},
    {"separator", XK_KP_Separator},
    {"num0", XK_KP_0},
    {"num1", XK_KP_1},
    {"num2", XK_KP_2},
    {"num3", XK_KP_3},
    {"num4", XK_KP_4},
    {"num5", XK_KP_5},
    {"num6", XK_KP_6},
    {"num7", XK_KP_7},
    {"num8", XK_KP_8},
    {"num9", XK_KP_9},
    {"volumeup", XF86XK_AudioRaiseVolume},
    {"volumedown", XF86XK_AudioLowerVolume},
    {"volumemute", XF86XK_AudioMute},
    {"playpause", XF86XK_AudioPlay},
    {"stop", XF86XK_AudioStop},
    {"nexttrack", XF86XK_AudioNext},
    {"prevtrack", XF86XK_AudioPrev},
    {"browserback", XF86XK_Back},
    {"browserforward", XF86XK_Forward},
    {"browserrefresh", XF86XK_Refresh},
    {"browserstop", XF86XK_Stop},
    {"browsersearch", XF86XK_Search},
    {"browserfavorites", XF86XK_Favorites},
    {"browserhome", XF86XK_HomePage},
    {"launchmail", XF86XK_Mail},
    {"launchmediaselect", XF86XK_AudioMedia},
    {"launchapp1", XF86XK_Launch0},
    {"launchapp2", XF86XK_Launch1},
    {"sleep", XF86XK_Sleep},
    {"kana", XK_Kana_Shift},
    {"kanji", XK_Kanji},
    {"hangul", XK_Hangul},
    {"hanguel", XK_Hangul},
    {"hanja", XK_Hangul_Hanja},
    {"yen", XK_yen},
});

}  // namespace

KeySymbol keysymForCodePoint(char32_t codePoint) {
    if (codePoint == U'\n' || codePoint == U'\r') return XK_Return;
    if (codePoint == U'\t') return XK_Tab;
    if (codePoint == U'\b') return XK_BackSpace;
    if ((codePoint >= 0x20 && codePoint <= 0x7e) || (codePoint >= 0xa0 && codePoint <= 0xff)) {
        return codePoint;
    }
    if (codePoint < 0x100 || codePoint > 0x10ffff) return 0;  // C0/C1 controls, DEL, non-Unicode
    return 0x01000000UL | codePoint;
}

KeySymbol keysymForKeyName(std::string_view name) {
    if (name.empty()) return 0;
    Result<std::u32string> codePoints = utf8::decode(name);
    if (codePoints && codePoints->size() == 1) return keysymForCodePoint(codePoints->front());
    const std::string lower = asciiLower(name);
    for (const NamedKey& key : kNamedKeys) {
        if (key.name == lower) return key.keysym;
    }
    // f1 .. f24 (X has keysyms up to F35, pyautogui names up to f24).
    if (lower.size() >= 2 && lower.size() <= 3 && lower[0] == 'f' &&
        std::all_of(lower.begin() + 1, lower.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        int number = std::stoi(lower.substr(1));
        if (number >= 1 && number <= 24) return XK_F1 + static_cast<KeySymbol>(number - 1);
    }
    return 0;
}


}  // namespace iris::agent
