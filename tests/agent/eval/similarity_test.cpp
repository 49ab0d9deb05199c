// String similarities against published values (Python's difflib documentation, rapidfuzz's),
// and hand-traced runs of difflib's algorithm.
#include <gtest/gtest.h>

#include "agent/eval/text_similarity.h"
#include "base/utf8.h"

namespace iris::agent::eval {
namespace {

TEST(SequenceMatcher, MatchesDifflibDocumentedRatios) {
    // difflib docs: SequenceMatcher(None, "abcd", "bcde").ratio() == 0.75
    EXPECT_DOUBLE_EQ(sequenceMatcherRatio("abcd", "bcde"), 0.75);
    // get_matching_blocks of "abxcd"/"abcd" is [(0,0,2), (3,2,2)]: 4 matches of 9 elements.
    EXPECT_DOUBLE_EQ(sequenceMatcherRatio("abxcd", "abcd"), 8.0 / 9.0);
    // find_longest_match(" abcd", "abcd abcd") is (0, 4, 5): " abcd" matches at once.
    EXPECT_DOUBLE_EQ(sequenceMatcherRatio(" abcd", "abcd abcd"), 10.0 / 14.0);
    EXPECT_DOUBLE_EQ(sequenceMatcherRatio("", ""), 1.0);
    EXPECT_DOUBLE_EQ(sequenceMatcherRatio("abc", ""), 0.0);
}

TEST(SequenceMatcher, ComparesCodePointsNotBytes) {
    // "é" is two UTF-8 bytes but one element, as in Python's str.
    EXPECT_DOUBLE_EQ(sequenceMatcherRatio("caf\xc3\xa9", "cafe"), 6.0 / 8.0);
}

TEST(SequenceMatcher, AppliesAutojunkToLongSequences) {
    // b has 251 elements; 'x' makes up more than 1% + 1 of them, so it never starts a match.
    // Only the single 'y' matches; without autojunk the 250 x's would.
    const std::string a = std::string(250, 'x') + "y";
    const std::string b = "y" + std::string(250, 'x');
    EXPECT_DOUBLE_EQ(sequenceMatcherRatio(a, b), 2.0 / 502.0);
    // Under 200 elements nothing is junk.
    const std::string c = std::string(150, 'x') + "y";
    const std::string d = "y" + std::string(150, 'x');
    EXPECT_DOUBLE_EQ(sequenceMatcherRatio(c, d), 300.0 / 302.0);
}

TEST(SequenceMatcher, ComparesLinesAsElements) {
    const std::vector<std::string> a = {"one", "two", "three"};
    const std::vector<std::string> b = {"one", "three", "four"};
    EXPECT_DOUBLE_EQ(sequenceMatcherRatio(a, b), 4.0 / 6.0);
}

TEST(FuzzRatio, MatchesRapidfuzzDocumentation) {
    // rapidfuzz docs: fuzz.ratio("this is a test", "this is a test!") == 96.55172413793103
    EXPECT_NEAR(fuzzRatio("this is a test", "this is a test!") * 100, 96.55172413793103, 1e-9);
    EXPECT_DOUBLE_EQ(fuzzRatio("", ""), 1.0);
    EXPECT_DOUBLE_EQ(fuzzRatio("abc", "xyz"), 0.0);
    // LCS("kitten", "sitting") = 4 ("ittn"): 2*4/13.
    EXPECT_DOUBLE_EQ(fuzzRatio("kitten", "sitting"), 8.0 / 13.0);
}

TEST(Utf8, ReplacesInvalidBytes) {
    const std::u32string s = utf8::decodeLossy(
        "a\xff"
        "b\xe2\x82\xac");
    ASSERT_EQ(s.size(), 4u);
    EXPECT_EQ(s[1], U'\uFFFD');
    EXPECT_EQ(s[3], U'\u20AC');
}

}  // namespace
}  // namespace iris::agent::eval
