// The loop's model-image coordinate frame: a client that shows the model a resized screenshot
// reports the size (ModelClient::imageSizeFor), and UI-TARS answers in that image's pixels map
// back to the screen; the frame follows a screen whose size changes, is recorded, and a replay of
// the recording maps alike.
#include <map>
#include <utility>

#include <gtest/gtest.h>

#include "agent/agent_loop.h"
#include "agent/recording/replay_client.h"
#include "tests/agent/loop/fake_environment.h"

namespace iris::agent {
namespace {

using testing::MemoryRecorder;

// A screen whose size is the next one of `sizes` at every observation (the last one repeats).
class ResizingScreen final : public Environment {
public:
    explicit ResizingScreen(std::vector<std::pair<int, int>> sizes) : m_sizes(std::move(sizes)) {}
    Status reset() override { return Status::ok(); }
    Result<Observation> observe() override {
        const auto [width, height] = m_sizes.at(std::min(m_next++, m_sizes.size() - 1));
        Observation observation;
        observation.screenshot = cv::Mat(height, width, CV_8UC3, cv::Scalar(40, 80, 120));
        return observation;
    }
    ActionResult execute(const Action& action) override {
        executed.push_back(action);
        return {};
    }
    Status reload() override { return Status::ok(); }
    std::string describe() const override { return "resizing screen"; }

    std::vector<Action> executed;

private:
    std::vector<std::pair<int, int>> m_sizes;
    std::size_t m_next = 0;
};

// Answers from a script, and shows its model the screenshot at the sizes of `images` (as a
// vision client that resizes would); a screen size not listed is shown unchanged.
class ResizingClient final : public ModelClient {
public:
    ResizingClient(std::vector<std::string> answers,
                   std::map<std::pair<int, int>, inference::ImageSize> images)
        : m_answers(std::move(answers)), m_images(std::move(images)) {}

    Result<ChatResponse> complete(const ChatRequest&, const TextStream&) override {
        ChatResponse response;
        response.text = m_answers.at(std::min(m_next++, m_answers.size() - 1));
        return response;
    }
    void cancel() override {}
    std::string describe() const override { return "resizing"; }
    std::optional<inference::ImageSize> imageSizeFor(int width, int height) const override {
        ++asked;
        const auto found = m_images.find({width, height});
        if (found == m_images.end()) return std::nullopt;
        return found->second;
    }

