#include "base/strings.h"

#include <gtest/gtest.h>

namespace iris {
namespace {

TEST(AsciiLower, LowersOnlyAsciiLetters) {
    EXPECT_EQ(asciiLower("Ctrl+ALT+Delete"), "ctrl+alt+delete");
    EXPECT_EQ(asciiLower("HTTPS://Example.COM/Päth"), "https://example.com/päth");
    EXPECT_EQ(asciiLower("\xc3\x89"), "\xc3\x89");  // É stays: not ASCII
    EXPECT_EQ(asciiLower("@[`{"), "@[`{");          // the neighbours of A-Z and a-z
}

TEST(HexDigitValue, AcceptsBothCasesAndRejectsTheRest) {
    const std::string digits = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(hexDigitValue(digits[std::size_t(i)]), i);
        EXPECT_EQ(hexDigitValue(char(std::toupper(digits[std::size_t(i)]))), i);
    }
    for (char c : std::string("gG/:@`_ x"))
        EXPECT_EQ(hexDigitValue(c), -1) << c;
}

}  // namespace
}  // namespace iris
