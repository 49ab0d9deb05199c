#include "agent/env/wayland/virtual_keymap.h"

#include <memory>

#include <gtest/gtest.h>
#include <xkbcommon/xkbcommon.h>

namespace iris::agent {
namespace {

// The keymap compiled by xkbcommon, as a compositor and its clients compile it.
struct Compiled {
    explicit Compiled(const VirtualKeymap& keys) {
        context = xkb_context_new(XKB_CONTEXT_NO_DEFAULT_INCLUDES);
        keymap = xkb_keymap_new_from_string(context, keys.text().c_str(), XKB_KEYMAP_FORMAT_TEXT_V1,
                                            XKB_KEYMAP_COMPILE_NO_FLAGS);
        if (keymap != nullptr) state = xkb_state_new(keymap);
    }
    ~Compiled() {
        if (state != nullptr) xkb_state_unref(state);
        if (keymap != nullptr) xkb_keymap_unref(keymap);
        xkb_context_unref(context);
    }
    std::string utf8(unsigned keycode) {
        char text[32] = "";
        xkb_state_key_get_utf8(state, keycode, text, sizeof(text));
        return text;
    }
    xkb_context* context;
    xkb_keymap* keymap = nullptr;
    xkb_state* state = nullptr;
};

TEST(VirtualKeymapTest, AnyCharacterGetsAKeyThatTypesIt) {
    VirtualKeymap keys;
    std::set<unsigned> keep;
    // ASCII, Cyrillic, an emoji (outside the BMP) and a keysym by name.
    Result<unsigned> a = keys.keycodeFor(keysymForCodePoint(U'a'), keep);
    Result<unsigned> pe = keys.keycodeFor(keysymForCodePoint(U'\u041f'), keep);
    Result<unsigned> grin = keys.keycodeFor(keysymForCodePoint(U'\U0001F600'), keep);
    Result<unsigned> enter = keys.keycodeFor(keysymForKeyName("enter"), keep);
    ASSERT_TRUE(a && pe && grin && enter);
    EXPECT_TRUE(keys.changed());
    Compiled compiled(keys);
    ASSERT_NE(compiled.keymap, nullptr) << keys.text();
    EXPECT_EQ(compiled.utf8(*a), "a");
    EXPECT_EQ(compiled.utf8(*pe), "\xd0\x9f");
    EXPECT_EQ(compiled.utf8(*grin), "\xf0\x9f\x98\x80");
    EXPECT_EQ(xkb_state_key_get_one_sym(compiled.state, *enter),
              static_cast<xkb_keysym_t>(XKB_KEY_Return));
    // Asking again reuses the key and changes nothing.
    keys.markUploaded();
    EXPECT_EQ(*keys.keycodeFor(keysymForCodePoint(U'a'), keep), *a);
    EXPECT_FALSE(keys.changed());
}

TEST(VirtualKeymapTest, ModifierKeysSetTheirModifiers) {
    VirtualKeymap keys;
    std::set<unsigned> keep;
    unsigned ctrl = *keys.keycodeFor(keysymForKeyName("ctrl"), keep);
    unsigned alt = *keys.keycodeFor(keysymForKeyName("alt"), keep);
    unsigned a = *keys.keycodeFor(keysymForCodePoint(U'a'), keep);
    EXPECT_EQ(ctrl, 37u);  // left ctrl at its evdev place (29 + 8)
    EXPECT_EQ(alt, 64u);
    Compiled compiled(keys);
    ASSERT_NE(compiled.keymap, nullptr);
    xkb_state_update_key(compiled.state, ctrl, XKB_KEY_DOWN);
    EXPECT_GT(
        xkb_state_mod_name_is_active(compiled.state, XKB_MOD_NAME_CTRL, XKB_STATE_MODS_EFFECTIVE),
        0);
    EXPECT_EQ(
        xkb_state_mod_name_is_active(compiled.state, XKB_MOD_NAME_ALT, XKB_STATE_MODS_EFFECTIVE),
        0);
    EXPECT_EQ(xkb_state_key_get_one_sym(compiled.state, a), static_cast<xkb_keysym_t>(XKB_KEY_a));
    xkb_state_update_key(compiled.state, ctrl, XKB_KEY_UP);
    xkb_state_update_key(compiled.state, alt, XKB_KEY_DOWN);
    EXPECT_GT(
        xkb_state_mod_name_is_active(compiled.state, XKB_MOD_NAME_ALT, XKB_STATE_MODS_EFFECTIVE),
        0);
}

TEST(VirtualKeymapTest, RecyclesTheLeastRecentlyUsedKeyButNotKeptOnes) {
    VirtualKeymap keys;
    std::set<unsigned> keep;
    std::vector<unsigned> given;
    // 247 keycodes (9..255) less the 4 fixed modifiers.
    for (char32_t c = 0x4e00; given.size() < 243; ++c) {
        Result<unsigned> keycode = keys.keycodeFor(keysymForCodePoint(c), keep);
        ASSERT_TRUE(keycode);
        given.push_back(*keycode);
    }
    std::set<unsigned> distinct(given.begin(), given.end());
    EXPECT_EQ(distinct.size(), given.size());
    keep = {given[0]};
    Result<unsigned> next = keys.keycodeFor(keysymForCodePoint(U'\u9fa0'), keep);
    ASSERT_TRUE(next);
    EXPECT_EQ(*next, given[1]);  // the oldest not kept
    EXPECT_EQ(keys.keysymAt(given[1]), keysymForCodePoint(U'\u9fa0'));
    std::set<unsigned> all(given.begin(), given.end());
    Result<unsigned> none = keys.keycodeFor(keysymForCodePoint(U'\u9fa1'), all);
    ASSERT_FALSE(none);
    EXPECT_EQ(none.status().code(), StatusCode::OutOfRange);
}

}  // namespace
}  // namespace iris::agent
