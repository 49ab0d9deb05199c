// The coordinate frame a recorded session keeps ("coords" in its config) and gives back to
// replay and fork: the format's default (model image for UI-TARS) is recorded as "auto", every
// explicit frame as itself, and a recording without the key gets the format's default again.
#include <gtest/gtest.h>

#include "app/session/session_plan.h"

namespace iris::app {
namespace {

using Kind = agent::CoordinateFrame::Kind;

agent::SessionRecord recordingOf(const nlohmann::json& config, const std::string& format) {
    agent::SessionRecord recording;
    recording.config = config;
    recording.summary.actionFormat = format;
    recording.summary.instruction = "click the middle";
    return recording;
}

SessionPlan uiTarsPlan() {
    SessionPlan plan;
    plan.environment.kind = EnvironmentSpec::Kind::Url;
    plan.environment.location = "about:blank";
    plan.loop.format = agent::ActionFormat::UiTars;
    return plan;
}

TEST(CliSessionCoords, TheUiTarsDefaultIsRecordedAsAutoAndRestored) {
    const nlohmann::json config = sessionConfig(uiTarsPlan(), nullptr);
    EXPECT_EQ(config.value("coords", ""), "auto");
    Result<SessionPlan> plan = planFromRecording(recordingOf(config, "uitars"));
    ASSERT_TRUE(plan) << plan.status().message();
    ASSERT_TRUE(plan->loop.frame);
    EXPECT_EQ(plan->loop.frame->kind, Kind::ModelImage);

    SessionPlan tools = uiTarsPlan();
    tools.loop.format = agent::ActionFormat::ToolCalls;
    EXPECT_EQ(sessionConfig(tools, nullptr).value("coords", ""), "pixels");
}

TEST(CliSessionCoords, ExplicitFramesSurviveTheRoundTrip) {
    const std::vector<agent::CoordinateFrame> frames = {
        {Kind::ScreenshotPixels, 0, 0},
        {Kind::Relative1000, 0, 0},
        {Kind::ResizedImage, 1932, 1092},
        {Kind::ModelImage, 0, 0},
    };
    for (const agent::CoordinateFrame& frame : frames) {
        SessionPlan original = uiTarsPlan();
        original.loop.frame = frame;
        const nlohmann::json config = sessionConfig(original, nullptr);
        Result<SessionPlan> plan = planFromRecording(recordingOf(config, "uitars"));
        ASSERT_TRUE(plan) << plan.status().message();
        ASSERT_TRUE(plan->loop.frame) << config.dump();
        EXPECT_EQ(plan->loop.frame->kind, frame.kind) << config.dump();
        EXPECT_EQ(plan->loop.frame->width, frame.width) << config.dump();
        EXPECT_EQ(plan->loop.frame->height, frame.height) << config.dump();
    }
}

TEST(CliSessionCoords, ARecordingWithoutCoordsTakesTheFormatsDefault) {
    // iris eval records no "coords": its loops ran with the format's default frame.
    Result<SessionPlan> plan =
        planFromRecording(recordingOf({{"env", "url:about:blank"}}, "uitars"));
    ASSERT_TRUE(plan) << plan.status().message();
    EXPECT_FALSE(plan->loop.frame);
}

}  // namespace
}  // namespace iris::app
