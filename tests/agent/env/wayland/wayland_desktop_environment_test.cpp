#include "agent/env/wayland/wayland_desktop_environment.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "agent/env/desktop/child_process.h"
#include "agent/env/wayland/sway_compositor.h"
#include "agent/env/wayland/wayland_connection.h"
#include "base/clock.h"
#include "ext-image-copy-capture-v1-client-protocol.h"
#include "tests/agent/env/desktop/desktop_contract.h"
#include "tests/agent/env/wayland/fake_compositor.h"
#include "tests/agent/env/wayland/test_pattern.h"
#include "tests/inference/models/scratch_dir.h"

namespace iris::agent {
namespace {

using std::chrono::milliseconds;

// The lines of `file` that start with `prefix` (all when it is empty), once there are `count`
// of them or five seconds have passed.
std::vector<std::string> linesOf(const std::filesystem::path& file, const std::string& prefix,
                                 std::size_t count) {
    std::vector<std::string> lines;
    auto deadline = Clock::now() + milliseconds(5000);
    do {
        lines.clear();
        std::ifstream in(file);
        for (std::string line; std::getline(in, line);) {
            if (prefix.empty() || line.rfind(prefix + " ", 0) == 0 || line == prefix)
                lines.push_back(line);
        }
        if (lines.size() >= count) break;
        std::this_thread::sleep_for(milliseconds(10));
    } while (Clock::now() < deadline);
    return lines;
}

// The test client (wayland_test_client.cpp) on a compositor, and the events it wrote.
class TestClient {
public:
    TestClient(const std::vector<std::string>& environment, int scale,
               const std::filesystem::path& events, const std::string& title = {})
        : m_events(events) {
        SpawnOptions spawn;
        spawn.argv = {IRIS_WAYLAND_TEST_CLIENT, "--scale", std::to_string(scale), "--events",
                      events.string()};
        if (!title.empty()) spawn.argv.insert(spawn.argv.end(), {"--title", title});
        spawn.environment = environment;
        Result<std::unique_ptr<ChildProcess>> child = ChildProcess::spawn(spawn);
        if (child) m_process = std::move(*child);
    }
    // Whether the window is on screen at this size (surface coordinates), within five seconds:
    // the compositor first lets a new window pick its size, then gives it its tile.
    bool drawn(int width, int height) const {
        const std::string wanted = "drawn " + std::to_string(width) + " " + std::to_string(height);
        auto deadline = Clock::now() + milliseconds(5000);
        do {
            for (const std::string& line : linesWith("drawn", 0)) {
                if (line == wanted) return true;
            }
            std::this_thread::sleep_for(milliseconds(10));
        } while (m_process != nullptr && Clock::now() < deadline);
        return false;
    }

    // The event lines starting with `prefix`, once there are `count` (or after five seconds).
    std::vector<std::string> linesWith(const std::string& prefix, std::size_t count) const {
        return linesOf(m_events, prefix, count);
    }

    // The text typed into the client: the UTF-8 of every key press without ctrl.
    std::string typed(std::size_t presses) const {
        std::string text;
        for (const std::string& line : linesWith("key 1", presses)) {
            std::istringstream fields(line);
            std::string key, state, keysym, hex, mods;
            fields >> key >> state >> keysym >> hex >> mods;
            if (hex == "-" || mods.find('C') != std::string::npos) continue;
            for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
                text += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
        }
        return text;
    }

private:
    std::filesystem::path m_events;
    std::unique_ptr<ChildProcess> m_process;
};

class WaylandDesktopEnvironmentTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!findExecutable("sway")) GTEST_SKIP() << "sway is not installed (Debian: sway)";
    }

    std::unique_ptr<WaylandDesktopEnvironment> start(WaylandDesktopOptions options) {
        options.privateCompositor = options.display.empty();
        options.settleTime = milliseconds(0);
        Result<std::unique_ptr<WaylandDesktopEnvironment>> environment =
            WaylandDesktopEnvironment::create(options);
        EXPECT_TRUE(environment) << environment.status().message();
        return environment ? std::move(*environment) : nullptr;
    }

    static WaylandDesktopOptions output(int width, int height, double scale) {
        WaylandDesktopOptions options;
        options.width = width;
        options.height = height;
        options.scale = scale;
        return options;
    }

    // A private sway of these outputs, and the environment on it (`output`, or the whole
    // desktop); both null after a failed assertion.
    struct OnSway {
        std::unique_ptr<SwayCompositor> compositor;
        std::unique_ptr<WaylandDesktopEnvironment> environment;
    };
    OnSway startOnSway(std::vector<SwayOutputOptions> outputs,
                       std::optional<int> output = std::nullopt) {
        SwayOptions sway;
        sway.outputs = std::move(outputs);
        Result<std::unique_ptr<SwayCompositor>> compositor = SwayCompositor::start(sway);
        EXPECT_TRUE(compositor) << compositor.status().message();
        if (!compositor) return {};
        WaylandDesktopOptions options;
        options.display = (*compositor)->socketPath();
        options.output = output;
        auto environment = start(options);
        return {std::move(*compositor), std::move(environment)};
    }

    // The test client's window on that output of the compositor (sway opens it on the focused
    // one), its events in `events`.
    std::unique_ptr<TestClient> clientOn(SwayCompositor& compositor, const char* output, int scale,
                                         const char* events) {
        EXPECT_TRUE(compositor.command(std::string("focus output ") + output).isOk());
        return std::make_unique<TestClient>(compositor.clientEnvironment(), scale,
                                            m_scratch.path() / events);
    }

    std::unique_ptr<TestClient> client(const WaylandDesktopEnvironment& environment, int scale) {
        return std::make_unique<TestClient>(environment.privateCompositor()->clientEnvironment(),
                                            scale, m_scratch.path() / "events.txt");
    }

    // Puts the pointer over the client's window, which then hides it (captures show the pointer).
    static void hidePointer(WaylandDesktopEnvironment& environment, const TestClient& window) {
        ASSERT_TRUE(environment.execute(MoveTo{Point{1, 1}}).status.isOk());
        ASSERT_FALSE(window.linesWith("enter", 1).empty());
    }

    // Pixels of `image` that differ from the pattern the client drew.
    static int mismatches(const cv::Mat& image) {
        int wrong = 0;
        for (int y = 0; y < image.rows; ++y) {
            for (int x = 0; x < image.cols; ++x) {
                testing::Rgb rgb = testing::patternAt(x, y);
                if (image.at<cv::Vec3b>(y, x) == cv::Vec3b(rgb.b, rgb.g, rgb.r)) continue;
                if (wrong++ < 5) {
                    cv::Vec3b got = image.at<cv::Vec3b>(y, x);
                    ADD_FAILURE() << "(" << x << ", " << y << ") is BGR " << int{got[0]} << " "
                                  << int{got[1]} << " " << int{got[2]} << ", drawn " << int{rgb.b}
                                  << " " << int{rgb.g} << " " << int{rgb.r};
                }
            }
        }
        return wrong;
    }

    inference::testing::ScratchDir m_scratch{"iris-wayland-test"};
};

