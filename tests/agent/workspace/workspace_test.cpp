#include "agent/workspace/workspace.h"

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/utf8.h"
#include "tests/agent/workspace/test_files.h"

namespace iris::agent {
namespace {

namespace fs = std::filesystem;
using testing::readText;
using testing::run;
using testing::shellQuote;
using testing::TempDir;
using testing::writeText;

// A project folder beside an "outside" folder, with symlinks of every kind.
class WorkspaceTest : public ::testing::Test {
protected:
    void SetUp() override {
        m_project = m_dir.path() / "project";
        m_outside = m_dir.path() / "outside";
        writeText(m_project / "index.html", "<h1>hi</h1>\n");
        writeText(m_project / "sub" / "style.css", "body {}\n");
        writeText(m_outside / "secret.txt", "secret\n");
        fs::create_directory_symlink(m_outside, m_project / "out");
        fs::create_directory_symlink(m_project / "sub", m_project / "in");
        fs::create_directory_symlink("../..", m_project / "sub" / "up");
        fs::create_symlink(m_outside / "secret.txt", m_project / "secret_link");
        fs::create_symlink("index.html", m_project / "index_link");
        fs::create_symlink(m_dir.path() / "nowhere", m_project / "dangling");
    }

    Workspace open(WorkspaceOptions options = {}) {
        Result<Workspace> ws = Workspace::open(m_project, options);
        EXPECT_TRUE(ws.isOk()) << ws.status().message();
        return std::move(ws).value();
    }

