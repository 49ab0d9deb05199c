#include <cmath>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/actions/key_names.h"
#include "tests/agent/actions/parse_test_util.h"

namespace iris::agent {
namespace {

using testing::expectActions;
using testing::expectError;
using testing::parseText;
using testing::screen;

constexpr ActionFormat kFormats[] = {ActionFormat::Computer13, ActionFormat::Pyautogui,
                                     ActionFormat::UiTars, ActionFormat::ToolCalls};

TEST(ActionFormat, NamesRoundTrip) {
    for (const ActionFormat format : kFormats) {
        const Result<ActionFormat> back = actionFormatFromName(actionFormatName(format));
        ASSERT_TRUE(back.isOk());
        EXPECT_EQ(*back, format);
    }
    EXPECT_EQ(*actionFormatFromName("computer_13"), ActionFormat::Computer13);
    EXPECT_EQ(*actionFormatFromName("tool_calls"), ActionFormat::ToolCalls);
    const Result<ActionFormat> bad = actionFormatFromName("xml");
    ASSERT_FALSE(bad.isOk());
    EXPECT_EQ(bad.status().message(),
              "unknown action format 'xml' (expected computer13, pyautogui, uitars or tools)");
}

TEST(CoordinateFrame, MapsEveryFrameToScreenshotPixels) {
    struct Case {
        CoordinateFrame frame;
        double x, y;
        Point expected;
    };
    const Case cases[] = {
        {{CoordinateFrame::Kind::ScreenshotPixels, 0, 0}, 100, 50, {100, 50}},
        {{CoordinateFrame::Kind::Relative1000, 0, 0}, 500, 500, {640, 360}},
        {{CoordinateFrame::Kind::Relative1000, 0, 0}, 0, 1000, {0, 719}},  // the edge: last pixel
        {{CoordinateFrame::Kind::ResizedImage, 1288, 728}, 644, 364, {640, 360}},
        {{CoordinateFrame::Kind::ResizedImage, 640, 360}, 320, 90, {640, 180}},
    };
    for (const Case& c : cases) {
        ParseOptions options = screen(1280, 720);
        options.frame = c.frame;
        const std::string code =
            "pyautogui.moveTo(" + std::to_string(c.x) + ", " + std::to_string(c.y) + ")";
        const ParsedStep step = parseText(ActionFormat::Pyautogui, code, options);
        ASSERT_EQ(step.actions.size(), 1u) << testing::describeAll(step);
        const Point p = std::get<MoveTo>(step.actions[0]).to;
        EXPECT_NEAR(p.x, c.expected.x, 1e-9) << code;
        EXPECT_NEAR(p.y, c.expected.y, 1e-9) << code;
    }
}

TEST(CoordinateFrame, ResizedFrameWithoutSizeIsAnError) {
    ParseOptions options = screen();
    options.frame.kind = CoordinateFrame::Kind::ResizedImage;
    expectError(parseText(ActionFormat::UiTars, "Action: click(start_box='(1,1)')", options),
                "resized-image coordinate frame has no size");
}

TEST(CoordinateFrame, UnknownScreenSizeSkipsTheRangeCheck) {
    expectActions(parseText(ActionFormat::Pyautogui, "pyautogui.click(5000, 3000)", ParseOptions{}),
                  {Click{Point{5000, 3000}}});
    // Scaled frames cannot be mapped without the size.
    ParseOptions relative;
    relative.frame.kind = CoordinateFrame::Kind::Relative1000;
    expectError(parseText(ActionFormat::Pyautogui, "pyautogui.click(500, 500)", relative),
                "the screenshot size is unknown");
}

TEST(CoordinateFrame, OutOfRangeErrorsNameTheModelsFrame) {
    ParseOptions relative = screen();
    relative.frame.kind = CoordinateFrame::Kind::Relative1000;
    expectError(parseText(ActionFormat::UiTars, "Action: click(start_box='(1200,5)')", relative),
                "point (1200, 5) is outside the 0..1000 coordinate range");
    ParseOptions resized = screen();
    resized.frame = {CoordinateFrame::Kind::ResizedImage, 1932, 1092};
    expectError(parseText(ActionFormat::UiTars, "Action: click(start_box='(1933,5)')", resized),
                "point (1933, 5) is outside the 1932x1092 image");
}

TEST(KeyNames, NormalizeToPyautoguiNames) {
    EXPECT_EQ(*normalizeKeyName("Enter"), "enter");
    EXPECT_EQ(*normalizeKeyName("\n"), "enter");
    EXPECT_EQ(*normalizeKeyName("Control"), "ctrl");
    EXPECT_EQ(*normalizeKeyName("ArrowLeft"), "left");
    EXPECT_EQ(*normalizeKeyName("F12"), "f12");
    EXPECT_EQ(*normalizeKeyName("A"), "a");
    EXPECT_EQ(*normalizeKeyName("<"), "<");
    EXPECT_TRUE(isKeyboardKey("PageDown"));
    EXPECT_TRUE(isKeyboardKey("volumeup"));
    EXPECT_FALSE(isKeyboardKey("f25"));
    const Result<std::string> bad = normalizeKeyName("ctrl\x01");
    ASSERT_FALSE(bad.isOk());
    EXPECT_EQ(bad.status().message(), "unknown key name 'ctrl\\x01'");
}

TEST(SystemPrompts, StateTheScreenAndTheFormat) {
    PromptContext context;
    context.screenWidth = 1280;
    context.screenHeight = 800;
    const std::string pyautogui = systemPrompt(ActionFormat::Pyautogui, context);
    EXPECT_NE(pyautogui.find("1280x800"), std::string::npos);
    EXPECT_NE(pyautogui.find("```python"), std::string::npos);
    EXPECT_NE(pyautogui.find("```DONE```"), std::string::npos);
    const std::string computer13 = systemPrompt(ActionFormat::Computer13, context);
    EXPECT_NE(computer13.find("1280x800"), std::string::npos);
    for (const char* type :
         {"MOVE_TO", "CLICK", "MOUSE_DOWN", "MOUSE_UP", "RIGHT_CLICK", "DOUBLE_CLICK", "DRAG_TO",
          "SCROLL", "TYPING", "PRESS", "KEY_DOWN", "KEY_UP", "HOTKEY", "WAIT", "FAIL", "DONE"})
        EXPECT_NE(computer13.find(std::string("\"") + type + "\""), std::string::npos) << type;
    const std::string uitars = systemPrompt(ActionFormat::UiTars, context);
    EXPECT_NE(uitars.find("## Action Space"), std::string::npos);
    EXPECT_NE(uitars.find("left_double(start_box="), std::string::npos);
    EXPECT_EQ(uitars.substr(uitars.size() - 20), "## User Instruction\n");
    const std::string tools = systemPrompt(ActionFormat::ToolCalls, context);
    EXPECT_NE(tools.find("1280x800"), std::string::npos);
    EXPECT_EQ(tools.find("write_file"), std::string::npos);
    context.fileTools = true;
    context.browser = true;
    const std::string withFiles = systemPrompt(ActionFormat::ToolCalls, context);
    EXPECT_NE(withFiles.find("write_file"), std::string::npos);
    EXPECT_NE(withFiles.find("navigate"), std::string::npos);
}

TEST(SystemPrompts, TeachExamplesThatTheParsersAccept) {
    // The action-space listing of the UI-TARS prompt, with its placeholders filled in, parses.
    const std::string listing =
        "Action: click(start_box='<|box_start|>(10,20)<|box_end|>')\n\n"
        "hotkey(key='ctrl c')\n\nwait()";
    expectActions(parseText(ActionFormat::UiTars, listing),
                  {Click{Point{10, 20}}, PressKeys{{"ctrl", "c"}}, Wait{5}});
}

TEST(Parsers, ReplaceInvalidUtf8OrRejectIt) {
    expectActions(parseText(ActionFormat::UiTars,
                            "Action: type(content='a\xff"
                            "b')"),
                  {TypeText{"a\xef\xbf\xbd"
                            "b"}});
    expectActions(parseText(ActionFormat::Pyautogui, "pyautogui.write('\xc3')"),
                  {TypeText{"\xef\xbf\xbd"}});
    // JSON must be UTF-8: nlohmann rejects the text, so no action comes out of it.
    expectError(
        parseText(ActionFormat::Computer13, "{\"action_type\": \"TYPING\", \"text\": \"\xff\"}"),
        "no JSON action found");
    ChatResponse response;
    response.toolCalls.push_back({"", "type_text", "{\"text\": \"\xff\"}"});
    expectError(parseModelOutput(ActionFormat::ToolCalls, response, screen()),
                "arguments are not valid JSON");
    // Thoughts are made valid too.
    const ParsedStep step = parseText(ActionFormat::UiTars, "Thought: \xfe\nAction: wait()");
    EXPECT_EQ(step.thought, "\xef\xbf\xbd");
}

TEST(Parsers, RejectNonNumbersAsCoordinates) {
    expectError(parseText(ActionFormat::UiTars, "Action: click(start_box='(nan,5)')"),
                "expected a point");
    expectError(parseText(ActionFormat::Pyautogui, "pyautogui.click(float('nan'), 5)"),
                "variables and expressions are not supported");
    expectError(
        parseText(ActionFormat::Computer13, R"({"action_type": "CLICK", "x": NaN, "y": 1})"),
        "no JSON action found");
}

// Every answer, however broken, gives finite coordinates and JSON-safe text.
void checkInvariants(const ParsedStep& step) {
    for (const Action& action : step.actions) {
        const nlohmann::json json = actionToJson(action);
        std::string text;
        EXPECT_NO_THROW(text = json.dump());
        const Result<Action> back = actionFromJson(json);
        EXPECT_TRUE(back.isOk()) << text << ": " << back.status().message();
    }
    EXPECT_NO_THROW((void)nlohmann::json(step.thought).dump());
    for (const std::string& error : step.errors)
        EXPECT_NO_THROW((void)nlohmann::json(error).dump());
    EXPECT_FALSE(step.actions.empty() && step.errors.empty());
}

TEST(Parsers, SurviveMutatedAnswers) {
    const std::string seeds[] = {
        "```python\npyautogui.click(10, 20)\npyautogui.write('a\\nb')\n```",
        R"({"action_type": "CLICK", "parameters": {"x": 1, "y": 2}})",
        "Thought: x\nAction: drag(start_box='(1,2)', end_box='(3,4)')",
        "<tool_call>{\"name\": \"click\", \"arguments\": {\"x\": 1, \"y\": 2}}</tool_call>",
    };
    std::mt19937 random(1234);
    for (int round = 0; round < 3000; ++round) {
        std::string text = seeds[static_cast<std::size_t>(round) % 4];
        const int edits = 1 + static_cast<int>(random() % 8);
        for (int e = 0; e < edits && !text.empty(); ++e) {
            const std::size_t at = random() % text.size();
            switch (random() % 3) {
                case 0:
                    text[at] = static_cast<char>(random() % 256);
                    break;
                case 1:
                    text.erase(at, 1 + random() % 4);
                    break;
                default:
                    text.insert(at, text.substr(random() % text.size(), random() % 8));
            }
        }
        for (const ActionFormat format : kFormats) {
            ChatResponse response;
            response.text = text;
            response.toolCalls.push_back({"", "click", text});
            checkInvariants(parseModelOutput(format, response, screen()));
        }
    }
}

}  // namespace
}  // namespace iris::agent