    mutable int asked = 0;

private:
    std::vector<std::string> m_answers;
    std::map<std::pair<int, int>, inference::ImageSize> m_images;
    std::size_t m_next = 0;
};

LoopOptions uiTars() {
    LoopOptions options;
    options.instruction = "click the middle";
    options.format = ActionFormat::UiTars;
    options.maxSteps = 5;
    return options;
}

// Qwen2.5-VL smart resize (factor 28, llama.cpp's default budget) of the two screens below:
// round(1920 / 28) * 28 = 1932, round(1080 / 28) * 28 = 1092; 1280 -> 1288, 800 -> 812.
const std::map<std::pair<int, int>, inference::ImageSize> kImages = {
    {{1920, 1080}, {1932, 1092}},
    {{1280, 800}, {1288, 812}},
};

Point clickAt(const Action& action) {
    return *std::get<Click>(action).at;
}

TEST(AgentLoopModelImage, AUiTarsClickInTheResizedImageLandsOnTheScreenCentre) {
    ResizingScreen screen({{1920, 1080}});
    ResizingClient client({"Action: click(start_box='(966,546)')", "Action: finished()"}, kImages);
    AgentLoop loop(screen, client, SafetyPolicy({}), nullptr, nullptr, uiTars());
    const LoopResult result = loop.run();
    EXPECT_EQ(result.end, LoopEnd::Done) << result.message;
    ASSERT_EQ(screen.executed.size(), 1u);
    // (966 * 1920 / 1932, 546 * 1080 / 1092) = (960, 540).
    EXPECT_NEAR(clickAt(screen.executed[0]).x, 960, 1e-9);
    EXPECT_NEAR(clickAt(screen.executed[0]).y, 540, 1e-9);
    EXPECT_GE(client.asked, 1);
}

TEST(AgentLoopModelImage, TheFrameFollowsTheScreenSizeAndIsRecordedForReplay) {
    ResizingScreen screen({{1920, 1080}, {1280, 800}});
    ResizingClient client({"Action: click(start_box='(966,546)')",
                           "Action: click(start_box='(644,406)')", "Action: finished()"},
                          kImages);
    MemoryRecorder recorder;
    AgentLoop loop(screen, client, SafetyPolicy({}), nullptr, &recorder, uiTars());
    const LoopResult result = loop.run();
    EXPECT_EQ(result.end, LoopEnd::Done) << result.message;
    ASSERT_EQ(screen.executed.size(), 2u);
    EXPECT_NEAR(clickAt(screen.executed[0]).x, 960, 1e-9);
    EXPECT_NEAR(clickAt(screen.executed[0]).y, 540, 1e-9);
    // (644 * 1280 / 1288, 406 * 800 / 812) = (640, 400): the 1280x800 screen's centre.
    EXPECT_NEAR(clickAt(screen.executed[1]).x, 640, 1e-9);
    EXPECT_NEAR(clickAt(screen.executed[1]).y, 400, 1e-9);

    // One event per new screen size (the third step saw 1280x800 again).
    std::vector<SessionEvent> images;
    for (const SessionEvent& event : recorder.events) {
        if (event.kind == ModelImageEvent::kKind) images.push_back(event);
    }
    ASSERT_EQ(images.size(), 2u);
    EXPECT_EQ(images[0].stepIndex, 0);
    EXPECT_EQ(images[0].message, "the 1920x1080 screenshot is shown to the model as 1932x1092");
    EXPECT_EQ(images[1].stepIndex, 1);
    EXPECT_EQ(images[1].message, "the 1280x800 screenshot is shown to the model as 1288x812");

    // A replay of the recording reports the recorded model's images, so its answers map alike.
    SessionRecord recording;
    recording.steps = recorder.steps;
    recording.events = recorder.events;
    ReplayClient replay(recording);
    EXPECT_EQ(replay.imageSizeFor(1920, 1080), (inference::ImageSize{1932, 1092}));
    EXPECT_EQ(replay.imageSizeFor(1280, 800), (inference::ImageSize{1288, 812}));
    EXPECT_EQ(replay.imageSizeFor(800, 600), std::nullopt);

    ResizingScreen again({{1920, 1080}, {1280, 800}});
    AgentLoop replayed(again, replay, SafetyPolicy({}), nullptr, nullptr, uiTars());
    EXPECT_EQ(replayed.run().end, LoopEnd::Done);
    EXPECT_EQ(again.executed, screen.executed);

    // A fork answers from the recording first, then from the live client.
    ForkClient fork(
        recording, 1,
        std::make_unique<ResizingClient>(
            std::vector<std::string>{"Action: finished()"},
            std::map<std::pair<int, int>, inference::ImageSize>{{{1920, 1080}, {1904, 1064}}}));
    EXPECT_EQ(fork.imageSizeFor(1920, 1080), (inference::ImageSize{1932, 1092}));
    ASSERT_TRUE(fork.complete({}));
    EXPECT_EQ(fork.imageSizeFor(1920, 1080), (inference::ImageSize{1904, 1064}));
}

TEST(AgentLoopModelImage, AClientThatShowsTheScreenshotUnchangedKeepsScreenPixels) {
    ResizingScreen screen({{1920, 1080}});
    ResizingClient client({"Action: click(start_box='(966,546)')", "Action: finished()"}, {});
    MemoryRecorder recorder;
    AgentLoop loop(screen, client, SafetyPolicy({}), nullptr, &recorder, uiTars());
    EXPECT_EQ(loop.run().end, LoopEnd::Done);
    ASSERT_EQ(screen.executed.size(), 1u);
    EXPECT_EQ(screen.executed[0], Action(Click{Point{966, 546}}));
    for (const SessionEvent& event : recorder.events)
        EXPECT_NE(event.kind, ModelImageEvent::kKind) << event.message;
}

TEST(AgentLoopModelImage, AnExplicitFrameAndOtherFormatsIgnoreTheModelImage) {
    {
        ResizingScreen screen({{1920, 1080}});
        ResizingClient client({"Action: click(start_box='(966,546)')", "Action: finished()"},
                              kImages);
        LoopOptions options = uiTars();
        options.frame = CoordinateFrame{};  // --coords pixels
        AgentLoop loop(screen, client, SafetyPolicy({}), nullptr, nullptr, options);
        EXPECT_EQ(loop.run().end, LoopEnd::Done);
        ASSERT_EQ(screen.executed.size(), 1u);
        EXPECT_EQ(screen.executed[0], Action(Click{Point{966, 546}}));
    }
    {
        // Tool-call prompts state the screen size, so the model answers in its pixels.
        ResizingScreen screen({{1920, 1080}});
        ResizingClient client({testing::toolCall("click", R"({"x": 966, "y": 546})"),
                               testing::toolCall("done", "{}")},
                              kImages);
        LoopOptions options = uiTars();
        options.format = ActionFormat::ToolCalls;
        AgentLoop loop(screen, client, SafetyPolicy({}), nullptr, nullptr, options);
        EXPECT_EQ(loop.run().end, LoopEnd::Done);
        ASSERT_EQ(screen.executed.size(), 1u);
        EXPECT_EQ(screen.executed[0], Action(Click{Point{966, 546}}));
    }
}

}  // namespace
}  // namespace iris::agent