TEST_F(WaylandDesktopEnvironmentTest, CaptureEqualsTheDrawnPixelsAtScaleOne) {
    auto environment = start(output(640, 480, 1));
    ASSERT_TRUE(environment);
    auto window = client(*environment, 1);
    ASSERT_TRUE(window->drawn(640, 480));
    hidePointer(*environment, *window);
    Result<Observation> observation = environment->observe();
    ASSERT_TRUE(observation) << observation.status().message();
    EXPECT_EQ(observation->screenshot.cols, 640);
    EXPECT_EQ(observation->screenshot.rows, 480);
    EXPECT_EQ(observation->screenshot.type(), CV_8UC3);
    EXPECT_EQ(observation->devicePixelRatio, 1.0);
    EXPECT_EQ(mismatches(observation->screenshot), 0);
    EXPECT_EQ(environment->outputName(), "HEADLESS-1");
    EXPECT_NE(environment->describe().find("HEADLESS-1 (private)"), std::string::npos);
}

TEST_F(WaylandDesktopEnvironmentTest, CaptureEqualsTheDrawnPixelsAtScaleTwo) {
    auto environment = start(output(800, 600, 2));
    ASSERT_TRUE(environment);
    auto window = client(*environment, 2);
    // The window is 400x300 surface coordinates, drawn with an 800x600 buffer.
    ASSERT_TRUE(window->drawn(400, 300));
    hidePointer(*environment, *window);
    Result<Observation> observation = environment->observe();
    ASSERT_TRUE(observation) << observation.status().message();
    EXPECT_EQ(observation->screenshot.cols, 800);  // physical pixels
    EXPECT_EQ(observation->screenshot.rows, 600);
    EXPECT_EQ(mismatches(observation->screenshot), 0);
}

TEST_F(WaylandDesktopEnvironmentTest, ClicksLandOnSurfaceCoordinatesAtScaleTwo) {
    auto environment = start(output(800, 600, 2));
    ASSERT_TRUE(environment);
    auto window = client(*environment, 2);
    ASSERT_TRUE(window->drawn(400, 300));
    // Physical pixel (201, 101) is surface coordinate (100.5, 50.5): half, exactly.
    ASSERT_TRUE(environment->execute(Click{Point{201, 101}, MouseButton::Left, 1}).status.isOk());
    ASSERT_TRUE(environment->execute(Click{Point{10, 20}, MouseButton::Right, 1}).status.isOk());
    ASSERT_TRUE(environment->execute(Click{Point{799, 599}, MouseButton::Middle, 1}).status.isOk());
    std::vector<std::string> buttons = window->linesWith("button", 6);
    ASSERT_EQ(buttons.size(), 6u);
    EXPECT_EQ(buttons[0], "button 272 1 100.500000 50.500000");  // BTN_LEFT pressed
    EXPECT_EQ(buttons[1], "button 272 0 100.500000 50.500000");
    EXPECT_EQ(buttons[2], "button 273 1 5.000000 10.000000");     // BTN_RIGHT
    EXPECT_EQ(buttons[4], "button 274 1 399.500000 299.500000");  // BTN_MIDDLE
}

