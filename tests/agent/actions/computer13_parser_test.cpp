#include <gtest/gtest.h>

#include "tests/agent/actions/parse_test_util.h"

namespace iris::agent {
namespace {

using testing::expectActions;
using testing::expectError;
using testing::parseText;

struct Case {
    const char* json;
    Action expected;
};

class Computer13Actions : public ::testing::TestWithParam<Case> {};

TEST_P(Computer13Actions, ParseIntoTheirAction) {
    expectActions(parseText(ActionFormat::Computer13, GetParam().json), {GetParam().expected});
}

INSTANTIATE_TEST_SUITE_P(
    EveryActionType, Computer13Actions,
    ::testing::Values(
        Case{R"({"action_type": "MOVE_TO", "parameters": {"x": 100, "y": 200}})",
             MoveTo{{100, 200}}},
        Case{R"({"action_type": "CLICK", "parameters": {"x": 10.5, "y": 20, "button": "right",
                 "num_clicks": 2}})",
             Click{Point{10.5, 20}, MouseButton::Right, 2}},
        Case{R"({"action_type": "CLICK"})", Click{}},
        Case{R"({"action_type": "MOUSE_DOWN", "parameters": {"button": "middle"}})",
             MouseDown{MouseButton::Middle}},
        Case{R"({"action_type": "MOUSE_UP"})", MouseUp{MouseButton::Left}},
        Case{R"({"action_type": "RIGHT_CLICK", "parameters": {"x": 5, "y": 6}})",
             Click{Point{5, 6}, MouseButton::Right, 1}},
        Case{R"({"action_type": "DOUBLE_CLICK", "parameters": {"x": 5, "y": 6}})",
             Click{Point{5, 6}, MouseButton::Left, 2}},
        Case{R"({"action_type": "DRAG_TO", "parameters": {"x": 300, "y": 400}})",
             Drag{std::nullopt, Point{300, 400}, MouseButton::Left}},
        // computer_13 runs vscroll(dy): positive is up, which is negative in Scroll.
        Case{R"({"action_type": "SCROLL", "parameters": {"dx": 0, "dy": 3}})",
             Scroll{std::nullopt, 0, -3}},
        Case{R"({"action_type": "SCROLL", "parameters": {"dx": -2, "dy": -1}})",
             Scroll{std::nullopt, -2, 1}},
        Case{R"({"action_type": "TYPING", "parameters": {"text": "hi\nthere"}})",
             TypeText{"hi\nthere"}},
        Case{R"({"action_type": "PRESS", "parameters": {"key": "Enter"}})", PressKeys{{"enter"}}},
        Case{R"({"action_type": "KEY_DOWN", "parameters": {"key": "shift"}})", KeyDown{"shift"}},
        Case{R"({"action_type": "KEY_UP", "parameters": {"key": "SHIFT"}})", KeyUp{"shift"}},
        Case{R"({"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "Shift", "t"]}})",
             PressKeys{{"ctrl", "shift", "t"}}},
        Case{R"({"action_type": "WAIT"})", Wait{}}, Case{R"({"action_type": "FAIL"})", Fail{}},
        Case{R"({"action_type": "DONE"})", Done{}},
        // Parameters at the top level, and a lower-case action type.
        Case{R"({"action_type": "click", "x": 1, "y": 2})", Click{Point{1, 2}}},
        // Bare special tokens.
        Case{"DONE", Done{}}, Case{"```WAIT```", Wait{}},
        Case{"The task is finished.\nFAIL", Fail{}}));

TEST(Computer13Parser, FindsJsonInsideProseAndFences) {
    const ParsedStep step = parseText(ActionFormat::Computer13, R"(I will click the OK button.
```json
{"action_type": "CLICK", "parameters": {"x": 640, "y": 400}}
```)");
    expectActions(step, {Click{Point{640, 400}}});
    EXPECT_EQ(step.thought, "I will click the OK button.");

    expectActions(parseText(ActionFormat::Computer13,
                            R"(Next: {"action_type": "PRESS", "parameters": {"key": "tab"}} ok)"),
                  {PressKeys{{"tab"}}});
}

TEST(Computer13Parser, ReadsArraysAndSeveralBlocksInOrder) {
    expectActions(parseText(ActionFormat::Computer13,
                            R"([{"action_type": "CLICK", "parameters": {"x": 1, "y": 2}},
                                {"action_type": "TYPING", "parameters": {"text": "a"}}])"),
                  {Click{Point{1, 2}}, TypeText{"a"}});
    expectActions(parseText(ActionFormat::Computer13, R"(```json
{"action_type": "PRESS", "parameters": {"key": "a"}}
```
then
```json
{"action_type": "PRESS", "parameters": {"key": "b"}}
```)"),
                  {PressKeys{{"a"}}, PressKeys{{"b"}}});
}

TEST(Computer13Parser, ReportsBadActionsByIndexAndParameter) {
    ParsedStep step = parseText(ActionFormat::Computer13,
                                R"([{"action_type": "CLICK", "parameters": {"x": 1, "y": 2}},
                                    {"action_type": "CLICK", "parameters": {"x": "10", "y": 2}}])");
    EXPECT_EQ(step.actions.size(), 1u);
    ASSERT_EQ(step.errors.size(), 1u);
    EXPECT_EQ(step.errors[0], "action 2: CLICK: parameter 'x': expected a number");

    expectError(parseText(ActionFormat::Computer13, R"({"action_type": "CLICK", "x": 5})"),
                "action 1: CLICK: parameter 'y': missing");
    expectError(parseText(ActionFormat::Computer13, R"({"action_type": "JUMP"})"),
                "unknown action_type 'JUMP'");
    expectError(parseText(ActionFormat::Computer13,
                          R"({"action_type": "PRESS", "parameters": {"key": "entr"}})"),
                "parameter 'key': unknown key name 'entr'");
    expectError(parseText(ActionFormat::Computer13,
                          R"({"action_type": "HOTKEY", "parameters": {"keys": []}})"),
                "parameter 'keys'");
    expectError(parseText(ActionFormat::Computer13,
                          R"({"action_type": "CLICK", "parameters": {"num_clicks": 7}})"),
                "parameter 'num_clicks'");
    expectError(parseText(ActionFormat::Computer13,
                          R"({"action_type": "MOVE_TO", "parameters": {"x": 5000, "y": 5}})"),
                "outside the 1920x1080 screen");
    expectError(parseText(ActionFormat::Computer13,
                          R"({"action_type": "MOVE_TO", "parameters": {"x": 1e400, "y": 5}})"),
                "no JSON action found");
    expectError(parseText(ActionFormat::Computer13, R"({"action_type": "SCROLL"})"), "'dy'");
    expectError(parseText(ActionFormat::Computer13, "I am not sure what to do."),
                "no JSON action found");
    expectError(parseText(ActionFormat::Computer13, R"({"action_type": "CLICK", "x": 1)"),
                "no JSON action found");
}

}  // namespace
}  // namespace iris::agent
