#include "agent/workspace/line_diff.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/agent/workspace/test_files.h"

namespace iris::agent {
namespace {

using testing::readText;
using testing::run;
using testing::shellQuote;
using testing::TempDir;
using testing::writeText;

// Lines drawn from a small vocabulary so that random texts share many lines, as edits do.
std::string randomText(std::mt19937& rng, int maxLines) {
    static const char* const kWords[] = {
        "<div>", "</div>",         "a",      "b", "body { margin: 0; }",
        "",      "  <p>hello</p>", "x = 1;", "}", "c"};
    std::uniform_int_distribution<int> lines(0, maxLines);
    std::uniform_int_distribution<int> word(0, 9);
    std::string text;
    const int count = lines(rng);
    for (int i = 0; i < count; ++i)
        text += std::string(kWords[word(rng)]) + "\n";
    if (!text.empty() && rng() % 4 == 0) text.pop_back();  // no newline at the end
    return text;
}

// A few line-level edits of `text`: inserts, deletes, changes, and the final newline toggled.
std::string randomEdit(std::mt19937& rng, const std::string& text) {
    std::vector<std::string> lines;
    for (std::string_view line : splitLines(text))
        lines.emplace_back(line);
    if (!lines.empty() && lines.back().back() != '\n') lines.back() += '\n';
    const int edits = static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
        const std::size_t at = lines.empty() ? 0 : rng() % (lines.size() + 1);
        switch (rng() % 3) {
            case 0:
                lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at),
                             randomText(rng, 3) + "new\n");
                break;
            case 1:
                if (at < lines.size()) lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(at));
                break;
            default:
                if (at < lines.size()) lines[at] = "changed " + std::to_string(e) + "\n";
                break;
        }
    }
    std::string out;
    for (const std::string& line : lines)
        out += line;
    if (!out.empty() && rng() % 4 == 0) out.pop_back();
    return out;
}

// The hunks of a diff(1) or unifiedDiff output, without the two header lines.
std::string hunks(const std::string& diff) {
    std::size_t start = 0;
    for (int i = 0; i < 2 && start != std::string::npos; ++i)
        start = diff.find('\n', start) + 1;
    return diff.substr(start);
}

struct Counts {
    int added = 0;
    int removed = 0;
};

Counts countChanges(const std::string& diff) {
    Counts counts;
    // splitLines() views its argument: the hunks must outlive the loop.
    const std::string body = hunks(diff);
    for (std::string_view line : splitLines(body)) {
        if (line.front() == '+') ++counts.added;
        if (line.front() == '-') ++counts.removed;
    }
    return counts;
}

class LineDiffVersusTools : public ::testing::Test {
protected:
    // GNU diff -u of the two texts (the reference for format and for minimality).
    std::string systemDiff(const std::string& before, const std::string& after, bool minimal) {
        writeText(m_dir.path() / "old", before);
        writeText(m_dir.path() / "new", after);
        const std::filesystem::path out = m_dir.path() / "diff.out";
        run("diff " + std::string(minimal ? "-d " : "") + "-u " + shellQuote(m_dir.path() / "old") +
            " " + shellQuote(m_dir.path() / "new") + " > " + shellQuote(out));
        return readText(out);
    }

    // patch(1) applied to `before`: what it makes of our diff.
    std::string patched(const std::string& before, const std::string& diff) {
        writeText(m_dir.path() / "old", before);
        writeText(m_dir.path() / "our.diff", diff);
        const std::filesystem::path out = m_dir.path() / "patched";
        std::filesystem::remove(out);
        const int status = run("patch --quiet --force -o " + shellQuote(out) + " " +
                               shellQuote(m_dir.path() / "old") + " " +
                               shellQuote(m_dir.path() / "our.diff") + " > /dev/null 2>&1");
        EXPECT_EQ(status, 0) << "patch rejected:\n" << diff;
        return readText(out);
    }

    TempDir m_dir;
};

