#include "agent/env/browser/gui_thread_environment.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>

#include "agent/env/browser/browser_environment.h"
#include "tests/agent/env/browser/browser_test_pages.h"

namespace iris::agent {
namespace {

// Runs the GUI thread's event loop until `done` is set by the worker.
void serveUntil(const std::atomic<bool>& done) {
    while (!done.load()) {
        QEventLoop loop;
        QTimer::singleShot(5, &loop, &QEventLoop::quit);
        loop.exec();
    }
}

TEST(GuiThreadEnvironment, WorkerThreadDrivesTheBrowserOnTheGuiThread) {
    QTemporaryDir site;
    ASSERT_TRUE(site.isValid());
    ASSERT_TRUE(testing::writeTestSite(site));
    BrowserOptions options;
    options.startUrl = site.path().toStdString();
    options.viewportWidth = 640;
    options.viewportHeight = 480;
    Result<std::unique_ptr<BrowserEnvironment>> browser = BrowserEnvironment::create(options);
    ASSERT_TRUE(browser.isOk()) << browser.status().message();
    BrowserEnvironment* raw = browser->get();
    auto env =
        std::make_unique<GuiThreadEnvironment>(std::move(*browser), QCoreApplication::instance());

    // Called directly off the GUI thread, the browser refuses instead of misbehaving.
    Status offThread;
    std::string title;
    Status reset;
    Status clicked;
    Result<Observation> observation = Status::internal("not observed");
    std::string describeText;
    std::atomic<bool> done{false};
    std::thread worker([&] {
        offThread = raw->reset();
        reset = env->reset();
        clicked = env->execute(Click{Point{360, 70}}).status;
        observation = env->observe();
        describeText = env->describe();
        (void)env->runOnGuiThread([&] { title = raw->title(); });
        done = true;
    });
    serveUntil(done);
    worker.join();

    EXPECT_EQ(offThread.code(), StatusCode::Internal);
    EXPECT_NE(offThread.message().find("GuiThreadEnvironment"), std::string::npos);
    EXPECT_TRUE(reset.isOk()) << reset.message();
    EXPECT_TRUE(clicked.isOk()) << clicked.message();
    ASSERT_TRUE(observation.isOk()) << observation.status().message();
    EXPECT_EQ(observation->title, "Clicked");
    EXPECT_EQ(observation->screenshot.cols, 640);
    EXPECT_EQ(describeText, "browser");
    EXPECT_EQ(title, "Clicked");

    // Destroyed from a worker, the browser is deleted on the GUI thread.
    done = false;
    std::thread destroyer([&] {
        env.reset();
        done = true;
    });
    serveUntil(done);
    destroyer.join();
}

TEST(GuiThreadEnvironment, CallsOnTheGuiThreadRunDirectly) {
    QTemporaryDir site;
    ASSERT_TRUE(site.isValid());
    ASSERT_TRUE(testing::writeTestSite(site));
    BrowserOptions options;
    options.startUrl = site.path().toStdString();
    options.viewportWidth = 320;
    options.viewportHeight = 240;
    Result<std::unique_ptr<BrowserEnvironment>> browser = BrowserEnvironment::create(options);
    ASSERT_TRUE(browser.isOk()) << browser.status().message();
    GuiThreadEnvironment env(std::move(*browser), QCoreApplication::instance());
    ASSERT_TRUE(env.reset().isOk());
    Result<Observation> observation = env.observe();
    ASSERT_TRUE(observation.isOk()) << observation.status().message();
    EXPECT_EQ(observation->screenshot.rows, 240);
}

}  // namespace
}  // namespace iris::agent
