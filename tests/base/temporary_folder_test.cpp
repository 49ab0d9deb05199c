#include "base/temporary_folder.h"

#include <fstream>

#include <gtest/gtest.h>

namespace iris {
namespace {

namespace fs = std::filesystem;

TEST(TemporaryFolder, EachCallMakesAFreshPrivateFolder) {
    Result<fs::path> a = makeTemporaryFolder("iris-test");
    Result<fs::path> b = makeTemporaryFolder("iris-test");
    ASSERT_TRUE(a && b);
    EXPECT_NE(*a, *b);
    EXPECT_TRUE(fs::is_directory(*a));
    EXPECT_EQ(a->filename().string().rfind("iris-test-", 0), 0u);
    EXPECT_EQ(fs::status(*a).permissions() & fs::perms::all, fs::perms::owner_all);
    fs::remove_all(*a);
    fs::remove_all(*b);
}

TEST(TemporaryFolder, IsRemovedWithItsContentsUnlessReleased) {
    fs::path removed, kept;
    {
        Result<TemporaryFolder> folder = TemporaryFolder::create("iris-test");
        ASSERT_TRUE(folder);
        removed = folder->path();
        std::ofstream(removed / "file.txt") << "x";
        fs::create_directories(removed / "a" / "b");
        TemporaryFolder moved = std::move(*folder);  // the moved-from object owns nothing
        EXPECT_EQ(moved.path(), removed);
    }
    EXPECT_FALSE(fs::exists(removed));
    {
        Result<TemporaryFolder> folder = TemporaryFolder::create("iris-test");
        ASSERT_TRUE(folder);
        kept = folder->release();
    }
    EXPECT_TRUE(fs::is_directory(kept));
    fs::remove_all(kept);
}

TEST(TemporaryFolder, AnUnusableTemporaryDirectoryIsAnErrorNamingIt) {
    const char* old = std::getenv("TMPDIR");
    const std::string saved = old ? old : "";
    setenv("TMPDIR", "/nonexistent/iris-no-such-dir", 1);
    Result<fs::path> folder = makeTemporaryFolder("iris-test");
    if (old)
        setenv("TMPDIR", saved.c_str(), 1);
    else
        unsetenv("TMPDIR");
    ASSERT_FALSE(folder);
    EXPECT_EQ(folder.status().code(), StatusCode::IoError);
    EXPECT_NE(folder.status().message().find("iris-no-such-dir"), std::string::npos)
        << folder.status().message();
}

}  // namespace
}  // namespace iris
