#include "agent/env/browser/browser_environment.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include <QDir>
#include <QTemporaryDir>
#include <QUrl>

#include "tests/agent/env/browser/browser_test_pages.h"

namespace iris::agent {
namespace {

constexpr int kWidth = 800;
constexpr int kHeight = 600;

class BrowserEnvironmentTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(m_site.isValid());
        ASSERT_TRUE(testing::writeTestSite(m_site));
    }

    std::unique_ptr<BrowserEnvironment> open(BrowserOptions options = {}) {
        if (options.startUrl.empty()) options.startUrl = m_site.path().toStdString();
        options.viewportWidth = kWidth;
        options.viewportHeight = kHeight;
        options.settleTimeoutMs = 20000;
        Result<std::unique_ptr<BrowserEnvironment>> env = BrowserEnvironment::create(options);
        EXPECT_TRUE(env.isOk()) << env.status().message();
        if (!env.isOk()) return nullptr;
        const Status reset = (*env)->reset();
        EXPECT_TRUE(reset.isOk()) << reset.message();
        return std::move(*env);
    }

    static void act(BrowserEnvironment& env, const Action& action) {
        const ActionResult result = env.execute(action);
        ASSERT_TRUE(result.status.isOk()) << describe(action) << ": " << result.status.message();
    }

    static std::string js(BrowserEnvironment& env, const std::string& script) {
        Result<std::string> value = env.evaluateJavaScript(script);
        EXPECT_TRUE(value.isOk()) << script << ": " << value.status().message();
        return value.isOk() ? *value : std::string("<error>");
    }

    static Observation look(BrowserEnvironment& env) {
        Result<Observation> observation = env.observe();
        EXPECT_TRUE(observation.isOk()) << observation.status().message();
        return observation.isOk() ? std::move(*observation) : Observation{};
    }

    QString sitePath(const char* name) const {
        return QDir(m_site.path()).filePath(QString::fromUtf8(name));
    }

    QTemporaryDir m_site;
};

cv::Vec3b pixel(const cv::Mat& image, int x, int y) {
    return image.at<cv::Vec3b>(y, x);
}

const cv::Vec3b kWhite(255, 255, 255);
const cv::Vec3b kBlockBgr(60, 30, 200);  // rgb(200, 30, 60)

TEST_F(BrowserEnvironmentTest, ScreenshotIsTheViewportAndCssPixelsLandOnTheirCoordinates) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    const Observation o = look(*env);
    ASSERT_EQ(o.screenshot.type(), CV_8UC3);
    EXPECT_EQ(o.screenshot.cols, kWidth);
    EXPECT_EQ(o.screenshot.rows, kHeight);
    EXPECT_EQ(o.devicePixelRatio, 1.0);
    // The block covers x 100..179, y 50..109: its corners are inside, their neighbours outside.
    EXPECT_EQ(pixel(o.screenshot, 140, 80), kBlockBgr);
    EXPECT_EQ(pixel(o.screenshot, 100, 50), kBlockBgr);
    EXPECT_EQ(pixel(o.screenshot, 179, 109), kBlockBgr);
    EXPECT_EQ(pixel(o.screenshot, 99, 50), kWhite);
    EXPECT_EQ(pixel(o.screenshot, 100, 49), kWhite);
    EXPECT_EQ(pixel(o.screenshot, 180, 109), kWhite);
    EXPECT_EQ(pixel(o.screenshot, 179, 110), kWhite);
}

TEST_F(BrowserEnvironmentTest, ObservationCarriesUrlTitleAndPageText) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    const Observation o = look(*env);
    EXPECT_EQ(o.title, "Start");
    EXPECT_EQ(o.url, QUrl::fromLocalFile(sitePath("index.html")).toString().toStdString());
    EXPECT_NE(o.text.find("Visible words"), std::string::npos) << o.text;
    EXPECT_NE(o.text.find("Press me"), std::string::npos) << o.text;
    EXPECT_GT(o.capturedAtMs, 0);
    EXPECT_EQ(env->describe(), "browser");
}

TEST_F(BrowserEnvironmentTest, ClickOnTheButtonRunsItsHandler) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Click{Point{360, 70}});
    EXPECT_EQ(look(*env).title, "Clicked");
}

TEST_F(BrowserEnvironmentTest, DoubleClickFiresDblclickAndSeparateClicksDoNot) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Click{Point{500, 70}});
    act(*env, Click{Point{500, 70}});
    EXPECT_EQ(js(*env, "[window.clicks, window.dblclicks]"), "[2,0]");
    act(*env, Click{Point{500, 70}, MouseButton::Left, 2});
    EXPECT_EQ(js(*env, "[window.clicks, window.dblclicks]"), "[4,1]");
    EXPECT_EQ(js(*env, "window.pressDetails"), "[1,1,1,2]");
}

