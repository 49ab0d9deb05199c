#include "agent/env/desktop/desktop_environment.h"

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "agent/env/desktop/child_process.h"
#include "agent/env/desktop/x11.h"  // the test's own Xlib client
#include "agent/env/desktop/xvfb_display.h"
#include "base/clock.h"
#include "tests/agent/env/desktop/desktop_contract.h"
#include "tests/inference/models/scratch_dir.h"

namespace iris::agent {
namespace {

using std::chrono::milliseconds;

// A plain Xlib client on the environment's display: one override-redirect window at a known
// place that records what XTest input reaches it.
class TestWindow {
public:
    TestWindow(const std::string& display, int x, int y, int width, int height) {
        m_display = XOpenDisplay(display.c_str());
        if (m_display == nullptr) return;
        XSetWindowAttributes attributes{};
        attributes.override_redirect = True;  // placed exactly where asked, WM or not
        attributes.background_pixel = BlackPixel(m_display, DefaultScreen(m_display));
        attributes.event_mask = ExposureMask | StructureNotifyMask | ButtonPressMask |
                                ButtonReleaseMask | KeyPressMask | KeyReleaseMask;
        m_window = XCreateWindow(m_display, DefaultRootWindow(m_display), x, y,
                                 static_cast<unsigned>(width), static_cast<unsigned>(height), 0,
                                 CopyFromParent, InputOutput, CopyFromParent,
                                 CWOverrideRedirect | CWBackPixel | CWEventMask, &attributes);
        XStoreName(m_display, m_window, "iris test window");
        XMapRaised(m_display, m_window);
        // Bounded: a test fails rather than hangs when the window never shows.
        XEvent event;
        auto deadline = Clock::now() + milliseconds(5000);
        bool exposed = false;
        while (!exposed && Clock::now() < deadline) {
            if (XCheckWindowEvent(m_display, m_window, ExposureMask | StructureNotifyMask,
                                  &event)) {
                exposed = event.type == Expose;
            } else {
                std::this_thread::sleep_for(milliseconds(2));
            }
        }
        m_exposed = exposed;
        XSetInputFocus(m_display, m_window, RevertToParent, CurrentTime);
        XSync(m_display, False);
    }
    ~TestWindow() {
        if (m_display != nullptr) XCloseDisplay(m_display);
    }
    TestWindow(const TestWindow&) = delete;
    TestWindow& operator=(const TestWindow&) = delete;

    bool ok() const { return m_display != nullptr && m_exposed; }
    Display* display() const { return m_display; }
    Window window() const { return m_window; }

    // Fills a rectangle with a 0xRRGGBB colour (TrueColor, depth 24).
    void fill(int x, int y, int width, int height, unsigned long rgb) {
        GC gc = XCreateGC(m_display, m_window, 0, nullptr);
        XSetForeground(m_display, gc, rgb);
        XFillRectangle(m_display, m_window, gc, x, y, static_cast<unsigned>(width),
                       static_cast<unsigned>(height));
        XFreeGC(m_display, gc);
        XSync(m_display, False);
    }

    struct Received {
        XEvent event;
        KeySym keysym = 0;  // key events: looked up when the event arrived
        std::string text;
    };

    // Input events of `type` until `count` have arrived, a key with keysym `until` has, or two
    // seconds have passed. Keymap changes are applied as they come and keys looked up on
    // arrival, as every X client does.
    std::vector<Received> received(int type, std::size_t count, KeySym until = NoSymbol) {
        std::vector<Received> result;
        auto deadline = Clock::now() + milliseconds(2000);
        while (result.size() < count && Clock::now() < deadline) {
            if (XPending(m_display) == 0) {
                std::this_thread::sleep_for(milliseconds(2));
                continue;
            }
            Received item;
            XNextEvent(m_display, &item.event);
            if (item.event.type == MappingNotify) XRefreshKeyboardMapping(&item.event.xmapping);
            if (item.event.type != type) continue;
            if (type == KeyPress || type == KeyRelease) {
                char buffer[16] = {};
                int length =
                    XLookupString(&item.event.xkey, buffer, sizeof(buffer), &item.keysym, nullptr);
                item.text.assign(buffer, static_cast<std::size_t>(std::max(length, 0)));
            }
            bool last = until != NoSymbol && item.keysym == until;
            result.push_back(std::move(item));
            if (last) break;
        }
        return result;
    }