TEST_F(WaylandDesktopEnvironmentTest, ClicksLandOnSurfaceCoordinatesAtScaleOneAndAHalf) {
    // A 960x600 mode at scale 1.5 is a 640x400 desktop: pixel (x, y) is (x / 1.5, y / 1.5).
    auto environment = start(output(960, 600, 1.5));
    ASSERT_TRUE(environment);
    EXPECT_EQ(environment->observedArea(), (Monitor{0, 0, 960, 600}));
    auto window = client(*environment, 2);  // wl_output reports the scale rounded up
    ASSERT_TRUE(window->drawn(640, 400));
    ASSERT_TRUE(environment->execute(Click{Point{300, 150}, MouseButton::Left, 1}).status.isOk());
    ASSERT_TRUE(environment->execute(Click{Point{959, 599}, MouseButton::Left, 1}).status.isOk());
    std::vector<std::string> buttons = window->linesWith("button", 4);
    ASSERT_EQ(buttons.size(), 4u);
    EXPECT_EQ(buttons[0], "button 272 1 200.000000 100.000000");
    EXPECT_EQ(buttons[2], "button 272 1 639.332031 399.332031");  // 959 / 1.5 in 24.8 fixed point
}

TEST_F(WaylandDesktopEnvironmentTest, ClicksAtHalfObservationScaleLandOnDevicePixels) {
    WaylandDesktopOptions options = output(640, 480, 1);
    options.observationScale = 0.5;
    auto environment = start(options);
    ASSERT_TRUE(environment);
    auto window = client(*environment, 1);
    ASSERT_TRUE(window->drawn(640, 480));
    Result<Observation> observation = environment->observe();
    ASSERT_TRUE(observation) << observation.status().message();
    EXPECT_EQ(observation->screenshot.cols, 320);
    EXPECT_EQ(observation->devicePixelRatio, 2.0);
    ASSERT_TRUE(environment->execute(Click{Point{100, 50}, MouseButton::Left, 2}).status.isOk());
    std::vector<std::string> buttons = window->linesWith("button", 4);
    ASSERT_EQ(buttons.size(), 4u);
    EXPECT_EQ(buttons[2], "button 272 1 200.000000 100.000000");
}

TEST_F(WaylandDesktopEnvironmentTest, DragPressesMovesAndReleases) {
    auto environment = start(output(800, 600, 2));
    ASSERT_TRUE(environment);
    auto window = client(*environment, 2);
    ASSERT_TRUE(window->drawn(400, 300));
    ASSERT_TRUE(environment->execute(Drag{Point{40, 60}, Point{600, 400}, MouseButton::Left})
                    .status.isOk());
    std::vector<std::string> buttons = window->linesWith("button", 2);
    ASSERT_EQ(buttons.size(), 2u);
    EXPECT_EQ(buttons[0], "button 272 1 20.000000 30.000000");
    EXPECT_EQ(buttons[1], "button 272 0 300.000000 200.000000");
    // The pointer moved in steps while the button was down.
    EXPECT_GE(window->linesWith("motion", 10).size(), 10u);
}

TEST_F(WaylandDesktopEnvironmentTest, ScrollSendsWheelNotches) {
    auto environment = start(output(640, 480, 1));
    ASSERT_TRUE(environment);
    auto window = client(*environment, 1);
    ASSERT_TRUE(window->drawn(640, 480));
    ASSERT_TRUE(environment->execute(Scroll{Point{50, 60}, 0, 2}).status.isOk());
    ASSERT_TRUE(environment->execute(Scroll{std::nullopt, -1, -1}).status.isOk());
    std::vector<std::string> axes = window->linesWith("axis", 4);
    ASSERT_EQ(axes.size(), 4u);
    EXPECT_EQ(axes[0], "axis 0 15.000000");  // vertical, down
    EXPECT_EQ(axes[1], "axis 0 15.000000");
    EXPECT_EQ(axes[2], "axis 0 -15.000000");
    EXPECT_EQ(axes[3], "axis 1 -15.000000");  // horizontal, left
}

TEST_F(WaylandDesktopEnvironmentTest, TypesAsciiCyrillicAndEmojiIntact) {
    auto environment = start(output(640, 480, 1));
    ASSERT_TRUE(environment);
    auto window = client(*environment, 1);
    ASSERT_TRUE(window->drawn(640, 480));
    ASSERT_FALSE(window->linesWith("focus", 1).empty());
    const std::string ascii = "Hello, World! <>";
    const std::string russian = "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82";  // Привет
    const std::string emoji = " \xf0\x9f\x98\x80\xe2\x82\xac";                       // 😀€
    ASSERT_TRUE(environment->execute(TypeText{ascii}).status.isOk());
    ASSERT_TRUE(environment->execute(TypeText{russian + emoji}).status.isOk());
    EXPECT_EQ(window->typed(16 + 6 + 3), ascii + russian + emoji);
}