TEST_F(BrowserEnvironmentTest, TypedUnicodeTextLandsInTheInputExactly) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Click{Point{150, 162}});
    act(*env, TypeText{"Hello, wörld!"});
    EXPECT_EQ(js(*env, "document.getElementById('name').value"), "\"Hello, wörld!\"");
}

TEST_F(BrowserEnvironmentTest, TypedTextBeyondLatin1AndKeyChordsWithShiftWork) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Click{Point{150, 162}});
    act(*env, TypeText{"日本 € 😀"});
    act(*env, PressKeys{{"shift", "x"}});
    EXPECT_EQ(js(*env, "document.getElementById('name').value"), "\"日本 € 😀X\"");
}

TEST_F(BrowserEnvironmentTest, CtrlAThenTypingReplacesTheInputText) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Click{Point{150, 162}});
    act(*env, TypeText{"first text"});
    act(*env, PressKeys{{"ctrl", "a"}});
    act(*env, TypeText{"Second"});
    EXPECT_EQ(js(*env, "document.getElementById('name').value"), "\"Second\"");
}

TEST_F(BrowserEnvironmentTest, EnterSubmitsTheForm) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Click{Point{150, 162}});
    act(*env, TypeText{"abc"});
    act(*env, PressKeys{{"enter"}});
    EXPECT_EQ(look(*env).title, "Submitted:abc");
}

TEST_F(BrowserEnvironmentTest, TextareaTakesNewlinesAndBackspace) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Click{Point{200, 240}});
    act(*env, TypeText{"line one\nline twoo"});
    act(*env, PressKeys{{"backspace"}});
    EXPECT_EQ(js(*env, "document.getElementById('area').value"), "\"line one\\nline two\"");
}

TEST_F(BrowserEnvironmentTest, RightClickReachesThePageWithoutAQtMenu) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Click{Point{600, 350}, MouseButton::Right});
    EXPECT_EQ(js(*env, "window.menus"), "[[600,350]]");
    act(*env, Click{Point{360, 70}});  // the page still takes input afterwards
    EXPECT_EQ(look(*env).title, "Clicked");
}

TEST_F(BrowserEnvironmentTest, ScriptDialogsNeverBlockAndNewWindowsOpenInPlace) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Click{Point{360, 515}});
    EXPECT_EQ(look(*env).title, "After dialogs false");
    act(*env, Click{Point{500, 515}});
    EXPECT_EQ(look(*env).title, "Second");
}

TEST_F(BrowserEnvironmentTest, PositiveScrollMovesTowardsTheEndAndNegativeBack) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Scroll{Point{400, 300}, 0, 3});
    look(*env);
    const int down = std::stoi(js(*env, "window.scrollY"));
    EXPECT_GT(down, 0);
    act(*env, Scroll{Point{400, 300}, 0, -1});
    look(*env);
    const int back = std::stoi(js(*env, "window.scrollY"));
    EXPECT_LT(back, down);
    EXPECT_GE(back, 0);
}

TEST_F(BrowserEnvironmentTest, DragPressesMovesAndReleasesWhereAsked) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Drag{Point{520, 320}, Point{680, 380}});
    const std::string events = js(*env, "JSON.stringify(window.padEvents)");
    const std::string first = js(*env, "window.padEvents[0]");
    const std::string last = js(*env, "window.padEvents[window.padEvents.length - 1]");
    EXPECT_EQ(first, "[\"mousedown\",520,320]") << events;
    EXPECT_EQ(last, "[\"mouseup\",680,380]") << events;
    EXPECT_GE(std::stoi(js(*env, "window.padEvents.filter(e => e[0] === 'mousemove').length")), 3)
        << events;
}

TEST_F(BrowserEnvironmentTest, SeparateMoveDownMoveUpActionsMakeADrag) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, MoveTo{Point{510, 310}});
    act(*env, MouseDown{});
    act(*env, MoveTo{Point{600, 350}});
    act(*env, MouseUp{});
    EXPECT_EQ(js(*env, "JSON.stringify(window.padEvents)"),
              R"("[[\"mousedown\",510,310],[\"mousemove\",600,350],[\"mouseup\",600,350]]")");
}

TEST_F(BrowserEnvironmentTest, HeldModifierKeysApplyToLaterKeys) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Click{Point{150, 162}});
    act(*env, KeyDown{"shift"});
    act(*env, PressKeys{{"a"}});
    act(*env, KeyUp{"shift"});
    act(*env, PressKeys{{"b"}});
    EXPECT_EQ(js(*env, "document.getElementById('name').value"), "\"Ab\"");
    act(*env, KeyDown{"ctrl"});
    act(*env, PressKeys{{"a"}});
    act(*env, KeyUp{"ctrl"});
    act(*env, PressKeys{{"delete"}});
    EXPECT_EQ(js(*env, "document.getElementById('name').value"), "\"\"");
}

