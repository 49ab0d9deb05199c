// The grounding self-test's pages: the same seed gives the same pages on every standard library,
// every element kind and screen size appears, controls fit on the screen without overlapping,
// and each page names one target with a label no other control has.
#include "agent/grounding/page_generator.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "base/sha256.h"

namespace iris::agent::grounding {
namespace {

PageSetOptions setOf(std::uint64_t seed, int count) {
    PageSetOptions options;
    options.seed = seed;
    options.count = count;
    return options;
}

TEST(SplitMix64Test, GivesThePublishedSequence) {
    // Vigna's splitmix64.c from state 0, and from 1234567.
    SplitMix64 zero(0);
    EXPECT_EQ(zero.next(), 0xE220A8397B1DCDAFull);
    SplitMix64 random(1234567);
    EXPECT_EQ(random.next(), 6457827717110365317ull);
    EXPECT_EQ(random.next(), 3203168211198807973ull);
}

TEST(SplitMix64Test, BetweenStaysInItsRangeAndReachesBothEnds) {
    SplitMix64 random(7);
    std::set<int> seen;
    for (int i = 0; i < 1000; ++i) {
        const int value = random.between(3, 9);
        ASSERT_GE(value, 3);
        ASSERT_LE(value, 9);
        seen.insert(value);
    }
    EXPECT_EQ(seen.size(), 7u);
}

TEST(PageGeneratorTest, SameSeedGivesIdenticalPages) {
    const std::vector<GroundingPage> a = generatePages(setOf(42, 15));
    const std::vector<GroundingPage> b = generatePages(setOf(42, 15));
    ASSERT_EQ(a.size(), 15u);
    ASSERT_EQ(b.size(), 15u);
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].html, b[i].html) << "page " << i;
        EXPECT_EQ(a[i].instruction, b[i].instruction) << "page " << i;
    }
}

TEST(PageGeneratorTest, APageDoesNotDependOnHowManyPagesThereAre) {
    const std::vector<GroundingPage> few = generatePages(setOf(5, 4));
    const std::vector<GroundingPage> many = generatePages(setOf(5, 12));
    for (std::size_t i = 0; i < few.size(); ++i)
        EXPECT_EQ(few[i].html, many[i].html) << "page " << i;
}

TEST(PageGeneratorTest, DifferentSeedsGiveDifferentPages) {
    const std::vector<GroundingPage> a = generatePages(setOf(1, 10));
    const std::vector<GroundingPage> b = generatePages(setOf(2, 10));
    int same = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        same += a[i].html == b[i].html;
    EXPECT_EQ(same, 0);
}

// The pages are made of integers and string literals only: these digests hold on every
// standard library and compiler. A deliberate change to the generator changes them (and makes
// earlier reports incomparable): update them then.
TEST(PageGeneratorTest, PagesAreTheSameOnEveryStandardLibrary) {
    const std::vector<GroundingPage> pages = generatePages(setOf(1, 3));
    std::string all;
    for (const GroundingPage& page : pages)
        all += page.html;
    EXPECT_EQ(toHex(Sha256::hash(all)),
              "0a4e507c1f7478ad4443af4055922f3c7bc92defdedbfe65fe339837385db658");
}

TEST(PageGeneratorTest, EveryKindScreenAndThemeAppears) {
    const std::vector<GroundingPage> pages = generatePages(setOf(3, 30));
    std::set<ElementKind> targets;
    std::set<ElementKind> kinds;
    std::set<std::string> screens;
    std::set<Theme> themes;
    for (const GroundingPage& page : pages) {
        targets.insert(page.elements[std::size_t(page.target)].kind);
        for (const PageElement& e : page.elements)
            kinds.insert(e.kind);
        screens.insert(screenSizeText(page.screen));
        themes.insert(page.theme);
    }
    EXPECT_EQ(targets.size(), std::size(kElementKinds));
    EXPECT_EQ(kinds.size(), std::size(kElementKinds));
    EXPECT_EQ(screens, (std::set<std::string>{"1280x800", "1920x1080", "1024x768"}));
    EXPECT_EQ(themes.size(), 3u);
}

TEST(PageGeneratorTest, ScreensCycleInOrder) {
    PageSetOptions options = setOf(9, 5);
    options.screens = {{800, 600}, {1920, 1080}};
    const std::vector<GroundingPage> pages = generatePages(options);
    for (std::size_t i = 0; i < pages.size(); ++i)
        EXPECT_EQ(pages[i].screen, options.screens[i % 2]) << "page " << i;
}

TEST(PageGeneratorTest, ControlsFitOnTheScreenAndDoNotOverlap) {
    PageSetOptions options = setOf(11, 60);
    options.screens = {{480, 360}, {1024, 768}, {1920, 1080}};
    for (const GroundingPage& page : generatePages(options)) {
        ASSERT_GE(page.elements.size(), 2u) << "page " << page.index;
        for (std::size_t i = 0; i < page.elements.size(); ++i) {
            const Box& a = page.elements[i].box;
            EXPECT_GE(a.left, 0) << "page " << page.index;
            EXPECT_GE(a.top, 0) << "page " << page.index;
            EXPECT_GT(a.width, 0);
            EXPECT_GT(a.height, 0);
            EXPECT_LE(a.left + a.width, page.screen.width) << "page " << page.index;
            EXPECT_LE(a.top + a.height, page.screen.height) << "page " << page.index;
            for (std::size_t j = i + 1; j < page.elements.size(); ++j) {
                const Box& b = page.elements[j].box;
                const bool apart = a.left + a.width <= b.left || b.left + b.width <= a.left ||
                                   a.top + a.height <= b.top || b.top + b.height <= a.top;
                EXPECT_TRUE(apart) << "page " << page.index << ": controls " << i << " and " << j;
            }
        }
    }
}

TEST(PageGeneratorTest, LabelsAreUniqueAndTheInstructionNamesTheTarget) {
    for (const GroundingPage& page : generatePages(setOf(13, 40))) {
        std::set<std::string> labels;
        for (const PageElement& e : page.elements)
            EXPECT_TRUE(labels.insert(e.label).second)
                << "page " << page.index << ": '" << e.label << "' twice";
        const PageElement& target = page.elements[std::size_t(page.target)];
        EXPECT_NE(page.instruction.find("'" + target.label + "'"), std::string::npos)
            << page.instruction;
        // One target marker in the document.
        const std::string marker = "data-iris-target";
        const std::size_t first = page.html.find(marker);
        ASSERT_NE(first, std::string::npos);
        EXPECT_EQ(page.html.find(marker, first + 1), std::string::npos);
    }
}

TEST(PageGeneratorTest, TargetKindsCycleWithTheIndex) {
    const std::vector<GroundingPage> pages = generatePages(setOf(17, 10));
    for (const GroundingPage& page : pages) {
        EXPECT_EQ(page.elements[std::size_t(page.target)].kind,
                  kElementKinds[std::size_t(page.index) % std::size(kElementKinds)]);
    }
}

}  // namespace
}  // namespace iris::agent::grounding
