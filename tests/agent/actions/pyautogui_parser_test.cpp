#include <cmath>

#include <gtest/gtest.h>

#include "tests/agent/actions/parse_test_util.h"

namespace iris::agent {
namespace {

using testing::expectActions;
using testing::expectError;
using testing::parseText;
using testing::screen;

struct Case {
    const char* code;
    std::vector<Action> expected;
};

class PyautoguiCalls : public ::testing::TestWithParam<Case> {};

TEST_P(PyautoguiCalls, ParseIntoTheirActions) {
    expectActions(parseText(ActionFormat::Pyautogui, GetParam().code), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    EveryFunction, PyautoguiCalls,
    ::testing::Values(
        Case{"pyautogui.click(100, 200)", {Click{Point{100, 200}}}},
        Case{"pyautogui.click(x=100, y=200, button='right', clicks=2)",
             {Click{Point{100, 200}, MouseButton::Right, 2}}},
        Case{"pyautogui.click()", {Click{}}},
        Case{"pyautogui.click((10, 20))", {Click{Point{10, 20}}}},
        Case{"pyautogui.click(100 + 20, 300 / 2)", {Click{Point{120, 150}}}},
        Case{"pyautogui.doubleClick(5, 6)", {Click{Point{5, 6}, MouseButton::Left, 2}}},
        Case{"pyautogui.tripleClick(5, 6)", {Click{Point{5, 6}, MouseButton::Left, 3}}},
        Case{"pyautogui.rightClick(5, 6)", {Click{Point{5, 6}, MouseButton::Right, 1}}},
        Case{"pyautogui.middleClick(5, 6)", {Click{Point{5, 6}, MouseButton::Middle, 1}}},
        Case{"pyautogui.moveTo(7.5, 8, duration=0.5)", {MoveTo{{7.5, 8}}}},
        Case{"pyautogui.moveTo(100, 100)\npyautogui.moveRel(-10, 20)",
             {MoveTo{{100, 100}}, MoveTo{{90, 120}}}},
        Case{"pyautogui.dragTo(300, 400, duration=1.0, button='left')",
             {Drag{std::nullopt, Point{300, 400}, MouseButton::Left}}},
        Case{"pyautogui.moveTo(10, 10)\npyautogui.drag(30, 0)",
             {MoveTo{{10, 10}}, Drag{Point{10, 10}, Point{40, 10}, MouseButton::Left}}},
        Case{"pyautogui.mouseDown(); pyautogui.mouseUp(button='right')",
             {MouseDown{MouseButton::Left}, MouseUp{MouseButton::Right}}},
        Case{"pyautogui.mouseDown(50, 60)", {MoveTo{{50, 60}}, MouseDown{MouseButton::Left}}},
        // pyautogui scrolls up for positive clicks; Scroll's positive dy is down.
        Case{"pyautogui.scroll(-5)", {Scroll{std::nullopt, 0, 5}}},
        Case{"pyautogui.scroll(3, x=100, y=200)", {Scroll{Point{100, 200}, 0, -3}}},
        Case{"pyautogui.vscroll(2)", {Scroll{std::nullopt, 0, -2}}},
        Case{"pyautogui.hscroll(4)", {Scroll{std::nullopt, 4, 0}}},
        Case{"pyautogui.write('hello, world')", {TypeText{"hello, world"}}},
        Case{"pyautogui.typewrite(\"it's \\\"quoted\\\"\\n\", interval=0.05)",
             {TypeText{"it's \"quoted\"\n"}}},
        Case{"pyautogui.typewrite(['a', 'enter'])", {PressKeys{{"a"}}, PressKeys{{"enter"}}}},
        Case{"pyautogui.write('''line one\nline two''')", {TypeText{"line one\nline two"}}},
        Case{"pyautogui.write(r'C:\\new')", {TypeText{"C:\\new"}}},
        Case{"pyautogui.write('caf\\u00e9 \\x41')", {TypeText{"caf\xc3\xa9 A"}}},
        Case{"pyautogui.write('a < b')", {TypeText{"a < b"}}},
        Case{"pyautogui.press('enter')", {PressKeys{{"enter"}}}},
        Case{"pyautogui.press('Tab', presses=2)", {PressKeys{{"tab"}}, PressKeys{{"tab"}}}},
        Case{"pyautogui.press(['down', 'enter'])", {PressKeys{{"down"}}, PressKeys{{"enter"}}}},
        Case{"pyautogui.hotkey('ctrl', 'shift', 't')", {PressKeys{{"ctrl", "shift", "t"}}}},
        Case{"pyautogui.hotkey(['ctrl', 'c'], interval=0.1)", {PressKeys{{"ctrl", "c"}}}},
        Case{"pyautogui.keyDown('shift')\npyautogui.keyUp('shift')",
             {KeyDown{"shift"}, KeyUp{"shift"}}},
        Case{"import time\ntime.sleep(0.5)", {Wait{0.5}}}, Case{"pyautogui.sleep(2)", {Wait{2}}},
        Case{"WAIT", {Wait{}}}, Case{"```DONE```", {Done{}}}, Case{"```FAIL```", {Fail{}}}));

TEST(PyautoguiParser, ReadsAFencedScriptAndKeepsTheProseAsThought) {
    const ParsedStep step = parseText(ActionFormat::Pyautogui, R"(The search box is at the top.
```python
import pyautogui
import time
pyautogui.FAILSAFE = False
pyautogui.click(960, 40)  # focus the box
time.sleep(0.5)
pyautogui.write("weather in Paris")
pyautogui.press("enter")
```)");
    expectActions(step, {Click{Point{960, 40}}, Wait{0.5}, TypeText{"weather in Paris"},
                         PressKeys{{"enter"}}});
    EXPECT_EQ(step.thought, "The search box is at the top.");
}

TEST(PyautoguiParser, TakesTheSpecialTokenOnTheLastLineOfABlock) {
    expectActions(
        parseText(ActionFormat::Pyautogui, "```python\npyautogui.press('enter')\nDONE\n```"),
        {PressKeys{{"enter"}}, Done{}});
    const ParsedStep step = parseText(ActionFormat::Pyautogui, "Everything is saved.\nDONE");
    expectActions(step, {Done{}});
    EXPECT_EQ(step.thought, "Everything is saved.");
}

TEST(PyautoguiParser, ReadsBareCodeThatEndsWithASpecialToken) {
    expectActions(parseText(ActionFormat::Pyautogui, "pyautogui.press('enter')\nDONE"),
                  {PressKeys{{"enter"}}, Done{}});
}

TEST(PyautoguiParser, SupportsModuleAliasesAndMultiLineCalls) {
    expectActions(parseText(ActionFormat::Pyautogui,
                            "import pyautogui as pag\npag.click(\n  1,\n  "
                            "2,\n)"),
                  {Click{Point{1, 2}}});
}

struct BadCode {
    const char* code;
    const char* error;
};

class PyautoguiErrors : public ::testing::TestWithParam<BadCode> {};

TEST_P(PyautoguiErrors, NameTheLineAndTheProblem) {
    expectError(parseText(ActionFormat::Pyautogui, GetParam().code), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Table, PyautoguiErrors,
    ::testing::Values(
        BadCode{"pyautogui.click(1, 2)\n\npyautogui.clik(3, 4)",
                "line 3: pyautogui.clik: unknown function"},
        BadCode{"import os\nos.system('rm -rf /')", "line 1: import os: only pyautogui and time"},
        BadCode{"os.system('ls')", "line 1: os.system: only pyautogui and time functions"},
        BadCode{"import subprocess", "only pyautogui and time may be imported"},
        BadCode{"from os import system", "'from ... import' is not supported"},
        BadCode{"eval('1')", "line 1: eval: unknown function"},
        BadCode{"x = 5\npyautogui.click(x, 1)", "line 1: assignments are not supported"},
        BadCode{"pyautogui.click(x, 1)", "line 1: 'x': variables and expressions"},
        BadCode{"for i in range(3):\n    pyautogui.press('a')", "line 1: 'for' is not supported"},
        BadCode{"pyautogui.write('unbalanced)", "line 1: unterminated string"},
        BadCode{"pyautogui.write('''never closed", "unterminated string"},
        BadCode{"pyautogui.click(1, 2", "expected ',' or ')'"},
        BadCode{"pyautogui.press('entr')", "unknown key name 'entr'"},
        BadCode{"pyautogui.hotkey('ctrl', 5)", "key names must be strings"},
        BadCode{"pyautogui.click(100)", "'x' given without 'y'"},
        BadCode{"pyautogui.moveTo()", "missing arguments 'x' and 'y'"},
        BadCode{"pyautogui.moveRel(10, 10)", "relative move needs the pointer position"},
        BadCode{"pyautogui.click(1e999, 5)", "'x' must be finite"},
        BadCode{"pyautogui.click(99999999999999999999, 5)", "outside the 1920x1080 screen"},
        BadCode{"pyautogui.click(-5, 5)", "outside the 1920x1080 screen"},
        BadCode{"pyautogui.click(1, 2, foo=3)", "unexpected keyword argument 'foo'"},
        BadCode{"pyautogui.click(1, 2, clicks=7)", "'clicks' must be a whole number"},
        BadCode{"pyautogui.click(1, 2, button='side')", "button must be 'left'"},
        BadCode{"pyautogui.screenshot()", "pyautogui.screenshot: not available"},
        BadCode{"pyautogui.write(f'{x}')", "f-strings are not supported"},
        BadCode{"pyautogui.press('a', presses=1000)", "'presses' must be a whole number"},
        BadCode{"time.sleep(-1)", "seconds must be from 0 to 600"},
        BadCode{"pyautogui.click(1, 2) pyautogui.click(3, 4)", "after the statement"},
        BadCode{"pyautogui.click(1, 2) $", "unexpected character '$'"},
        BadCode{"pyautogui.write(\"\xff\xfe\")\n\xc3", "unexpected character"},
        BadCode{
            "pyautogui.click(((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))),"
            " 2)",
            "nested too deeply"},
        BadCode{"I think I should click the button.", "line 1"}));

TEST(PyautoguiParser, KeepsGoodLinesAroundABadOne) {
    const ParsedStep step = parseText(
        ActionFormat::Pyautogui, "pyautogui.click(1, 2)\npyautogui.bogus()\npyautogui.press('a')");
    EXPECT_EQ(step.actions, (std::vector<Action>{Click{Point{1, 2}}, PressKeys{{"a"}}}));
    ASSERT_EQ(step.errors.size(), 1u);
    EXPECT_EQ(step.errors[0], "line 2: pyautogui.bogus: unknown function");
}

TEST(PyautoguiParser, CountsLinesFromTheStartOfTheAnswer) {
    expectError(parseText(ActionFormat::Pyautogui,
                          "Thinking.\n\n```python\npyautogui.click(1, 2)\npyautogui.nope()\n```"),
                "line 5: pyautogui.nope: unknown function");
}

TEST(PyautoguiParser, UsesTheKnownPointerForRelativeMoves) {
    ParseOptions options = screen();
    options.pointer = Point{500, 500};
    expectActions(parseText(ActionFormat::Pyautogui, "pyautogui.moveRel(10, -10)", options),
                  {MoveTo{{510, 490}}});
}

TEST(PyautoguiParser, InvalidUtf8InStringsBecomesReplacementCharacters) {
    const ParsedStep step = parseText(ActionFormat::Pyautogui,
                                      "pyautogui.write('a\xff"
                                      "b')");
    expectActions(step, {TypeText{"a\xef\xbf\xbd"
                                  "b"}});
}

}  // namespace
}  // namespace iris::agent