TEST_F(BrowserEnvironmentTest, WaitLetsTimersRunAndRefusesBadDurations) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    js(*env, "window.fired = false; setTimeout(() => { window.fired = true; }, 150); true");
    act(*env, Wait{0.4});
    EXPECT_EQ(js(*env, "window.fired"), "true");
    EXPECT_EQ(env->execute(Wait{-1}).status.code(), StatusCode::InvalidArgument);
}

TEST_F(BrowserEnvironmentTest, DragMovesASliderToItsEnd) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Drag{Point{106, 330}, Point{299, 330}});
    EXPECT_EQ(js(*env, "document.getElementById('slider').value"), "\"100\"");
}

TEST_F(BrowserEnvironmentTest, NavigateLoadsRelativeAndAbsoluteUrls) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Navigate{"second.html"});
    Observation o = look(*env);
    EXPECT_EQ(o.title, "Second");
    EXPECT_EQ(o.url, QUrl::fromLocalFile(sitePath("second.html")).toString().toStdString());
    EXPECT_NE(o.text.find("The second page"), std::string::npos);
    act(*env, Navigate{QUrl::fromLocalFile(sitePath("index.html")).toString().toStdString()});
    EXPECT_EQ(look(*env).title, "Start");
    act(*env, Navigate{"/second.html"});  // the project's root, not the disk's
    EXPECT_EQ(env->title(), "Second");
}

TEST_F(BrowserEnvironmentTest, TheSamePageRendersPixelIdenticallyInFreshEnvironments) {
    cv::Mat first;
    for (int run = 0; run < 3; ++run) {
        auto env = open();
        ASSERT_NE(env, nullptr);
        const cv::Mat shot = look(*env).screenshot;
        ASSERT_FALSE(shot.empty());
        if (run == 0) {
            first = shot;
            continue;
        }
        cv::Mat difference;
        cv::absdiff(first, shot, difference);
        EXPECT_EQ(cv::countNonZero(difference.reshape(1)), 0) << "run " << run;
    }
}

TEST_F(BrowserEnvironmentTest, FullPageScreenshotIsAsTallAsTheDocumentAndRestoresTheView) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    act(*env, Scroll{Point{400, 300}, 0, 2});
    look(*env);
    const std::string scrolled = js(*env, "window.scrollY");
    Result<cv::Mat> full = env->fullPageScreenshot();
    ASSERT_TRUE(full.isOk()) << full.status().message();
    EXPECT_EQ(full->cols, kWidth);
    EXPECT_EQ(full->rows, std::stoi(js(*env, "document.documentElement.scrollHeight")));
    EXPECT_EQ(full->rows, testing::kDocumentHeight);
    EXPECT_EQ(pixel(*full, 140, 80), kBlockBgr);  // document coordinates, not scrolled ones
    const Observation after = look(*env);
    EXPECT_EQ(after.screenshot.rows, kHeight);
    EXPECT_EQ(js(*env, "window.scrollY"), scrolled);

    BrowserOptions fullPage;
    fullPage.fullPageScreenshots = true;
    auto fullEnv = open(fullPage);
    ASSERT_NE(fullEnv, nullptr);
    EXPECT_EQ(look(*fullEnv).screenshot.rows, testing::kDocumentHeight);
}

TEST_F(BrowserEnvironmentTest, ReloadPicksUpAStylesheetEditedOnDisk) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    EXPECT_EQ(pixel(look(*env).screenshot, 140, 80), kBlockBgr);
    ASSERT_TRUE(testing::writeFile(sitePath("style.css"), testing::stylesheet(10, 120, 240)));
    ASSERT_TRUE(env->reload().isOk());
    EXPECT_EQ(pixel(look(*env).screenshot, 140, 80), cv::Vec3b(240, 120, 10));
}

TEST_F(BrowserEnvironmentTest, ResetStartsOverWithAFreshProfile) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    js(*env, "localStorage.setItem('kept', 'yes'); true");
    EXPECT_EQ(js(*env, "localStorage.getItem('kept')"), "\"yes\"");
    act(*env, Navigate{"second.html"});
    ASSERT_TRUE(env->reset().isOk());
    EXPECT_EQ(env->title(), "Start");
    EXPECT_EQ(js(*env, "localStorage.getItem('kept')"), "null");
}

TEST_F(BrowserEnvironmentTest, EvaluateJavaScriptReturnsJsonAndReportsExceptions) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    EXPECT_EQ(js(*env, "({a: [1, 'x', null], b: true})"), R"({"a":[1,"x",null],"b":true})");
    EXPECT_EQ(js(*env, "undefined"), "null");
    EXPECT_EQ(js(*env, "const n = 6; n * 7"), "42");
    Result<std::string> thrown = env->evaluateJavaScript("throw new Error('boom')");
    ASSERT_FALSE(thrown.isOk());
    EXPECT_NE(thrown.status().message().find("boom"), std::string::npos);
}