    std::vector<XEvent> events(int type, std::size_t count) {
        std::vector<XEvent> result;
        for (Received& item : received(type, count))
            result.push_back(item.event);
        return result;
    }

private:
    Display* m_display = nullptr;
    Window m_window = 0;
    bool m_exposed = false;
};

bool noChildrenLeft() {
    int status = 0;
    return ::waitpid(-1, &status, WNOHANG) == -1 && errno == ECHILD;
}

class DesktopEnvironmentTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!findExecutable("Xvfb")) GTEST_SKIP() << "Xvfb is not installed (Debian: xvfb)";
    }

    std::unique_ptr<DesktopEnvironment> start(DesktopOptions options) {
        options.privateDisplay = true;
        options.windowManager = false;  // deterministic placement and focus
        options.settleTime = milliseconds(0);
        Result<std::unique_ptr<DesktopEnvironment>> environment =
            DesktopEnvironment::create(options);
        EXPECT_TRUE(environment) << environment.status().message();
        return environment ? std::move(*environment) : nullptr;
    }

    static DesktopOptions size(int width, int height) {
        DesktopOptions options;
        options.width = width;
        options.height = height;
        return options;
    }
};

TEST_F(DesktopEnvironmentTest, ScreenshotHasTheConfiguredSize) {
    auto environment = start(size(640, 480));
    ASSERT_TRUE(environment);
    Result<Observation> observation = environment->observe();
    ASSERT_TRUE(observation) << observation.status().message();
    EXPECT_EQ(observation->screenshot.cols, 640);
    EXPECT_EQ(observation->screenshot.rows, 480);
    EXPECT_EQ(observation->screenshot.type(), CV_8UC3);
    EXPECT_EQ(observation->devicePixelRatio, 1.0);
    EXPECT_EQ(observation->origin, (Point{0, 0}));
    EXPECT_GT(observation->capturedAtMs, 0);
    EXPECT_EQ(environment->describe(), "desktop" + environment->displayName() + " (private)");
}

TEST_F(DesktopEnvironmentTest, CapturesKnownColoursAtKnownPlaces) {
    auto environment = start(size(640, 480));
    ASSERT_TRUE(environment);
    TestWindow window(environment->displayName(), 100, 50, 120, 80);
    ASSERT_TRUE(window.ok());
    window.fill(0, 0, 40, 80, 0xff0000);   // red
    window.fill(40, 0, 40, 80, 0x00ff00);  // green
    window.fill(80, 0, 40, 80, 0x0000ff);  // blue
    window.fill(0, 70, 120, 10, 0x123456);

    Result<Observation> observation = environment->observe();
    ASSERT_TRUE(observation) << observation.status().message();
    const cv::Mat& image = observation->screenshot;
    auto at = [&](int x, int y) { return image.at<cv::Vec3b>(y, x); };  // B, G, R
    EXPECT_EQ(at(100, 50), cv::Vec3b(0, 0, 255));
    EXPECT_EQ(at(139, 119), cv::Vec3b(0, 0, 255));
    EXPECT_EQ(at(140, 50), cv::Vec3b(0, 255, 0));
    EXPECT_EQ(at(180, 60), cv::Vec3b(255, 0, 0));
    EXPECT_EQ(at(219, 110), cv::Vec3b(255, 0, 0));
    EXPECT_EQ(at(150, 125), cv::Vec3b(0x56, 0x34, 0x12));
    EXPECT_NE(at(220, 60), cv::Vec3b(255, 0, 0));       // just right of the window
    EXPECT_NE(at(99, 60), cv::Vec3b(0, 0, 255));        // just left of it
    EXPECT_EQ(observation->title, "iris test window");  // the focused window's name
}

TEST_F(DesktopEnvironmentTest, ClicksAtHalfScaleLandOnDevicePixels) {
    DesktopOptions options = size(800, 600);
    options.observationScale = 0.5;
    auto environment = start(options);
    ASSERT_TRUE(environment);
    TestWindow window(environment->displayName(), 300, 150, 300, 200);
    ASSERT_TRUE(window.ok());

    Result<Observation> observation = environment->observe();
    ASSERT_TRUE(observation) << observation.status().message();
    EXPECT_EQ(observation->screenshot.cols, 400);
    EXPECT_EQ(observation->screenshot.rows, 300);
    EXPECT_EQ(observation->devicePixelRatio, 2.0);

    // Observation (200, 100) is device (400, 200): (100, 50) inside the window.
    ActionResult result = environment->execute(Click{Point{200, 100}, MouseButton::Left, 1});
    ASSERT_TRUE(result.status.isOk()) << result.status.message();
    result = environment->execute(Click{Point{175.5, 120}, MouseButton::Right, 1});
    ASSERT_TRUE(result.status.isOk()) << result.status.message();
    std::vector<XEvent> presses = window.events(ButtonPress, 2);
    ASSERT_EQ(presses.size(), 2u);
    EXPECT_EQ(presses[0].xbutton.button, 1u);
    EXPECT_EQ(presses[0].xbutton.x_root, 400);
    EXPECT_EQ(presses[0].xbutton.y_root, 200);
    EXPECT_EQ(presses[0].xbutton.x, 100);
    EXPECT_EQ(presses[0].xbutton.y, 50);
    EXPECT_EQ(presses[1].xbutton.button, 3u);
    EXPECT_EQ(presses[1].xbutton.x_root, 351);
    EXPECT_EQ(presses[1].xbutton.y_root, 240);
}

