// The model-image coordinate frame at the parser: each format's default frame, and an unresolved
// ModelImage frame refused (only the loop knows the image the model was shown).
#include <gtest/gtest.h>

#include "agent/actions/action_format.h"

namespace iris::agent {
namespace {

ParsedStep parseUiTars(const std::string& text, CoordinateFrame frame) {
    ChatResponse response;
    response.text = text;
    ParseOptions options;
    options.screenWidth = 1920;
    options.screenHeight = 1080;
    options.frame = frame;
    return parseModelOutput(ActionFormat::UiTars, response, options);
}

TEST(ActionFormatCoordinateFrame, OnlyUiTarsDefaultsToTheModelImage) {
    EXPECT_EQ(defaultCoordinateFrame(ActionFormat::UiTars).kind, CoordinateFrame::Kind::ModelImage);
    for (ActionFormat format :
         {ActionFormat::ToolCalls, ActionFormat::Pyautogui, ActionFormat::Computer13}) {
        EXPECT_EQ(defaultCoordinateFrame(format).kind, CoordinateFrame::Kind::ScreenshotPixels)
            << actionFormatName(format);
    }
}

TEST(ActionFormatCoordinateFrame, AnUnresolvedModelImageFrameIsAnErrorNotAGuess) {
    const ParsedStep step = parseUiTars("Action: click(start_box='(966,546)')",
                                        {CoordinateFrame::Kind::ModelImage, 0, 0});
    EXPECT_TRUE(step.actions.empty());
    ASSERT_EQ(step.errors.size(), 1u);
    EXPECT_NE(step.errors[0].find("model-image coordinate frame was not resolved"),
              std::string::npos)
        << step.errors[0];

    // Resolved as the loop does for a client that resizes 1920x1080 to 1932x1092.
    const ParsedStep resolved = parseUiTars("Action: click(start_box='(966,546)')",
                                            {CoordinateFrame::Kind::ResizedImage, 1932, 1092});
    ASSERT_EQ(resolved.actions.size(), 1u);
    EXPECT_EQ(resolved.actions[0], Action(Click{Point{960, 540}}));
}

}  // namespace
}  // namespace iris::agent
