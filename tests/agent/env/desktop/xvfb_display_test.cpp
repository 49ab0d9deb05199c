#include "agent/env/desktop/xvfb_display.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/env/desktop/child_process.h"
#include "agent/env/desktop/x_connection.h"

namespace iris::agent {
namespace {

// True when this process has no children left, running or unreaped.
bool noChildrenLeft() {
    int status = 0;
    return ::waitpid(-1, &status, WNOHANG) == -1 && errno == ECHILD;
}

TEST(XvfbDisplay, StartsAndStopsWithNoLeftoverProcess) {
    if (!findExecutable("Xvfb")) GTEST_SKIP() << "Xvfb is not installed (Debian: xvfb)";
    XvfbOptions options;
    options.width = 320;
    options.height = 240;
    pid_t server = 0;
    {
        Result<std::unique_ptr<XvfbDisplay>> display = XvfbDisplay::start(options);
        ASSERT_TRUE(display) << display.status().message();
        server = (*display)->serverPid();
        EXPECT_EQ((*display)->name(), ":" + std::to_string((*display)->number()));
        EXPECT_EQ(::kill(server, 0), 0);
        EXPECT_TRUE(
            std::filesystem::exists("/tmp/.X11-unix/X" + std::to_string((*display)->number())));
        ASSERT_EQ((*display)->monitors().size(), 1u);
        EXPECT_EQ((*display)->monitors()[0], (Monitor{0, 0, 320, 240}));
        EXPECT_TRUE((*display)->running());
    }
    EXPECT_EQ(::kill(server, 0), -1);  // gone and reaped: not even a zombie
    EXPECT_EQ(errno, ESRCH);
    EXPECT_TRUE(noChildrenLeft());
}

TEST(XConnection, ALostServerIsAnErrorNotAnExit) {
    if (!findExecutable("Xvfb")) GTEST_SKIP() << "Xvfb is not installed (Debian: xvfb)";
    XvfbOptions options;
    options.width = 64;
    options.height = 48;
    options.windowManager = false;
    Result<std::unique_ptr<XvfbDisplay>> display = XvfbDisplay::start(options);
    ASSERT_TRUE(display) << display.status().message();
    Result<std::unique_ptr<XConnection>> connection = XConnection::open((*display)->name());
    ASSERT_TRUE(connection) << connection.status().message();
    ASSERT_TRUE((*connection)->capture({0, 0, 64, 48}));

    // An X error is a Status too: a request on a window that does not exist.
    XMapWindow((*connection)->display(), 0x7ffffff);
    Status badWindow = (*connection)->sync("mapping");
    EXPECT_EQ(badWindow.code(), StatusCode::Internal);
    EXPECT_NE(badWindow.message().find("BadWindow"), std::string::npos) << badWindow.message();
    EXPECT_TRUE((*connection)->sync("after").isOk());

    ::kill((*display)->serverPid(), SIGKILL);
    while ((*display)->running())
        ::usleep(1000);
    Result<cv::Mat> image = (*connection)->capture({0, 0, 64, 48});
    ASSERT_FALSE(image);
    EXPECT_EQ(image.status().code(), StatusCode::IoError);
    EXPECT_NE(image.status().message().find("lost"), std::string::npos) << image.status().message();
    EXPECT_EQ((*connection)->sync("again").code(), StatusCode::IoError);
}

TEST(XvfbDisplay, ReportsAMissingXvfbByName) {
    const char* saved = std::getenv("PATH");
    std::string path = saved != nullptr ? saved : "";
    ::setenv("PATH", "/nonexistent-iris-test", 1);
    Result<std::unique_ptr<XvfbDisplay>> display = XvfbDisplay::start(XvfbOptions{});
    ::setenv("PATH", path.c_str(), 1);
    ASSERT_FALSE(display);
    EXPECT_EQ(display.status().code(), StatusCode::NotFound);
    EXPECT_EQ(display.status().message(), "Xvfb not found; install the xvfb package");
}

TEST(XvfbDisplay, RejectsImpossibleSizes) {
    XvfbOptions options;
    options.width = 0;
    Result<std::unique_ptr<XvfbDisplay>> display = XvfbDisplay::start(options);
    ASSERT_FALSE(display);
    EXPECT_EQ(display.status().code(), StatusCode::InvalidArgument);
}

TEST(ChildProcess, StopsAProcessThatIgnoresSigterm) {
    SpawnOptions options;
    // The test's own command line: a shell that ignores SIGTERM and a grandchild in its group.
    options.argv = {"/bin/sh", "-c", "trap '' TERM; sleep 30 & wait"};
    Result<std::unique_ptr<ChildProcess>> child = ChildProcess::spawn(options);
    ASSERT_TRUE(child) << child.status().message();
    ::usleep(100 * 1000);
    EXPECT_TRUE((*child)->running());
    (*child)->stop(std::chrono::milliseconds(200));
    ASSERT_TRUE((*child)->waitStatus());
    EXPECT_TRUE(WIFSIGNALED(*(*child)->waitStatus()));
    EXPECT_FALSE((*child)->running());
    EXPECT_TRUE(noChildrenLeft());
}

TEST(ChildProcess, ReportsAMissingProgram) {
    SpawnOptions options;
    options.argv = {"iris-no-such-program"};
    Result<std::unique_ptr<ChildProcess>> child = ChildProcess::spawn(options);
    ASSERT_FALSE(child);
    EXPECT_EQ(child.status().code(), StatusCode::NotFound);
    EXPECT_NE(child.status().message().find("iris-no-such-program"), std::string::npos);
}

}  // namespace
}  // namespace iris::agent