TEST_F(DesktopEnvironmentTest, DoubleClickAndDragPressAndRelease) {
    auto environment = start(size(640, 480));
    ASSERT_TRUE(environment);
    TestWindow window(environment->displayName(), 0, 0, 640, 480);
    ASSERT_TRUE(window.ok());
    ASSERT_TRUE(environment->execute(Click{Point{10, 20}, MouseButton::Left, 2}).status.isOk());
    ASSERT_TRUE(environment->execute(Drag{Point{30, 40}, Point{300, 200}, MouseButton::Middle})
                    .status.isOk());
    std::vector<XEvent> releases = window.events(ButtonRelease, 3);
    ASSERT_EQ(releases.size(), 3u);
    EXPECT_EQ(releases[0].xbutton.x, 10);
    EXPECT_EQ(releases[1].xbutton.y, 20);
    EXPECT_EQ(releases[2].xbutton.button, 2u);
    EXPECT_EQ(releases[2].xbutton.x, 300);
    EXPECT_EQ(releases[2].xbutton.y, 200);
}

TEST_F(DesktopEnvironmentTest, TypesTextWithShiftAndRemappedCharacters) {
    auto environment = start(size(320, 240));
    ASSERT_TRUE(environment);
    TestWindow window(environment->displayName(), 0, 0, 320, 240);
    ASSERT_TRUE(window.ok());

    // '€' has no key on the default US keymap: it goes through a borrowed keycode.
    // Like a real client, the window reads its events while the text is typed.
    const std::string text = "Hello, World! <>\xc3\xa9\xe2\x82\xac";
    std::future<std::vector<TestWindow::Received>> events = std::async(
        std::launch::async, [&window] { return window.received(KeyPress, 100, 0x010020ac); });
    ActionResult result = environment->execute(TypeText{text});
    ASSERT_TRUE(result.status.isOk()) << result.status.message();

    const std::vector<KeySym> expected = {
        XK_H, XK_e, XK_l, XK_l,      XK_o,     XK_comma, XK_space,   XK_W,      XK_o,
        XK_r, XK_l, XK_d, XK_exclam, XK_space, XK_less,  XK_greater, XK_eacute, 0x010020ac};
    std::vector<KeySym> received;
    std::string typed;
    bool shiftOnH = false;
    for (const TestWindow::Received& item : events.get()) {
        if (IsModifierKey(item.keysym)) continue;
        if (item.keysym == XK_H) shiftOnH = (item.event.xkey.state & ShiftMask) != 0;
        received.push_back(item.keysym);
        if (item.keysym < 0x80) typed += item.text;
    }
    EXPECT_EQ(received, expected);
    EXPECT_EQ(typed, "Hello, World! <>");
    EXPECT_TRUE(shiftOnH);
}

TEST_F(DesktopEnvironmentTest, HotkeyArrivesWithItsModifiers) {
    auto environment = start(size(320, 240));
    ASSERT_TRUE(environment);
    TestWindow window(environment->displayName(), 0, 0, 320, 240);
    ASSERT_TRUE(window.ok());
    ActionResult result = environment->execute(PressKeys{{"ctrl", "shift", "t"}});
    ASSERT_TRUE(result.status.isOk()) << result.status.message();
    std::vector<XEvent> presses = window.events(KeyPress, 3);
    ASSERT_EQ(presses.size(), 3u);
    EXPECT_EQ(XLookupKeysym(&presses[0].xkey, 0), static_cast<KeySym>(XK_Control_L));
    EXPECT_EQ(XLookupKeysym(&presses[1].xkey, 0), static_cast<KeySym>(XK_Shift_L));
    EXPECT_EQ(XLookupKeysym(&presses[2].xkey, 0), static_cast<KeySym>(XK_t));
    EXPECT_EQ(presses[2].xkey.state & (ControlMask | ShiftMask), ControlMask | ShiftMask);
    // Released in reverse: t, shift, ctrl.
    std::vector<XEvent> releases = window.events(KeyRelease, 3);
    ASSERT_EQ(releases.size(), 3u);
    EXPECT_EQ(XLookupKeysym(&releases[0].xkey, 0), static_cast<KeySym>(XK_t));
    EXPECT_EQ(XLookupKeysym(&releases[2].xkey, 0), static_cast<KeySym>(XK_Control_L));

    ASSERT_TRUE(environment->execute(KeyDown{"alt"}).status.isOk());
    ASSERT_TRUE(environment->execute(PressKeys{{"f4"}}).status.isOk());
    ASSERT_TRUE(environment->execute(KeyUp{"alt"}).status.isOk());
    std::vector<XEvent> altF4 = window.events(KeyPress, 2);
    ASSERT_EQ(altF4.size(), 2u);
    EXPECT_EQ(XLookupKeysym(&altF4[1].xkey, 0), static_cast<KeySym>(XK_F4));
    EXPECT_NE(altF4[1].xkey.state & Mod1Mask, 0u);
}

