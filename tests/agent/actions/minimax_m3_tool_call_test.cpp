// MiniMax-M3 answers through the tools action format: its ]<]minimax[>[ tool-call XML (spec:
// docs/minimax-m3.md section 5.3), written out here by hand, becomes the same actions as the
// equivalent OpenAI or Qwen tool calls.
#include <string>

#include <gtest/gtest.h>

#include "tests/agent/actions/parse_test_util.h"

namespace iris::agent {
namespace {

using testing::expectActions;
using testing::expectError;
using testing::parseText;
using testing::screen;

const std::string kNs = "]<]minimax[>[";

std::string element(const std::string& name, const std::string& value) {
    return kNs + "<" + name + ">" + value + kNs + "</" + name + ">";
}

std::string invoke(const std::string& name, const std::string& parameters) {
    return kNs + "<invoke name=\"" + name + "\">" + parameters + kNs + "</invoke>";
}

std::string block(const std::string& invokes) {
    return kNs + "<tool_call>\n" + invokes + "\n" + kNs + "</tool_call>";
}

ParsedStep parseTools(const std::string& text) {
    return parseText(ActionFormat::ToolCalls, text, screen());
}

TEST(MiniMaxM3ToolCalls, ReasoningTextAndSeveralCalls) {
    const ParsedStep step = parseTools(
        "<mm:think>The OK button is at the bottom.</mm:think>\nI will press OK and type.\n" +
        block(
            invoke("click", element("x", "10") + element("y", "20") + element("button", "right")) +
            "\n" + invoke("type_text", element("text", "123")) + "\n" +
            invoke("press_keys", element("keys", element("item", "ctrl") + element("item", "s")))));
    expectActions(step, {Click{Point{10, 20}, MouseButton::Right, 1}, TypeText{"123"},
                         PressKeys{{"ctrl", "s"}}});
    EXPECT_EQ(step.thought, "The OK button is at the bottom.\n\nI will press OK and type.");
}

TEST(MiniMaxM3ToolCalls, ThinkingOpenedByThePromptAndUnicodeText) {
    // With thinking enabled the prompt ends in <mm:think>: the answer starts inside it.
    const ParsedStep step =
        parseTools("Need to type the greeting.\n</mm:think>\n" +
                   block(invoke("type_text", element("text", "Grüße, 世界 👋\n"))));
    expectActions(step, {TypeText{"Gr\xc3\xbc\xc3\x9f"
                                  "e, \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x91\x8b\n"}});
    EXPECT_EQ(step.thought, "Need to type the greeting.");
}

TEST(MiniMaxM3ToolCalls, StringParametersStayTextAndFileToolsWork) {
    // The tool schemas type the parameters: "text" is a string even when it reads as JSON.
    expectActions(parseTools(block(invoke("type_text", element("text", "{\"a\": 1}")))),
                  {TypeText{"{\"a\": 1}"}});
    expectActions(
        parseTools(block(invoke("replace_in_file", element("path", "index.html") +
                                                       element("old_text", "<h1>Hi</h1>") +
                                                       element("new_text", "<h1>Hello</h1>\n")))),
        {ReplaceInFile{"index.html", "<h1>Hi</h1>", "<h1>Hello</h1>\n"}});
    expectActions(
        parseTools(block(invoke("wait", element("seconds", "2.5")) + "\n" + invoke("done", ""))),
        {Wait{2.5}, Done{}});
}

TEST(MiniMaxM3ToolCalls, CutOffAnswerKeepsCompletedCallsAndReportsTheRest) {
    const std::string text = block(invoke("move_to", element("x", "5") + element("y", "6"))) +
                             "\n" + kNs + "<tool_call>\n" + kNs + "<invoke name=\"click\">" + kNs +
                             "<x>3";
    const ParsedStep step = parseTools(text);
    ASSERT_EQ(step.actions.size(), 1u) << testing::describeAll(step);
    EXPECT_EQ(step.actions[0], Action(MoveTo{Point{5, 6}}));
    expectError(step, "MiniMax-M3 answer: byte " + std::to_string(text.rfind(kNs + "<x>")) +
                          ": <x> is not closed by " + kNs + "</x>");
}

TEST(MiniMaxM3ToolCalls, BadArgumentsAreReportedLikeOtherToolCalls) {
    expectError(parseTools(block(invoke("click", element("x", "ten") + element("y", "1")))),
                "tool call 1 (click): argument 'x': expected a number");
    expectError(parseTools(block(invoke("click", element("x", "1")))),
                "tool call 1 (click): argument 'y': missing");
    expectError(parseTools(block(invoke("teleport", ""))), "tool call 1 (teleport): unknown tool");
    expectError(parseTools(block(invoke("move_to", element("x", "5000") + element("y", "1")))),
                "outside the 1920x1080 screen");
    // Junk where a call should be, and nothing else: an error, and no action.
    const ParsedStep junk = parseTools(block("click(10, 20)"));
    EXPECT_TRUE(junk.actions.empty());
    expectError(junk, "MiniMax-M3 answer: byte " + std::to_string(kNs.size() + 12) + ": expected " +
                          kNs + "<invoke name=\"...\"> in the tool-call block");
}

TEST(MiniMaxM3ToolCalls, QwenSyntaxStillWorksBesideIt) {
    const ParsedStep step = parseTools(
        "</mm:think>Two ways.\n" + block(invoke("click", element("x", "1") + element("y", "2"))) +
        "\n<tool_call>\n{\"name\": \"click\", \"arguments\": {\"x\": 3, \"y\": 4}}\n</tool_call>");
    expectActions(step, {Click{Point{1, 2}}, Click{Point{3, 4}}});
    EXPECT_EQ(step.thought, "Two ways.");
}

TEST(MiniMaxM3ToolCalls, ReasoningWithoutACallIsNoAction) {
    const ParsedStep step = parseTools("<mm:think>Looking at the page.</mm:think>All good.");
    EXPECT_TRUE(step.actions.empty());
    expectError(step, "no action found");
    EXPECT_EQ(step.thought, "Looking at the page.\n\nAll good.");
}

}  // namespace
}  // namespace iris::agent