TEST_F(WaylandDesktopEnvironmentTest, KeyChordsArriveWithTheirModifiers) {
    auto environment = start(output(640, 480, 1));
    ASSERT_TRUE(environment);
    auto window = client(*environment, 1);
    ASSERT_TRUE(window->drawn(640, 480));
    ASSERT_TRUE(environment->execute(PressKeys{{"ctrl", "a"}}).status.isOk());
    ASSERT_TRUE(environment->execute(PressKeys{{"ctrl", "shift", "t"}}).status.isOk());
    ASSERT_TRUE(environment->execute(KeyDown{"alt"}).status.isOk());
    ASSERT_TRUE(environment->execute(PressKeys{{"f4"}}).status.isOk());
    ASSERT_TRUE(environment->execute(KeyUp{"alt"}).status.isOk());
    ASSERT_TRUE(environment->execute(PressKeys{{"a"}}).status.isOk());
    std::vector<std::string> presses = window->linesWith("key 1", 8);
    ASSERT_EQ(presses.size(), 8u);
    EXPECT_EQ(presses[0], "key 1 Control_L - -");
    EXPECT_EQ(presses[1], "key 1 a 01 C");  // ctrl+a: the control character, ctrl held
    EXPECT_EQ(presses[4], "key 1 t 14 CS");
    EXPECT_EQ(presses[6], "key 1 F4 - A");
    EXPECT_EQ(presses[7], "key 1 a 61 -");  // every modifier released again
    // Released in reverse order: t, shift, ctrl.
    std::vector<std::string> releases = window->linesWith("key 0", 5);
    ASSERT_GE(releases.size(), 5u);
    EXPECT_EQ(releases[2].rfind("key 0 t ", 0), 0u);
    EXPECT_EQ(releases[4].rfind("key 0 Control_L ", 0), 0u);
}

TEST_F(WaylandDesktopEnvironmentTest, SecondOutputWithItsOwnScale) {
    auto [compositor, environment] = startOnSway({{640, 480, 1.0, 0}, {800, 600, 2.0, 0}}, 1);
    ASSERT_TRUE(environment);
    EXPECT_EQ(environment->outputName(), "HEADLESS-2");
    EXPECT_EQ(environment->observedArea(), (Monitor{0, 0, 800, 600}));
    auto window = clientOn(*compositor, "HEADLESS-2", 2, "events.txt");
    ASSERT_TRUE(window->drawn(400, 300));
    hidePointer(*environment, *window);
    Result<Observation> observation = environment->observe();
    ASSERT_TRUE(observation) << observation.status().message();
    EXPECT_EQ(mismatches(observation->screenshot), 0);
    ASSERT_TRUE(environment->execute(Click{Point{101, 51}, MouseButton::Left, 1}).status.isOk());
    std::vector<std::string> buttons = window->linesWith("button", 1);
    ASSERT_FALSE(buttons.empty());
    EXPECT_EQ(buttons[0], "button 272 1 50.500000 25.500000");
}

TEST_F(WaylandDesktopEnvironmentTest, TheWholeDesktopIsOnePictureAtTheDensestOutputsScale) {
    // 640x480 at scale 1 beside 800x600 at scale 2 (400x300 logical): a layout of 1040x480
    // logical pixels, drawn at 2 device pixels per logical one.
    auto [compositor, environment] = startOnSway({{640, 480, 1.0, 0}, {800, 600, 2.0, 0}});
    ASSERT_TRUE(environment);
    EXPECT_TRUE(environment->observesWholeDesktop());
    EXPECT_EQ(environment->outputName(), "HEADLESS-1+HEADLESS-2");
    EXPECT_EQ(environment->observedArea(), (Monitor{0, 0, 2080, 960}));
    EXPECT_NE(environment->describe().find("HEADLESS-1+HEADLESS-2"), std::string::npos);

    auto left = clientOn(*compositor, "HEADLESS-1", 1, "left.txt");
    ASSERT_TRUE(left->drawn(640, 480));
    auto right = clientOn(*compositor, "HEADLESS-2", 2, "right.txt");
    ASSERT_TRUE(right->drawn(400, 300));
    hidePointer(*environment, *left);

    Result<Observation> observation = environment->observe();
    ASSERT_TRUE(observation) << observation.status().message();
    const cv::Mat& desktop = observation->screenshot;
    ASSERT_EQ(desktop.cols, 2080);
    ASSERT_EQ(desktop.rows, 960);
    // The scale-2 output pixel for pixel; the scale-1 one with each pixel doubled both ways;
    // below the shorter output, nothing.
    EXPECT_EQ(mismatches(desktop(cv::Rect(1280, 0, 800, 600)).clone()), 0);
    cv::Mat halved;
    cv::resize(desktop(cv::Rect(0, 0, 1280, 960)), halved, cv::Size(640, 480), 0, 0,
               cv::INTER_NEAREST);
    EXPECT_EQ(mismatches(halved), 0);
    cv::Mat doubled;
    cv::resize(halved, doubled, cv::Size(1280, 960), 0, 0, cv::INTER_NEAREST);
    EXPECT_EQ(cv::norm(doubled, desktop(cv::Rect(0, 0, 1280, 960)), cv::NORM_INF), 0.0);
    EXPECT_EQ(cv::countNonZero(desktop(cv::Rect(1280, 600, 800, 360)).reshape(1)), 0);

    // A click lands on the logical position (x / 2, y / 2) of the layout, on either output.
    ASSERT_TRUE(environment->execute(Click{Point{101, 51}, MouseButton::Left, 1}).status.isOk());
    ASSERT_TRUE(
        environment->execute(Click{Point{1280 + 101, 51}, MouseButton::Left, 1}).status.isOk());
    ASSERT_TRUE(environment->execute(Click{Point{2079, 599}, MouseButton::Right, 1}).status.isOk());
    std::vector<std::string> leftButtons = left->linesWith("button", 1);
    ASSERT_FALSE(leftButtons.empty());
    EXPECT_EQ(leftButtons[0], "button 272 1 50.500000 25.500000");
    std::vector<std::string> rightButtons = right->linesWith("button", 4);
    ASSERT_EQ(rightButtons.size(), 4u);
    EXPECT_EQ(rightButtons[0], "button 272 1 50.500000 25.500000");
    EXPECT_EQ(rightButtons[2], "button 273 1 399.500000 299.500000");

    // A third output would widen the layout the pointer moves over: the next step stops.
    ASSERT_TRUE(compositor->command("create_output").isOk());
    Status plugged;
    auto deadline = Clock::now() + milliseconds(5000);
    do {
        plugged = environment->execute(MoveTo{Point{10, 10}}).status;
    } while (plugged.isOk() && Clock::now() < deadline);
    EXPECT_EQ(plugged.code(), StatusCode::IoError);
    EXPECT_NE(plugged.message().find("output HEADLESS-3 was plugged in"), std::string::npos)
        << plugged.message();
}

