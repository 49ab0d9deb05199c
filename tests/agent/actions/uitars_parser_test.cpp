#include <gtest/gtest.h>

#include "tests/agent/actions/parse_test_util.h"

namespace iris::agent {
namespace {

using testing::expectActions;
using testing::expectError;
using testing::parseText;
using testing::screen;

struct Case {
    const char* action;
    Action expected;
};

class UiTarsActions : public ::testing::TestWithParam<Case> {};

TEST_P(UiTarsActions, ParseIntoTheirAction) {
    const std::string text = std::string("Thought: do it\nAction: ") + GetParam().action;
    expectActions(parseText(ActionFormat::UiTars, text), {GetParam().expected});
}

INSTANTIATE_TEST_SUITE_P(
    EveryAction, UiTarsActions,
    ::testing::Values(
        Case{"click(start_box='(100,200)')", Click{Point{100, 200}}},
        Case{"click(start_box='<|box_start|>(100,200)<|box_end|>')", Click{Point{100, 200}}},
        Case{"click(point='<point>100 200</point>')", Click{Point{100, 200}}},
        Case{"click(start_box='(100,200,300,400)')", Click{Point{200, 300}}},
        Case{"click(start_box='[100, 200, 300, 400]')", Click{Point{200, 300}}},
        Case{"left_double(start_box='(5,6)')", Click{Point{5, 6}, MouseButton::Left, 2}},
        Case{"right_single(start_box='(5,6)')", Click{Point{5, 6}, MouseButton::Right, 1}},
        Case{"drag(start_box='(1,2)', end_box='(3,4)')",
             Drag{Point{1, 2}, Point{3, 4}, MouseButton::Left}},
        Case{"drag(start_point='<point>1 2</point>', end_point='<point>3 4</point>')",
             Drag{Point{1, 2}, Point{3, 4}, MouseButton::Left}},
        Case{"hotkey(key='ctrl c')", PressKeys{{"ctrl", "c"}}},
        Case{"hotkey(key='Enter')", PressKeys{{"enter"}}},
        Case{"hotkey(key='ctrl+shift+t')", PressKeys{{"ctrl", "shift", "t"}}},
        Case{"type(content='hello\\nworld \\'q\\' \\\"d\\\"\\n')",
             TypeText{"hello\nworld 'q' \"d\"\n"}},
        Case{"type(content='a, b) c')", TypeText{"a, b) c"}},
        Case{"scroll(start_box='(10,20)', direction='down')", Scroll{Point{10, 20}, 0, 5}},
        Case{"scroll(start_box='(10,20)', direction='up')", Scroll{Point{10, 20}, 0, -5}},
        Case{"scroll(direction='left')", Scroll{std::nullopt, -5, 0}},
        Case{"scroll(start_box='(10,20)', direction='right')", Scroll{Point{10, 20}, 5, 0}},
        Case{"wait()", Wait{5}}, Case{"finished(content='All set.')", Done{"All set."}},
        Case{"finished()", Done{}}, Case{"call_user()", Fail{"the model asked for the user"}}));

TEST(UiTarsParser, SeparatesThoughtFromActionsAndReadsSeveralActions) {
    const ParsedStep step = parseText(ActionFormat::UiTars,
                                      "Thought: The field is empty. I will fill it in.\n"
                                      "Action: click(start_box='(10,10)')\n\n"
                                      "type(content='abc')");
    expectActions(step, {Click{Point{10, 10}}, TypeText{"abc"}});
    EXPECT_EQ(step.thought, "The field is empty. I will fill it in.");
}

TEST(UiTarsParser, MapsCoordinatesThroughTheFrame) {
    ParseOptions relative = screen(1920, 1080);
    relative.frame.kind = CoordinateFrame::Kind::Relative1000;
    expectActions(parseText(ActionFormat::UiTars, "Action: click(start_box='(500,250)')", relative),
                  {Click{Point{960, 270}}});

    // UI-TARS-1.5 answers in the pixels of the smart-resized image (1932x1092 for 1920x1080).
    ParseOptions resized = screen(1920, 1080);
    resized.frame = {CoordinateFrame::Kind::ResizedImage, 1932, 1092};
    const ParsedStep step =
        parseText(ActionFormat::UiTars, "Action: click(start_box='(966,546)')", resized);
    ASSERT_EQ(step.actions.size(), 1u) << testing::describeAll(step);
    const Point p = *std::get<Click>(step.actions[0]).at;
    EXPECT_DOUBLE_EQ(p.x, 960);
    EXPECT_DOUBLE_EQ(p.y, 540);
}

struct BadAction {
    const char* text;
    const char* error;
};

class UiTarsErrors : public ::testing::TestWithParam<BadAction> {};

TEST_P(UiTarsErrors, NameTheActionAndTheProblem) {
    expectError(parseText(ActionFormat::UiTars, GetParam().text), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Table, UiTarsErrors,
    ::testing::Values(
        BadAction{"Action: clack(start_box='(1,2)')", "action 1: clack: unknown action"},
        BadAction{"Action: click()", "action 1: click: missing start_box"},
        BadAction{"Action: click(start_box='(1)')", "expected a point '(x,y)'"},
        BadAction{"Action: click(start_box='(1,2)'", "click: missing ')'"},
        BadAction{"Action: type(content='unbalanced)", "type: unterminated string"},
        BadAction{"Action: click(start_box='(5000,2)')", "outside the 1920x1080 screen"},
        BadAction{"Action: hotkey(key='ctrl cc')", "unknown key name 'cc'"},
        BadAction{"Action: scroll(start_box='(1,2)')", "missing direction"},
        BadAction{"Action: scroll(direction='sideways')", "direction must be down, up"},
        BadAction{"Action: drag(start_box='(1,2)')", "missing end_box"},
        BadAction{"Action: click(start_box='(1,2)')\n\n!!!", "action 2: expected an action"},
        BadAction{"Thought: hmm, I am not sure", "action 1"}));

}  // namespace
}  // namespace iris::agent