TEST_F(DesktopEnvironmentTest, ScrollUsesWheelButtons) {
    auto environment = start(size(320, 240));
    ASSERT_TRUE(environment);
    TestWindow window(environment->displayName(), 0, 0, 320, 240);
    ASSERT_TRUE(window.ok());
    ASSERT_TRUE(environment->execute(Scroll{Point{50, 60}, 0, 2}).status.isOk());
    ASSERT_TRUE(environment->execute(Scroll{std::nullopt, 0, -1}).status.isOk());
    ASSERT_TRUE(environment->execute(Scroll{std::nullopt, 1, 0}).status.isOk());
    ASSERT_TRUE(environment->execute(Scroll{std::nullopt, -1, 0}).status.isOk());
    std::vector<XEvent> presses = window.events(ButtonPress, 5);
    ASSERT_EQ(presses.size(), 5u);
    std::vector<unsigned> buttons;
    for (const XEvent& event : presses)
        buttons.push_back(event.xbutton.button);
    EXPECT_EQ(buttons, (std::vector<unsigned>{5, 5, 4, 7, 6}));
    EXPECT_EQ(presses[0].xbutton.x, 50);
    EXPECT_EQ(presses[0].xbutton.y, 60);
}

TEST_F(DesktopEnvironmentTest, SecondMonitorHasItsOwnSizeAndOrigin) {
    DesktopOptions options = size(400, 300);
    options.monitors = 2;
    options.monitor = 1;
    auto environment = start(options);
    ASSERT_TRUE(environment);
    ASSERT_EQ(environment->monitors().size(), 2u);
    EXPECT_EQ(environment->monitors()[0], (Monitor{0, 0, 400, 300}));
    EXPECT_EQ(environment->monitors()[1], (Monitor{400, 0, 400, 300}));

    TestWindow window(environment->displayName(), 400, 0, 200, 200);
    ASSERT_TRUE(window.ok());
    window.fill(0, 0, 20, 20, 0x00ff00);
    Result<Observation> observation = environment->observe();
    ASSERT_TRUE(observation) << observation.status().message();
    EXPECT_EQ(observation->screenshot.cols, 400);
    EXPECT_EQ(observation->screenshot.rows, 300);
    EXPECT_EQ(observation->origin, (Point{400, 0}));
    EXPECT_EQ(observation->screenshot.at<cv::Vec3b>(5, 5), cv::Vec3b(0, 255, 0));

    ASSERT_TRUE(environment->execute(Click{Point{10, 10}, MouseButton::Left, 1}).status.isOk());
    std::vector<XEvent> presses = window.events(ButtonPress, 1);
    ASSERT_EQ(presses.size(), 1u);
    EXPECT_EQ(presses[0].xbutton.x_root, 410);
    EXPECT_EQ(presses[0].xbutton.y_root, 10);
}