TEST_F(WaylandDesktopEnvironmentTest, TheWholeDesktopAtAFractionalDensityClicksOnBothOutputs) {
    // 960x600 at scale 1.5 (640x400 logical) beside 640x480 at scale 1: 1280x480 logical at 1.5
    // pixels each, a 1920x720 picture; pixel (x, y) is logical (x / 1.5, y / 1.5).
    auto [compositor, environment] = startOnSway({{960, 600, 1.5, 0}, {640, 480, 1.0, 0}});
    ASSERT_TRUE(environment);
    EXPECT_EQ(environment->observedArea(), (Monitor{0, 0, 1920, 720}));
    auto left = clientOn(*compositor, "HEADLESS-1", 2, "left.txt");  // the scale rounded up
    ASSERT_TRUE(left->drawn(640, 400));
    auto right = clientOn(*compositor, "HEADLESS-2", 1, "right.txt");
    ASSERT_TRUE(right->drawn(640, 480));
    Result<Observation> observation = environment->observe();
    ASSERT_TRUE(observation) << observation.status().message();
    EXPECT_EQ(observation->screenshot.cols, 1920);
    EXPECT_EQ(observation->screenshot.rows, 720);
    ASSERT_TRUE(environment->execute(Click{Point{300, 150}, MouseButton::Left, 1}).status.isOk());
    ASSERT_TRUE(
        environment->execute(Click{Point{960 + 300, 150}, MouseButton::Left, 1}).status.isOk());
    ASSERT_TRUE(environment->execute(Click{Point{1919, 719}, MouseButton::Left, 1}).status.isOk());
    std::vector<std::string> leftButtons = left->linesWith("button", 1);
    ASSERT_FALSE(leftButtons.empty());
    EXPECT_EQ(leftButtons[0], "button 272 1 200.000000 100.000000");
    std::vector<std::string> rightButtons = right->linesWith("button", 4);
    ASSERT_EQ(rightButtons.size(), 4u);
    EXPECT_EQ(rightButtons[0], "button 272 1 200.000000 100.000000");
    EXPECT_EQ(rightButtons[2], "button 272 1 639.332031 479.332031");  // 1919 / 1.5 - 640
}

TEST_F(WaylandDesktopEnvironmentTest, OneOutputOfTheDesktopIsChosenByNumber) {
    auto [compositor, environment] = startOnSway({{640, 480, 1.0, 0}, {800, 600, 2.0, 0}}, 0);
    ASSERT_TRUE(environment);
    EXPECT_FALSE(environment->observesWholeDesktop());
    EXPECT_EQ(environment->outputName(), "HEADLESS-1");
    EXPECT_EQ(environment->observedArea(), (Monitor{0, 0, 640, 480}));
    WaylandDesktopOptions options;
    options.display = compositor->socketPath();
    options.output = 2;
    Result<std::unique_ptr<WaylandDesktopEnvironment>> beyond =
        WaylandDesktopEnvironment::create(options);
    ASSERT_FALSE(beyond);
    EXPECT_EQ(beyond.status().code(), StatusCode::OutOfRange);
    EXPECT_NE(beyond.status().message().find("has 2 output(s)"), std::string::npos)
        << beyond.status().message();
}

