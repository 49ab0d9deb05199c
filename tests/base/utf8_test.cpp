#include "base/utf8.h"

#include <string>

#include <gtest/gtest.h>

namespace iris {
namespace {

TEST(Utf8Decode, NamesTheByteThatBreaksTheText) {
    const auto offset = [](std::string_view text) -> std::string {
        Result<std::u32string> decoded = utf8::decode(text);
        return decoded ? "valid" : decoded.status().message();
    };
    EXPECT_EQ(offset("a\xc3\xa9"), "valid");
    EXPECT_EQ(offset("ab\xc3"), "text is not valid UTF-8 at byte 2");         // cut off at the end
    EXPECT_EQ(offset("a\xe2\x28\xa1"), "text is not valid UTF-8 at byte 2");  // bad continuation
    EXPECT_EQ(offset("\x80"), "text is not valid UTF-8 at byte 0");           // stray continuation
    EXPECT_EQ(offset("xy\xff"), "text is not valid UTF-8 at byte 2");         // never a lead byte
    EXPECT_EQ(offset("\xe0\x80\xaf"), "text is not valid UTF-8 at byte 1");   // overlong
}

TEST(Utf8Decode, LossyDecodingAgreesWithRepair) {
    // Every string of up to three bytes drawn from a set of interesting bytes: decodeLossy must
    // give the code points of repair(), and decode() must succeed exactly on valid text.
    const unsigned char bytes[] = {0x41, 0x7f, 0x80, 0xbf, 0xc2, 0xc3, 0xe0, 0xe2,
                                   0xed, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x9f, 0x90};
    std::string text;
    int checked = 0;
    for (unsigned char a : bytes) {
        for (unsigned char b : bytes) {
            for (unsigned char c : bytes) {
                text = {char(a), char(b), char(c)};
                Result<std::u32string> strict = utf8::decode(text);
                EXPECT_EQ(strict.isOk(), utf8::isValid(text));
                std::string reencoded;
                for (char32_t cp : utf8::decodeLossy(text))
                    utf8::append(reencoded, cp);
                EXPECT_EQ(reencoded, utf8::repair(text));
                if (strict) {
                    EXPECT_EQ(*strict, utf8::decodeLossy(text));
                }
                ++checked;
            }
        }
    }
    EXPECT_EQ(checked, 16 * 16 * 16);
}

TEST(Utf8Append, WritesAReplacementCharacterForNonScalarValues) {
    std::string out;
    utf8::append(out, 0x20ac);
    utf8::append(out, 0xd800);    // a lone surrogate
    utf8::append(out, 0x110000);  // past the last code point
    EXPECT_EQ(out, "\xe2\x82\xac\xef\xbf\xbd\xef\xbf\xbd");
}

}  // namespace
}  // namespace iris