TEST_F(BrowserEnvironmentTest, BadActionsAreRefusedWithTheReason) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    ActionResult unknown = env->execute(PressKeys{{"ctrl", "hyperkey"}});
    EXPECT_EQ(unknown.status.code(), StatusCode::InvalidArgument);
    EXPECT_NE(unknown.status.message().find("hyperkey"), std::string::npos);
    EXPECT_EQ(env->execute(KeyDown{"nokey"}).status.code(), StatusCode::InvalidArgument);
    EXPECT_EQ(env->execute(WriteFile{"a.html", "x"}).status.code(), StatusCode::Unsupported);
    EXPECT_EQ(env->execute(ReadFile{"a.html"}).status.code(), StatusCode::Unsupported);
    ActionResult outside = env->execute(Click{Point{kWidth + 5.0, 10}});
    EXPECT_EQ(outside.status.code(), StatusCode::InvalidArgument);
    EXPECT_NE(outside.status.message().find("viewport"), std::string::npos);
    EXPECT_EQ(env->execute(Click{Point{10, 10}, MouseButton::Left, 4}).status.code(),
              StatusCode::InvalidArgument);
    EXPECT_EQ(env->execute(Navigate{"javascript:alert(1)"}).status.code(),
              StatusCode::InvalidArgument);
    EXPECT_EQ(env->execute(Navigate{"missing.html"}).status.code(), StatusCode::IoError);
    EXPECT_TRUE(env->execute(Done{"ok"}).status.isOk());
}

TEST_F(BrowserEnvironmentTest, FunctionKeysAndNamedKeysAreKnown) {
    auto env = open();
    ASSERT_NE(env, nullptr);
    for (const char* name : {"f1", "f12", "F24", "esc", "escape", "pageup", "pgdn", "home", "end",
                             "tab", "win", "cmd", "alt", "shift", "space", ",", "7"}) {
        EXPECT_TRUE(env->execute(PressKeys{{name}}).status.isOk()) << name;
    }
    EXPECT_EQ(env->execute(PressKeys{{"f25"}}).status.code(), StatusCode::InvalidArgument);
}

TEST_F(BrowserEnvironmentTest, StartsFromAFileUrlOrAFilePath) {
    BrowserOptions byUrl;
    byUrl.startUrl = QUrl::fromLocalFile(sitePath("second.html")).toString().toStdString();
    auto fromUrl = open(byUrl);
    ASSERT_NE(fromUrl, nullptr);
    EXPECT_EQ(fromUrl->title(), "Second");
    BrowserOptions byPath;
    byPath.startUrl = sitePath("second.html").toStdString();
    auto fromPath = open(byPath);
    ASSERT_NE(fromPath, nullptr);
    EXPECT_EQ(fromPath->title(), "Second");
    act(*fromPath, Navigate{"index.html"});  // resolved in the start file's folder
    EXPECT_EQ(fromPath->title(), "Start");
}

TEST(BrowserEnvironmentCreate, RejectsBadOptionsNamingTheProblem) {
    QTemporaryDir empty;
    ASSERT_TRUE(empty.isValid());
    auto status = [](std::string startUrl, int width = 1280) {
        BrowserOptions options;
        options.startUrl = std::move(startUrl);
        options.viewportWidth = width;
        return BrowserEnvironment::create(std::move(options)).status();
    };
    const Status noIndex = status(empty.path().toStdString());
    EXPECT_EQ(noIndex.code(), StatusCode::NotFound);
    EXPECT_NE(noIndex.message().find("index.html"), std::string::npos);
    EXPECT_EQ(status("/no/such/folder").code(), StatusCode::NotFound);
    const Status noIndexUrl = status(QUrl::fromLocalFile(empty.path()).toString().toStdString());
    EXPECT_EQ(noIndexUrl.code(), StatusCode::NotFound);
    EXPECT_NE(noIndexUrl.message().find("index.html"), std::string::npos);
    EXPECT_EQ(status("").code(), StatusCode::InvalidArgument);
    EXPECT_EQ(status("ftp://example.com/").code(), StatusCode::InvalidArgument);
    EXPECT_EQ(status("about:config").code(), StatusCode::InvalidArgument);
    EXPECT_TRUE(status("about:blank").isOk());  // where an evaluation task without a project starts
    const Status zero = status("https://example.com/", 0);
    EXPECT_EQ(zero.code(), StatusCode::InvalidArgument);
    EXPECT_NE(zero.message().find("viewport"), std::string::npos);
}

}  // namespace
}  // namespace iris::agent