TEST_F(WaylandDesktopEnvironmentTest, RotatedOutputsAreSeenAsTheirUserSeesThem) {
    // An 800x600 mode turned a quarter (sway's "transform 90") is a 600x800 desktop, whose screen
    // copy comes in the mode's orientation and must be turned back, and whose pointer wlroots
    // turns as well.
    const std::pair<int, bool> transforms[] = {{90, false}, {270, false}, {90, true}, {180, true}};
    for (auto [transform, flipped] : transforms) {
        SCOPED_TRACE("transform " + std::to_string(transform) + (flipped ? " flipped" : ""));
        bool sideways = transform % 180 != 0;
        SwayOptions sway;
        sway.outputs = {{800, 600, 1.0, transform, flipped}};
        Result<std::unique_ptr<SwayCompositor>> compositor = SwayCompositor::start(sway);
        ASSERT_TRUE(compositor) << compositor.status().message();
        WaylandDesktopOptions options;
        options.display = (*compositor)->socketPath();
        auto environment = start(options);
        ASSERT_TRUE(environment);
        const int width = sideways ? 600 : 800;
        const int height = sideways ? 800 : 600;
        EXPECT_EQ(environment->observedArea(), (Monitor{0, 0, width, height}));
        TestClient window((*compositor)->clientEnvironment(), 1,
                          m_scratch.path() / ("events" + std::to_string(transform) +
                                              (flipped ? "f" : "") + ".txt"));
        ASSERT_TRUE(window.drawn(width, height));
        hidePointer(*environment, window);
        Result<Observation> observation = environment->observe();
        ASSERT_TRUE(observation) << observation.status().message();
        EXPECT_EQ(observation->screenshot.cols, width);
        EXPECT_EQ(observation->screenshot.rows, height);
        EXPECT_EQ(mismatches(observation->screenshot), 0);
        ASSERT_TRUE(
            environment->execute(Click{Point{10, 500}, MouseButton::Left, 1}).status.isOk());
        std::vector<std::string> buttons = window.linesWith("button", 1);
        ASSERT_FALSE(buttons.empty());
        EXPECT_EQ(buttons[0], "button 272 1 10.000000 500.000000");
    }
}

TEST_F(WaylandDesktopEnvironmentTest, AnUnpluggedOutputFailsTheStepNamingIt) {
    // A sway nested in a headless one: its outputs are windows there, and closing a window
    // unplugs that output, as pulling a monitor's cable does.
    SwayOptions hostOptions;
    hostOptions.outputs = {{1280, 800, 1.0, 0}};
    Result<std::unique_ptr<SwayCompositor>> host = SwayCompositor::start(hostOptions);
    ASSERT_TRUE(host) << host.status().message();
    SwayOptions nestedOptions;
    nestedOptions.outputs = {{}, {}};
    nestedOptions.hostDisplay = (*host)->socketPath();
    Result<std::unique_ptr<SwayCompositor>> nested = SwayCompositor::start(nestedOptions);
    ASSERT_TRUE(nested) << nested.status().message();
    WaylandDesktopOptions options;
    options.display = (*nested)->socketPath();
    options.output = 1;
    auto environment = start(options);
    ASSERT_TRUE(environment);
    EXPECT_EQ(environment->outputName(), "WL-2");
    ASSERT_TRUE(environment->observe());

    ASSERT_TRUE((*host)->command("[title=\"wlroots - WL-2\"] kill").isOk());
    // The nested sway hears of the closed window in its own time: the first step after that
    // fails, naming the output, and so does every later one.
    auto failure = [&environment](const char* wanted) {
        auto deadline = Clock::now() + milliseconds(5000);
        Status status;
        do {
            Result<Observation> observation = environment->observe();
            status = observation ? Status::ok() : observation.status();
            if (status.message().find(wanted) != std::string::npos) break;
            std::this_thread::sleep_for(milliseconds(20));
        } while (Clock::now() < deadline);
        return status;
    };
    Status gone = failure("output WL-2 is gone");
    EXPECT_EQ(gone.code(), StatusCode::IoError);
    EXPECT_NE(gone.message().find("output WL-2 is gone (unplugged or disabled)"), std::string::npos)
        << gone.message();
    ActionResult click = environment->execute(Click{Point{1, 1}, MouseButton::Left, 1});
    EXPECT_EQ(click.status.code(), StatusCode::IoError);
    EXPECT_NE(click.status.message().find("WL-2"), std::string::npos);
}

TEST_F(WaylandDesktopEnvironmentTest, RejectsWhatTheDesktopCannotDo) {
    auto environment = start(output(320, 240, 1));
    ASSERT_TRUE(environment);
    testing::expectDesktopRejectsWhatItCannotDo(*environment);
    WaylandDesktopOptions badScale = output(320, 240, 1);
    badScale.observationScale = 0;
    EXPECT_FALSE(WaylandDesktopEnvironment::create(badScale));
}

