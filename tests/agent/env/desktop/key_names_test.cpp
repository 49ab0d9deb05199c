#include "agent/env/desktop/key_names.h"

#include <X11/XF86keysym.h>
#include <X11/keysym.h>
#include <gtest/gtest.h>

#include "base/utf8.h"

namespace iris::agent {
namespace {

TEST(KeyNames, MapsPyautoguiNamesToKeysyms) {
    EXPECT_EQ(keysymForKeyName("enter"), KeySymbol{XK_Return});
    EXPECT_EQ(keysymForKeyName("ESC"), KeySymbol{XK_Escape});
    EXPECT_EQ(keysymForKeyName("ctrl"), KeySymbol{XK_Control_L});
    EXPECT_EQ(keysymForKeyName("alt"), KeySymbol{XK_Alt_L});
    EXPECT_EQ(keysymForKeyName("shift"), KeySymbol{XK_Shift_L});
    EXPECT_EQ(keysymForKeyName("win"), KeySymbol{XK_Super_L});
    EXPECT_EQ(keysymForKeyName("cmd"), KeySymbol{XK_Super_L});
    EXPECT_EQ(keysymForKeyName("backspace"), KeySymbol{XK_BackSpace});
    EXPECT_EQ(keysymForKeyName("pagedown"), KeySymbol{XK_Page_Down});
    EXPECT_EQ(keysymForKeyName("left"), KeySymbol{XK_Left});
    EXPECT_EQ(keysymForKeyName("f1"), KeySymbol{XK_F1});
    EXPECT_EQ(keysymForKeyName("F12"), KeySymbol{XK_F12});
    EXPECT_EQ(keysymForKeyName("f24"), KeySymbol{XK_F24});
    EXPECT_EQ(keysymForKeyName("volumeup"), KeySymbol{XF86XK_AudioRaiseVolume});
    EXPECT_EQ(keysymForKeyName("a"), KeySymbol{XK_a});
    EXPECT_EQ(keysymForKeyName("A"), KeySymbol{XK_A});
    EXPECT_EQ(keysymForKeyName("7"), KeySymbol{XK_7});
    EXPECT_EQ(keysymForKeyName(","), KeySymbol{XK_comma});
    EXPECT_EQ(keysymForKeyName("<"), KeySymbol{XK_less});
    EXPECT_EQ(keysymForKeyName(" "), KeySymbol{XK_space});
    EXPECT_EQ(keysymForKeyName("\xc3\xa9"), KeySymbol{XK_eacute});
}

TEST(KeyNames, UnknownNamesAreZero) {
    EXPECT_EQ(keysymForKeyName(""), 0UL);
    EXPECT_EQ(keysymForKeyName("f25"), 0UL);
    EXPECT_EQ(keysymForKeyName("f0"), 0UL);
    EXPECT_EQ(keysymForKeyName("enterr"), 0UL);
}

TEST(KeyNames, CodePointsUseLatin1OrUnicodeKeysyms) {
    EXPECT_EQ(keysymForCodePoint(U'a'), KeySymbol{XK_a});
    EXPECT_EQ(keysymForCodePoint(U'\n'), KeySymbol{XK_Return});
    EXPECT_EQ(keysymForCodePoint(U'\t'), KeySymbol{XK_Tab});
    EXPECT_EQ(keysymForCodePoint(0xe9), KeySymbol{XK_eacute});
    EXPECT_EQ(keysymForCodePoint(0x20ac), 0x010020acUL);  // euro sign
    EXPECT_EQ(keysymForCodePoint(0x1f600), 0x0101f600UL);
    EXPECT_EQ(keysymForCodePoint(0x07), 0UL);  // bell: no key
    EXPECT_EQ(keysymForCodePoint(0x7f), 0UL);
}

TEST(TypedText, DecodesMultiByteUtf8) {
    Result<std::u32string> decoded = utf8::decode("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    ASSERT_TRUE(decoded) << decoded.status().message();
    EXPECT_EQ(*decoded, (std::u32string{U'a', 0xe9, 0x20ac, 0x1f600}));
}

TEST(TypedText, RejectsMalformedUtf8NamingTheByte) {
    Result<std::u32string> truncated = utf8::decode("ab\xc3");
    ASSERT_FALSE(truncated);
    EXPECT_EQ(truncated.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(truncated.status().message().find("byte 2"), std::string::npos);

    Result<std::u32string> badContinuation = utf8::decode("a\xe2\x28\xa1");
    ASSERT_FALSE(badContinuation);
    EXPECT_NE(badContinuation.status().message().find("byte 2"), std::string::npos);

    EXPECT_FALSE(utf8::decode("\xc0\xaf"));          // overlong '/'
    EXPECT_FALSE(utf8::decode("\xed\xa0\x80"));      // a surrogate
    EXPECT_FALSE(utf8::decode("\xf4\x90\x80\x80"));  // past U+10FFFF
}

}  // namespace
}  // namespace iris::agent
