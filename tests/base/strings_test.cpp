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

TEST(EqualsIgnoringAsciiCase, FoldsOnlyAsciiLetters) {
    EXPECT_TRUE(equalsIgnoringAsciiCase("Content-Type", "content-type"));
    EXPECT_TRUE(equalsIgnoringAsciiCase("", ""));
    EXPECT_FALSE(equalsIgnoringAsciiCase("Retry-After", "Retry-Afte"));
    EXPECT_FALSE(equalsIgnoringAsciiCase("@", "`"));  // 0x40 and 0x60 differ by the case bit only
    EXPECT_FALSE(equalsIgnoringAsciiCase("\xc3\x89", "\xc3\xa9"));  // É and é: not ASCII
}

TEST(Trim, RemovesAsciiWhiteSpaceAtBothEndsOnly) {
    EXPECT_EQ(trim(" \t\r\n\v\fa b\n\t "), "a b");
    EXPECT_EQ(trim("   "), "");
    EXPECT_EQ(trim(""), "");
    EXPECT_EQ(trim("\xc2\xa0x\xc2\xa0"), "\xc2\xa0x\xc2\xa0");  // no-break space is not ASCII
    const std::string_view text = "  kept  ";
    EXPECT_EQ(trim(text).data(), text.data() + 2);  // a view into the argument
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

TEST(HumanBytes, UsesPowersOf1024WithOneDecimal) {
    EXPECT_EQ(humanBytes(0), "0 B");
    EXPECT_EQ(humanBytes(1023), "1023 B");
    EXPECT_EQ(humanBytes(1536), "1.5 KiB");
    EXPECT_EQ(humanBytes(std::uint64_t(4683074240)), "4.4 GiB");
}

TEST(FixedPoint, RoundsToTheGivenDecimals) {
    EXPECT_EQ(fixedPoint(0.25, 2), "0.25");
    EXPECT_EQ(fixedPoint(2.0 / 3.0, 3), "0.667");
    EXPECT_EQ(fixedPoint(-1.5, 0), "-2");
    EXPECT_EQ(percentText(0.125), "12.50%");
    EXPECT_EQ(percentText(1.0 / 3.0, 0), "33%");
    EXPECT_EQ(percentText(0, 1), "0.0%");
}

TEST(HtmlEscape, EscapesTheFiveCharactersAndKeepsTheRest) {
    EXPECT_EQ(htmlEscape("<a href=\"x\">Tom & 'Jerry'</a>"),
              "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;");
    EXPECT_EQ(htmlEscape("caf\xc3\xa9 42"), "caf\xc3\xa9 42");
}

}  // namespace
}  // namespace iris