TEST_F(WaylandDesktopEnvironmentTest, NoCompositorIsAClearError) {
    const char* saved = std::getenv("WAYLAND_DISPLAY");
    std::string previous = saved != nullptr ? saved : "";
    ::unsetenv("WAYLAND_DISPLAY");
    Result<std::unique_ptr<WaylandDesktopEnvironment>> environment =
        WaylandDesktopEnvironment::create(WaylandDesktopOptions{});
    if (saved != nullptr) ::setenv("WAYLAND_DISPLAY", previous.c_str(), 1);
    ASSERT_FALSE(environment);
    EXPECT_NE(environment.status().message().find("$WAYLAND_DISPLAY"), std::string::npos);
    WaylandDesktopOptions missing;
    missing.display = (m_scratch.path() / "no-such-socket").string();
    environment = WaylandDesktopEnvironment::create(missing);
    ASSERT_FALSE(environment);
    EXPECT_NE(environment.status().message().find("no-such-socket"), std::string::npos);
}

TEST(WaylandDesktopEnvironmentErrorsTest, ACompositorWithoutScreenCopiesNamesWhatIsMissing) {
    // As GNOME and KDE: outputs and a seat, but neither screen-copy protocol.
    inference::testing::ScratchDir scratch("iris-wayland-fake");
    testing::FakeCompositor compositor((scratch.path() / "wayland-fake").string());
    ASSERT_TRUE(compositor.ok());
    WaylandDesktopOptions options;
    options.display = compositor.socketPath();
    Result<std::unique_ptr<WaylandDesktopEnvironment>> environment =
        WaylandDesktopEnvironment::create(options);
    ASSERT_FALSE(environment);
    EXPECT_EQ(environment.status().code(), StatusCode::Unsupported);
    const std::string& message = environment.status().message();
    EXPECT_NE(message.find(compositor.socketPath() + " offers no zwlr_screencopy_manager_v1 nor "
                                                     "ext_image_copy_capture_manager_v1"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("on GNOME and KDE use the xdg-desktop-portal path (--env "
                           "desktop:portal)"),
              std::string::npos);
    EXPECT_NE(message.find("--env desktop:x11"), std::string::npos);
}

// ext-image-copy-capture-v1 against the fake compositor's implementation of it (no compositor
// in Debian 12 has it): the frames are the test pattern in the output's buffer orientation.
class ImageCopyCaptureTest : public ::testing::Test {
protected:
    std::unique_ptr<WaylandConnection> connect(const testing::FakeCompositor& compositor) {
        EXPECT_TRUE(compositor.ok());
        Result<std::unique_ptr<WaylandConnection>> connection =
            WaylandConnection::open(compositor.socketPath());
        EXPECT_TRUE(connection) << connection.status().message();
        if (!connection) return nullptr;
        EXPECT_TRUE((*connection)->waitForOutputs(1, milliseconds(5000)).isOk());
        return std::move(*connection);
    }
    std::string socket() const { return (m_scratch.path() / "wayland-fake").string(); }

    // Pixels of `image` that differ from the pattern at `source(x, y)`.
    template <typename Source>
    static int mismatches(const cv::Mat& image, Source source) {
        int wrong = 0;
        for (int y = 0; y < image.rows; ++y) {
            for (int x = 0; x < image.cols; ++x) {
                auto [sx, sy] = source(x, y);
                testing::Rgb rgb = testing::patternAt(sx, sy);
                wrong += image.at<cv::Vec3b>(y, x) != cv::Vec3b(rgb.b, rgb.g, rgb.r);
            }
        }
        return wrong;
    }

    inference::testing::ScratchDir m_scratch{"iris-wayland-image-copy"};
};

TEST_F(ImageCopyCaptureTest, CapturesEqualTheFramesAndArePreferredToScreencopy) {
    testing::FakeCompositor compositor(socket(), {.imageCopy = true});
    auto connection = connect(compositor);
    ASSERT_TRUE(connection);
    EXPECT_EQ(connection->captureProtocol(), CaptureProtocol::ExtImageCopyCapture);
    ASSERT_TRUE(connection->requireScreenCopy().isOk());
    const WaylandOutput& output = *connection->outputs().at(0);
    // Twice: a session per capture, as a session's later frames may wait for the screen to change.
    for (int round = 1; round <= 2; ++round) {
        Result<cv::Mat> image = connection->capture(output);
        ASSERT_TRUE(image) << image.status().message();
        ASSERT_EQ(image->cols, testing::FakeCompositor::kWidth);
        ASSERT_EQ(image->rows, testing::FakeCompositor::kHeight);
        // The compositor offered NV12 first; XBGR8888 is the one Iris converts, channels intact.
        EXPECT_EQ(mismatches(*image, [](int x, int y) { return std::pair(x, y); }), 0);
        EXPECT_EQ(compositor.framesCopied(), round);
    }
    EXPECT_EQ(compositor.framesFailed(), 0);
    EXPECT_EQ(compositor.lastSessionOptions(),
              std::uint32_t{EXT_IMAGE_COPY_CAPTURE_MANAGER_V1_OPTIONS_PAINT_CURSORS});
}

TEST_F(ImageCopyCaptureTest, TheFramesTransformIsApplied) {
    // 180 degrees (WL_OUTPUT_TRANSFORM_180): the user sees pixel (x, y) of the buffer at
    // (width - 1 - x, height - 1 - y).
    testing::FakeCompositor compositor(socket(), {.imageCopy = true, .frameTransform = 2});
    auto connection = connect(compositor);
    ASSERT_TRUE(connection);
    Result<cv::Mat> image = connection->capture(*connection->outputs().at(0));
    ASSERT_TRUE(image) << image.status().message();
    const int w = image->cols, h = image->rows;
    EXPECT_EQ(mismatches(*image, [&](int x, int y) { return std::pair(w - 1 - x, h - 1 - y); }), 0);
}

TEST_F(ImageCopyCaptureTest, ConstraintsThatChangeDuringACopyAreFollowed) {
    testing::FakeCompositor compositor(socket(), {.imageCopy = true, .shrinkOnFirstCapture = true});
    auto connection = connect(compositor);
    ASSERT_TRUE(connection);
    Result<cv::Mat> image = connection->capture(*connection->outputs().at(0));
    ASSERT_TRUE(image) << image.status().message();
    EXPECT_EQ(image->cols, testing::FakeCompositor::kWidth / 2);
    EXPECT_EQ(image->rows, testing::FakeCompositor::kHeight / 2);
    EXPECT_EQ(mismatches(*image, [](int x, int y) { return std::pair(x, y); }), 0);
    EXPECT_EQ(compositor.framesFailed(), 1);
    EXPECT_EQ(compositor.framesCopied(), 1);
}

TEST_F(ImageCopyCaptureTest, AStoppedSessionIsAnErrorNamingTheOutput) {
    testing::FakeCompositor compositor(socket(), {.imageCopy = true, .stopSessions = true});
    auto connection = connect(compositor);
    ASSERT_TRUE(connection);
    const WaylandOutput& output = *connection->outputs().at(0);
    Result<cv::Mat> image = connection->capture(output);
    ASSERT_FALSE(image);
    EXPECT_EQ(image.status().code(), StatusCode::IoError);
    EXPECT_NE(image.status().message().find("capturing output " + output.name), std::string::npos);
    EXPECT_NE(image.status().message().find("stopped the capture session"), std::string::npos)
        << image.status().message();
    EXPECT_EQ(compositor.framesCopied(), 0);
}

TEST_F(WaylandDesktopEnvironmentTest, TheTitleIsTheFocusedWindows) {
    auto environment = start(output(640, 480, 1));
    ASSERT_TRUE(environment);
    EXPECT_NE(environment->describe().find("capture wlr-screencopy"), std::string::npos);
    const auto clientEnvironment = environment->privateCompositor()->clientEnvironment();
    // The title of the next observation, once it is `wanted` (or after five seconds).
    auto titleBecomes = [&](const std::string& wanted) {
        std::string title;
        auto deadline = Clock::now() + milliseconds(5000);
        do {
            Result<Observation> observation = environment->observe();
            if (!observation) return observation.status().message();
            title = observation->title;
        } while (title != wanted && Clock::now() < deadline);
        return title;
    };
    TestClient first(clientEnvironment, 1, m_scratch.path() / "first.txt", "First window");
    ASSERT_TRUE(first.drawn(640, 480));
    EXPECT_EQ(titleBecomes("First window"), "First window");
    // sway focuses a new window and tiles the two side by side.
    TestClient second(clientEnvironment, 1, m_scratch.path() / "second.txt", "Второе окно 😀");
    ASSERT_TRUE(second.drawn(320, 480));
    EXPECT_EQ(titleBecomes("Второе окно 😀"), "Второе окно 😀");
    // A click on the left tile gives the first window the focus back.
    ASSERT_TRUE(environment->execute(Click{Point{100, 240}, MouseButton::Left, 1}).status.isOk());
    EXPECT_EQ(titleBecomes("First window"), "First window");
}

TEST_F(WaylandDesktopEnvironmentTest, ResetRestartsTheCompositorAndTheStartCommand) {
    const std::filesystem::path log = m_scratch.path() / "starts.log";
    WaylandDesktopOptions options = output(320, 240, 1);
    options.startCommand = {"/bin/sh", "-c",
                            "echo \"$WAYLAND_DISPLAY\" >> '" + log.string() + "'; exec sleep 60"};
    auto environment = start(options);
    ASSERT_TRUE(environment);
    std::string first = environment->displayName();
    ASSERT_EQ(linesOf(log, "", 1).size(), 1u);
    ASSERT_TRUE(environment->reset().isOk());
    ASSERT_TRUE(environment->observe());
    std::vector<std::string> started = linesOf(log, "", 2);
    ASSERT_EQ(started.size(), 2u);
    EXPECT_EQ(started[0], first);
    EXPECT_EQ(started[1], environment->displayName());
    EXPECT_NE(started[0], started[1]);  // a fresh compositor in a fresh folder
    std::string folder = std::filesystem::path(first).parent_path().string();
    environment.reset();
    EXPECT_FALSE(std::filesystem::exists(folder));
}

}  // namespace
}  // namespace iris::agent