TEST(LineDiff, SplitsAfterNewlinesAndKeepsAnUnterminatedLastLine) {
    EXPECT_TRUE(splitLines("").empty());
    EXPECT_EQ(splitLines("a\nb"), (std::vector<std::string_view>{"a\n", "b"}));
    EXPECT_EQ(splitLines("a\n\n"), (std::vector<std::string_view>{"a\n", "\n"}));
}

TEST(LineDiff, EqualTextsHaveNoDiff) {
    EXPECT_EQ(unifiedDiff("a\nb\n", "a\nb\n", "a/f", "b/f"), "");
}

TEST(LineDiff, ChangeInTheMiddleHasThreeLinesOfContext) {
    const std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    const std::string after = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
    EXPECT_EQ(unifiedDiff(before, after, "a/f.txt", "b/f.txt"),
              "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST_F(LineDiffVersusTools, HandWrittenCasesMatchDiffUExactly) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "a\nb\nc\n"},         // new file
        {"a\nb\nc\n", ""},         // emptied
        {"a\nb\nc\n", "a\nb\nc"},  // final newline removed
        {"a\nb", "a\nb\nc\n"},     // appended to an unterminated line
        {"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n",
         "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\nY\n16\n"},              // two hunks
        {"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\nX\n3\n4\n5\n6\n7\n8\nY\n10\n"},  // gap 6: one hunk
        {"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\nY\n11\n"},  // gap 7
        {"head\n", "new first\nhead\n"},
    };
    for (const auto& [before, after] : cases) {
        EXPECT_EQ(hunks(unifiedDiff(before, after, "a/f", "b/f")),
                  hunks(systemDiff(before, after, false)))
            << "before:\n"
            << before << "\nafter:\n"
            << after;
    }
}

TEST_F(LineDiffVersusTools, RandomEditsPatchBackAndAreAsShortAsGnuDiffMinimal) {
    std::mt19937 rng(20261201);
    for (int round = 0; round < 150; ++round) {
        const std::string before = randomText(rng, 30);
        const std::string after = randomEdit(rng, before);
        const std::string ours = unifiedDiff(before, after, "a/f", "b/f");
        if (before == after) {
            EXPECT_EQ(ours, "");
            continue;
        }
        EXPECT_EQ(patched(before, ours), after) << "round " << round << ":\n" << ours;
        const std::string theirs = systemDiff(before, after, true);
        const Counts mine = countChanges(ours);
        const Counts reference = countChanges(theirs);
        EXPECT_EQ(mine.added, reference.added) << "round " << round << ":\n" << ours << theirs;
        EXPECT_EQ(mine.removed, reference.removed) << "round " << round << ":\n" << ours << theirs;
    }
}

TEST_F(LineDiffVersusTools, UnrelatedTextsStillPatchBack) {
    std::mt19937 rng(7);
    for (int round = 0; round < 20; ++round) {
        const std::string before = randomText(rng, 60);
        const std::string after = randomText(rng, 60);
        EXPECT_EQ(patched(before, unifiedDiff(before, after, "a/f", "b/f")), after);
    }
}

TEST(LineDiff, PastTheDistanceCapTheScriptIsStillCorrect) {
    std::vector<std::string> oldStore, newStore;
    for (std::size_t i = 0; i < kMaxEditDistance + 50; ++i) {
        oldStore.push_back("old " + std::to_string(i) + "\n");
        newStore.push_back("new " + std::to_string(i) + "\n");
    }
    std::vector<std::string_view> oldLines(oldStore.begin(), oldStore.end());
    std::vector<std::string_view> newLines(newStore.begin(), newStore.end());
    const std::vector<LineEdit> edits = diffLines(oldLines, newLines);
    std::vector<std::string_view> rebuilt;
    for (const LineEdit& edit : edits) {
        if (edit.op == LineOp::Keep) rebuilt.push_back(oldLines[edit.oldLine]);
        if (edit.op == LineOp::Insert) rebuilt.push_back(newLines[edit.newLine]);
    }
    EXPECT_EQ(rebuilt, newLines);
}

}  // namespace
}  // namespace iris::agent