    TempDir m_dir;
    fs::path m_project;
    fs::path m_outside;
};

TEST_F(WorkspaceTest, ResolvesPathsThatStayInsideTheRoot) {
    Workspace ws = open();
    const fs::path root = ws.root();
    const std::vector<std::pair<std::string, fs::path>> good = {
        {"index.html", root / "index.html"},
        {"./index.html", root / "index.html"},
        {"sub/../index.html", root / "index.html"},
        {"sub//style.css", root / "sub" / "style.css"},
        {"new/dir/app.js", root / "new" / "dir" / "app.js"},
        {"in/style.css", root / "in" / "style.css"},  // a symlink to a folder inside
        {"index_link", root / "index_link"},          // a symlink to a file inside
        {"in/../sub/x.css", root / "sub" / "x.css"},
    };
    for (const auto& [relative, expected] : good) {
        Result<fs::path> resolved = ws.resolve(relative);
        ASSERT_TRUE(resolved.isOk()) << relative << ": " << resolved.status().message();
        EXPECT_EQ(*resolved, expected) << relative;
    }
}

TEST_F(WorkspaceTest, RefusesPathsThatLeaveTheRootAndSaysWhy) {
    Workspace ws = open();
    struct Bad {
        std::string path;
        std::string reason;
    };
    const std::vector<Bad> bad = {
        {"", "empty path"},
        {"/etc/passwd", "is absolute"},
        {"../x", "outside the project root"},
        {"a/../../x", "outside the project root"},
        {"sub/../../outside/secret.txt", "outside the project root"},
        {"out/secret.txt", "\"out\" is a symlink to"},
        {"out", "outside the project root"},
        {"secret_link", "\"secret_link\" is a symlink to"},
        {"sub/up/outside/secret.txt", "\"sub/up\" is a symlink to"},
        {"dangling", "resolves to nothing"},
        {std::string("a\0b", 3), "NUL byte"},
        {".", "project root itself"},
        {"sub/..", "project root itself"},
    };
    for (const Bad& b : bad) {
        Result<fs::path> resolved = ws.resolve(b.path);
        ASSERT_FALSE(resolved.isOk()) << b.path << " resolved to " << resolved->string();
        EXPECT_EQ(resolved.status().code(), StatusCode::InvalidArgument) << b.path;
        EXPECT_NE(resolved.status().message().find(b.reason), std::string::npos)
            << b.path << ": " << resolved.status().message();
    }
    // The refused write left the outside untouched.
    EXPECT_FALSE(ws.writeFile("out/secret.txt", "pwned\n").isOk());
    EXPECT_FALSE(ws.writeFile("secret_link", "pwned\n").isOk());
    EXPECT_EQ(readText(m_outside / "secret.txt"), "secret\n");
    EXPECT_EQ(ws.revision(), 0);
}

TEST_F(WorkspaceTest, OpenRefusesAMissingFolderAndAFile) {
    EXPECT_EQ(Workspace::open(m_dir.path() / "missing").status().code(), StatusCode::NotFound);
    EXPECT_EQ(Workspace::open(m_project / "index.html").status().code(),
              StatusCode::InvalidArgument);
}

TEST_F(WorkspaceTest, FileActionsReadWriteAndReplaceWithRevisions) {
    Workspace ws = open();
    ActionResult read = ws.execute(ReadFile{"index.html"});
    ASSERT_TRUE(read.status.isOk()) << read.status.message();
    EXPECT_EQ(read.output, "<h1>hi</h1>\n");
    EXPECT_TRUE(read.changedFiles.empty());

    ActionResult written = ws.execute(WriteFile{"css/site.css", "h1 { color: red; }\n"});
    ASSERT_TRUE(written.status.isOk()) << written.status.message();
    EXPECT_EQ(written.changedFiles, std::vector<std::string>{"css/site.css"});
    EXPECT_EQ(readText(ws.root() / "css" / "site.css"), "h1 { color: red; }\n");
    EXPECT_EQ(ws.revision(), 1);
    EXPECT_EQ(ws.history()[0].changes[0].before, std::nullopt);
    EXPECT_EQ(written.output,
              "--- /dev/null\n+++ b/css/site.css\n@@ -0,0 +1 @@\n+h1 { color: red; }\n");

    ActionResult replaced = ws.execute(ReplaceInFile{"index.html", "hi", "hello"});
    ASSERT_TRUE(replaced.status.isOk()) << replaced.status.message();
    EXPECT_EQ(readText(ws.root() / "index.html"), "<h1>hello</h1>\n");
    EXPECT_EQ(ws.revision(), 2);
    EXPECT_EQ(ws.history()[1].number, 2);
    EXPECT_EQ(ws.history()[1].changes[0].diff,
              "--- a/index.html\n+++ b/index.html\n@@ -1 +1 @@\n-<h1>hi</h1>\n+<h1>hello</h1>\n");

    // Writing what is already there changes nothing and adds no revision.
    ActionResult same = ws.execute(WriteFile{"index.html", "<h1>hello</h1>\n"});
    EXPECT_TRUE(same.status.isOk());
    EXPECT_TRUE(same.changedFiles.empty());
    EXPECT_EQ(ws.revision(), 2);
}

TEST_F(WorkspaceTest, ReplaceNeedsExactlyOneOccurrence) {
    Workspace ws = open();
    ASSERT_TRUE(ws.writeFile("a.txt", "x\nfoo\ny\nfoo\nfoo\n").isOk());
    Status none = ws.replaceInFile("a.txt", "bar", "baz");
    EXPECT_EQ(none.code(), StatusCode::InvalidArgument);
    EXPECT_NE(none.message().find("occurs 0 times"), std::string::npos) << none.message();
    Status many = ws.replaceInFile("a.txt", "foo", "baz");
    EXPECT_NE(many.message().find("occurs 3 times (lines 2, 4, 5)"), std::string::npos)
        << many.message();
    Status overlapping = ws.replaceInFile("a.txt", "o", "0");
    EXPECT_FALSE(overlapping.isOk());
    EXPECT_FALSE(ws.replaceInFile("a.txt", "", "z").isOk());
    EXPECT_EQ(ws.replaceInFile("missing.txt", "a", "b").code(), StatusCode::NotFound);
    EXPECT_EQ(ws.revision(), 1);
    EXPECT_EQ(readText(ws.root() / "a.txt"), "x\nfoo\ny\nfoo\nfoo\n");
}

TEST_F(WorkspaceTest, RefusesInvalidUtf8OversizeFilesAndBinaryReads) {
    WorkspaceOptions options;
    options.maxFileBytes = 64;
    Workspace ws = open(options);
    Status invalid = ws.writeFile("a.txt", std::string("ok \xc3\x28 bad", 9));
    EXPECT_EQ(invalid.code(), StatusCode::InvalidArgument);
    EXPECT_NE(invalid.message().find("byte 3"), std::string::npos) << invalid.message();
    EXPECT_EQ(ws.writeFile("a.txt", std::string(65, 'x')).code(), StatusCode::OutOfRange);
    EXPECT_TRUE(ws.writeFile("a.txt", std::string(64, 'x')).isOk());
    EXPECT_EQ(ws.replaceInFile("a.txt", "x", "yy").code(), StatusCode::InvalidArgument);  // 64 x's

    writeText(m_project / "logo.png", std::string("\x89PNG\r\n\x1a\n\0\0\xff", 11));
    Result<std::string> binary = ws.readFile("logo.png");
    EXPECT_EQ(binary.status().code(), StatusCode::Unsupported);
    EXPECT_NE(binary.status().message().find("logo.png"), std::string::npos);
    EXPECT_EQ(ws.readFile("sub").status().code(), StatusCode::InvalidArgument);  // a folder
    EXPECT_EQ(ws.readFile("nothing.txt").status().code(), StatusCode::NotFound);
}

TEST(Utf8, AcceptsValidTextAndFindsTheFirstBadByte) {
    EXPECT_EQ(utf8::firstInvalid("plain ascii"), std::nullopt);
    EXPECT_EQ(utf8::firstInvalid("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
              std::nullopt);
    EXPECT_EQ(utf8::firstInvalid("ab\xc0\xaf"), 2u);         // overlong '/'
    EXPECT_EQ(utf8::firstInvalid("a\xed\xa0\x80"), 1u);      // a UTF-16 surrogate
    EXPECT_EQ(utf8::firstInvalid("a\xf4\x90\x80\x80"), 1u);  // past U+10FFFF
    EXPECT_EQ(utf8::firstInvalid("abc\xe2\x82"), 3u);        // truncated
    EXPECT_EQ(utf8::firstInvalid("\x80"), 0u);               // stray continuation byte
}

TEST_F(WorkspaceTest, UiActionsAreNotTheWorkspaces) {
    Workspace ws = open();
    EXPECT_EQ(ws.execute(Click{}).status.code(), StatusCode::Unsupported);
}

TEST_F(WorkspaceTest, WritesThroughASymlinkInsideTheRoot) {
    Workspace ws = open();
    ASSERT_TRUE(ws.writeFile("index_link", "<p>via link</p>\n").isOk());
    EXPECT_TRUE(fs::is_symlink(m_project / "index_link"));
    EXPECT_EQ(readText(m_project / "index.html"), "<p>via link</p>\n");
}

TEST_F(WorkspaceTest, SnapshotListsProjectFilesButNotGitOrSymlinks) {
    writeText(m_project / ".git" / "HEAD", "ref: refs/heads/main\n");
    writeText(m_project / "node_modules" / "x" / "index.js", "module.exports = 1;\n");
    writeText(m_project / "img" / "logo.png", std::string("\x89PNG\0\0", 6));
    WorkspaceOptions options;
    options.maxFileBytes = 100;
    writeText(m_project / "big.bin", std::string(101, '\0'));
    Workspace ws = open(options);
    Result<std::vector<ProjectFile>> files = ws.snapshot();
    ASSERT_TRUE(files.isOk()) << files.status().message();
    std::vector<std::string> paths;
    for (const ProjectFile& f : *files)
        paths.push_back(f.path);
    EXPECT_EQ(paths, (std::vector<std::string>{"img/logo.png", "index.html", "sub/style.css"}));
    EXPECT_FALSE((*files)[0].text);
    EXPECT_TRUE((*files)[1].text);
    EXPECT_EQ((*files)[1].size, 12u);
}

TEST_F(WorkspaceTest, RevertToOutOfRangeIsAnError) {
    Workspace ws = open();
    EXPECT_EQ(ws.revertTo(1).code(), StatusCode::OutOfRange);
    EXPECT_EQ(ws.revertTo(-1).code(), StatusCode::OutOfRange);
    EXPECT_TRUE(ws.revertTo(0).isOk());
    EXPECT_EQ(ws.revision(), 0);  // nothing to undo, nothing recorded
}

// Random writes, replacements and reverts checked after every step against a model that keeps
// the whole project state of every revision; then the recorded diffs, applied in order by
// patch(1) to a copy of the original project, must rebuild the final project.
TEST_F(WorkspaceTest, RandomEditsAndRevertsMatchAModelAndTheDiffsReplayWithPatch) {
    using State = std::map<std::string, std::string>;
    const std::vector<std::string> pool = {"index.html", "sub/style.css", "js/app.js", "a/b/c.txt"};
    fs::remove(m_project / "index_link");  // keep the replay copy free of symlinks
    fs::remove(m_project / "secret_link");
    fs::remove(m_project / "dangling");
    fs::remove(m_project / "out");
    fs::remove(m_project / "in");
    fs::remove(m_project / "sub" / "up");
    const fs::path original = m_dir.path() / "original";
    fs::copy(m_project, original, fs::copy_options::recursive);

    Workspace ws = open();
    std::vector<State> states = {{{"index.html", "<h1>hi</h1>\n"}, {"sub/style.css", "body {}\n"}}};
    std::mt19937 rng(99);
    auto randomContent = [&] {
        std::string text;
        const int lines = 1 + static_cast<int>(rng() % 12);
        for (int i = 0; i < lines; ++i)
            text += "line " + std::to_string(rng() % 8) + "\n";
        return text;
    };
    auto checkDisk = [&](const State& state, int step) {
        for (const std::string& path : pool) {
            const fs::path file = ws.root() / path;
            auto it = state.find(path);
            if (it == state.end()) {
                EXPECT_FALSE(fs::exists(file)) << "step " << step << ": " << path;
            } else {
                EXPECT_EQ(readText(file), it->second) << "step " << step << ": " << path;
            }
        }
    };

    for (int step = 0; step < 120; ++step) {
        State next = states.back();
        const std::string& path = pool[rng() % pool.size()];
        const unsigned kind = static_cast<unsigned>(rng() % 10);
        bool changed = false;
        if (kind < 4) {
            const std::string content = randomContent();
            ActionResult r = ws.execute(WriteFile{path, content});
            ASSERT_TRUE(r.status.isOk()) << r.status.message();
            changed = next[path] != content || !states.back().count(path);
            next[path] = content;
            EXPECT_EQ(r.changedFiles.size(), changed ? 1u : 0u);
        } else if (kind < 8) {
            auto it = next.find(path);
            const std::string oldText = "line " + std::to_string(rng() % 8) + "\n";
            const std::string newText = "line " + std::to_string(rng() % 8) + "\n";
            ActionResult r = ws.execute(ReplaceInFile{path, oldText, newText});
            std::size_t occurrences = 0;
            if (it != next.end()) {
                for (std::size_t p = it->second.find(oldText); p != std::string::npos;
                     p = it->second.find(oldText, p + 1)) {
                    ++occurrences;
                }
            }
            EXPECT_EQ(r.status.isOk(), occurrences == 1) << r.status.message();
            if (occurrences == 1) {
                it->second.replace(it->second.find(oldText), oldText.size(), newText);
                changed = oldText != newText;
            }
        } else {
            const int target = static_cast<int>(rng() % states.size());
            ASSERT_TRUE(ws.revertTo(target).isOk());
            next = states[static_cast<std::size_t>(target)];
            changed = next != states.back();
            if (changed) {
                EXPECT_EQ(ws.history().back().description, "revert to " + std::to_string(target));
            }
        }
        if (changed) states.push_back(next);
        ASSERT_EQ(ws.revision() + 1, static_cast<int>(states.size())) << "step " << step;
        checkDisk(states.back(), step);
    }

    const fs::path replay = m_dir.path() / "replay";
    fs::copy(original, replay, fs::copy_options::recursive);
    for (const Revision& revision : ws.history()) {
        for (const FileChange& change : revision.changes) {
            writeText(m_dir.path() / "change.diff", change.diff);
            ASSERT_EQ(run("patch --quiet --force -E -p1 -d " + shellQuote(replay) + " < " +
                          shellQuote(m_dir.path() / "change.diff") + " > /dev/null 2>&1"),
                      0)
                << "revision " << revision.number << ":\n"
                << change.diff;
        }
    }
    for (const std::string& path : pool) {
        EXPECT_EQ(fs::exists(replay / path), fs::exists(ws.root() / path)) << path;
        if (fs::exists(replay / path)) {
            EXPECT_EQ(readText(replay / path), readText(ws.root() / path)) << path;
        }
    }
}

}  // namespace
}  // namespace iris::agent