TEST_F(DesktopEnvironmentTest, UsesAnExistingDisplayByName) {
    XvfbOptions xvfb;
    xvfb.width = 300;
    xvfb.height = 200;
    xvfb.windowManager = false;
    Result<std::unique_ptr<XvfbDisplay>> display = XvfbDisplay::start(xvfb);
    ASSERT_TRUE(display) << display.status().message();

    DesktopOptions options;
    options.display = (*display)->name();
    options.settleTime = milliseconds(0);
    Result<std::unique_ptr<DesktopEnvironment>> environment = DesktopEnvironment::create(options);
    ASSERT_TRUE(environment) << environment.status().message();
    EXPECT_EQ((*environment)->describe(), "desktop:" + std::to_string((*display)->number()));

    // A borrowed keycode stays mapped after typing (clients may read the keystroke later) and
    // is restored by reset(). A fresh connection sees the server's current keymap.
    const KeySym euro = 0x010020ac;
    auto euroKeycode = [&] {
        Display* client = XOpenDisplay((*display)->name().c_str());
        KeyCode keycode = XKeysymToKeycode(client, euro);
        XCloseDisplay(client);
        return keycode;
    };
    ASSERT_EQ(euroKeycode(), 0);
    ASSERT_TRUE((*environment)->execute(TypeText{"\xe2\x82\xac"}).status.isOk());
    EXPECT_NE(euroKeycode(), 0);
    ASSERT_TRUE((*environment)->reset().isOk());
    EXPECT_EQ(euroKeycode(), 0);

    EXPECT_EQ((*environment)->displayName(), (*display)->name());  // the same display
    Result<Observation> observation = (*environment)->observe();
    ASSERT_TRUE(observation) << observation.status().message();
    EXPECT_EQ(observation->screenshot.cols, 300);
    EXPECT_EQ(observation->screenshot.rows, 200);
}

TEST_F(DesktopEnvironmentTest, NoDisplayIsAClearError) {
    const char* saved = std::getenv("DISPLAY");
    std::string previous = saved != nullptr ? saved : "";
    ::unsetenv("DISPLAY");
    Result<std::unique_ptr<DesktopEnvironment>> environment =
        DesktopEnvironment::create(DesktopOptions{});
    if (saved != nullptr) ::setenv("DISPLAY", previous.c_str(), 1);
    ASSERT_FALSE(environment);
    EXPECT_EQ(environment.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(environment.status().message().find("$DISPLAY"), std::string::npos);
}

TEST_F(DesktopEnvironmentTest, MissingMonitorIsAnError) {
    DesktopOptions options = size(320, 240);
    options.privateDisplay = true;
    options.windowManager = false;
    options.monitor = 1;
    Result<std::unique_ptr<DesktopEnvironment>> environment = DesktopEnvironment::create(options);
    ASSERT_FALSE(environment);
    EXPECT_EQ(environment.status().code(), StatusCode::OutOfRange);
    EXPECT_NE(environment.status().message().find("monitor 1"), std::string::npos);
}

TEST_F(DesktopEnvironmentTest, RejectsWhatTheDesktopCannotDo) {
    auto environment = start(size(320, 240));
    ASSERT_TRUE(environment);
    testing::expectDesktopRejectsWhatItCannotDo(*environment);

    DesktopOptions badScale = size(320, 240);
    badScale.observationScale = 0;
    EXPECT_FALSE(DesktopEnvironment::create(badScale));
}

TEST_F(DesktopEnvironmentTest, ResetRestartsTheStartCommandAndTheDisplay) {
    const inference::testing::ScratchDir scratch("iris-desktop-reset");
    const std::filesystem::path log = scratch.path() / "starts.log";
    DesktopOptions options = size(320, 240);
    // The test's own command: it records that it started (with the display it got), then stays.
    options.startCommand = {"/bin/sh", "-c",
                            "echo \"$DISPLAY\" >> '" + log.string() + "'; exec sleep 60"};
    // The lines the command has written, once there are `count` (or after two seconds).
    auto linesWhenThere = [&log](std::size_t count) {
        std::vector<std::string> lines;
        auto deadline = Clock::now() + milliseconds(2000);
        do {
            lines.clear();
            std::ifstream in(log);
            for (std::string line; std::getline(in, line);)
                lines.push_back(line);
            if (lines.size() >= count) break;
            std::this_thread::sleep_for(milliseconds(10));
        } while (Clock::now() < deadline);
        return lines;
    };
    {
        auto environment = start(options);
        ASSERT_TRUE(environment);
        std::string firstDisplay = environment->displayName();
        ASSERT_EQ(linesWhenThere(1).size(), 1u);
        ASSERT_TRUE(environment->reset().isOk());
        Result<Observation> observation = environment->observe();
        ASSERT_TRUE(observation) << observation.status().message();
        EXPECT_EQ(observation->screenshot.cols, 320);
        std::vector<std::string> lines = linesWhenThere(2);
        ASSERT_EQ(lines.size(), 2u);
        EXPECT_EQ(lines[0], firstDisplay);
        EXPECT_EQ(lines[1], environment->displayName());
    }
    std::filesystem::remove(log);
    EXPECT_TRUE(noChildrenLeft());  // Xvfb and both commands stopped and reaped
}

}  // namespace
}  // namespace iris::agent
