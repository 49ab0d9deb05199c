#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/agent/actions/parse_test_util.h"

namespace iris::agent {
namespace {

using testing::expectActions;
using testing::expectError;
using testing::screen;

ParsedStep parseCall(const std::string& name, const std::string& arguments,
                     const ParseOptions& options = screen()) {
    ChatResponse response;
    response.toolCalls.push_back({"call_1", name, arguments});
    return parseModelOutput(ActionFormat::ToolCalls, response, options);
}

struct Case {
    const char* name;
    const char* arguments;
    Action expected;
};

class ToolCallActions : public ::testing::TestWithParam<Case> {};

TEST_P(ToolCallActions, ParseIntoTheirAction) {
    expectActions(parseCall(GetParam().name, GetParam().arguments), {GetParam().expected});
}

INSTANTIATE_TEST_SUITE_P(
    EveryTool, ToolCallActions,
    ::testing::Values(
        Case{"click", R"({"x": 10, "y": 20})", Click{Point{10, 20}}},
        Case{"click", R"({"x": 10, "y": 20, "button": "right", "clicks": 2})",
             Click{Point{10, 20}, MouseButton::Right, 2}},
        Case{"double_click", R"({"x": 1, "y": 2})", Click{Point{1, 2}, MouseButton::Left, 2}},
        Case{"move_to", R"({"x": 1, "y": 2})", MoveTo{{1, 2}}},
        Case{"drag", R"({"from_x": 1, "from_y": 2, "to_x": 3, "to_y": 4})",
             Drag{Point{1, 2}, Point{3, 4}, MouseButton::Left}},
        Case{"scroll", R"({"x": 5, "y": 6, "dy": 3})", Scroll{Point{5, 6}, 0, 3}},
        Case{"scroll", R"({"dx": -2})", Scroll{std::nullopt, -2, 0}},
        Case{"type_text", R"({"text": "héllo\n"})", TypeText{"h\xc3\xa9llo\n"}},
        Case{"press_keys", R"({"keys": ["Ctrl", "s"]})", PressKeys{{"ctrl", "s"}}},
        Case{"press_keys", R"({"keys": "enter"})", PressKeys{{"enter"}}},
        Case{"wait", R"({"seconds": 2.5})", Wait{2.5}}, Case{"wait", "", Wait{1.0}},
        Case{"done", R"({"message": "saved"})", Done{"saved"}}, Case{"done", "{}", Done{}},
        Case{"fail", R"({"reason": "no network"})", Fail{"no network"}},
        Case{"navigate", R"({"url": "https://example.com"})", Navigate{"https://example.com"}},
        Case{"read_file", R"({"path": "index.html"})", ReadFile{"index.html"}},
        Case{"write_file", R"({"path": "a.css", "content": "p {}"})", WriteFile{"a.css", "p {}"}},
        Case{"replace_in_file", R"({"path": "a", "old_text": "b", "new_text": "c"})",
             ReplaceInFile{"a", "b", "c"}}));

TEST(ToolCallParser, ReadsQwenToolCallBlocksInTheText) {
    ChatResponse response;
    response.text =
        "I will open the menu.\n<tool_call>\n{\"name\": \"click\", \"arguments\": "
        "{\"x\": 5, \"y\": 6}}\n</tool_call>\n<tool_call>\n{\"name\": \"type_text\", "
        "\"arguments\": \"{\\\"text\\\": \\\"hi\\\"}\"}";  // last one unclosed
    const ParsedStep step = parseModelOutput(ActionFormat::ToolCalls, response, screen());
    expectActions(step, {Click{Point{5, 6}}, TypeText{"hi"}});
    EXPECT_EQ(step.thought, "I will open the menu.");
}

TEST(ToolCallParser, ReportsBadCallsByIndexNameAndArgument) {
    expectError(parseCall("click", R"({"x": 10})"), "tool call 1 (click): argument 'y': missing");
    expectError(parseCall("click", R"({"x": "10", "y": 1})"),
                "tool call 1 (click): argument 'x': expected a number");
    expectError(parseCall("click", R"({"x": 10, "y": 1, "clicks": 9})"), "argument 'clicks'");
    expectError(parseCall("teleport", "{}"), "tool call 1 (teleport): unknown tool");
    expectError(parseCall("click", "{\"x\": 1,"), "arguments are not valid JSON");
    expectError(parseCall("click", "[1, 2]"), "arguments must be a JSON object");
    expectError(parseCall("press_keys", R"({"keys": ["ctrl", "sx"]})"), "unknown key name 'sx'");
    expectError(parseCall("scroll", "{}"), "dx and dy are both 0");
    expectError(parseCall("wait", R"({"seconds": 1e9})"), "argument 'seconds'");
    // nlohmann rejects numbers beyond double range as invalid JSON.
    expectError(parseCall("move_to", R"({"x": 1e400, "y": 1})"), "arguments are not valid JSON");
    expectError(parseCall("move_to", R"({"x": 2000, "y": 1})"), "outside the 1920x1080 screen");
    expectError(parseCall("write_file", R"({"path": "a"})"), "argument 'content': missing");

    ChatResponse response;
    response.text = "<tool_call>{\"arguments\": {}}</tool_call><tool_call>not json</tool_call>";
    const ParsedStep step = parseModelOutput(ActionFormat::ToolCalls, response, screen());
    expectError(step, "tool call 1: missing \"name\"");
    expectError(step, "tool call 2: not a JSON object: 'not json'");
}

TEST(ToolCallParser, AnAnswerWithoutCallsIsAnError) {
    ChatResponse response;
    response.text = "I think the page looks fine.";
    const ParsedStep step = parseModelOutput(ActionFormat::ToolCalls, response, screen());
    EXPECT_TRUE(step.actions.empty());
    expectError(step, "no action found");
    EXPECT_EQ(step.thought, "I think the page looks fine.");
}

TEST(ToolDefinitions, SchemasAreJsonSchemaObjectsThatMatchTheParser) {
    const std::vector<ToolDefinition> tools = toolDefinitions(true);
    std::vector<std::string> names;
    for (const ToolDefinition& tool : tools) {
        names.push_back(tool.name);
        EXPECT_FALSE(tool.description.empty()) << tool.name;
        const nlohmann::json schema = nlohmann::json::parse(tool.parametersSchema, nullptr, false);
        ASSERT_FALSE(schema.is_discarded()) << tool.name << ": " << tool.parametersSchema;
        EXPECT_EQ(schema.at("type"), "object") << tool.name;
        ASSERT_TRUE(schema.at("properties").is_object()) << tool.name;
        // A call with every required property set to a plausible value parses: the schema and
        // the parser agree on names and types.
        nlohmann::json arguments = nlohmann::json::object();
        for (const auto& required : schema.value("required", nlohmann::json::array())) {
            const std::string key = required.get<std::string>();
            const std::string type = schema["properties"][key].at("type").get<std::string>();
            if (type == "number" || type == "integer") arguments[key] = 10;
            if (type == "string") arguments[key] = "x";
            if (type == "array") arguments[key] = nlohmann::json::array({"enter"});
            EXPECT_TRUE(schema["properties"].contains(key)) << tool.name << "." << key;
        }
        if (tool.name == "scroll") arguments["dy"] = 1;
        const ParsedStep step = parseCall(tool.name, arguments.dump());
        EXPECT_TRUE(step.errors.empty()) << tool.name << ": " << testing::describeAll(step);
        ASSERT_EQ(step.actions.size(), 1u) << tool.name;
        EXPECT_EQ(actionName(step.actions[0]), tool.name == "double_click" ? "click" : tool.name);
    }
    EXPECT_EQ(names,
              (std::vector<std::string>{"click", "double_click", "move_to", "drag", "scroll",
                                        "type_text", "press_keys", "wait", "done", "fail",
                                        "navigate", "read_file", "write_file", "replace_in_file"}));
    EXPECT_EQ(toolDefinitions(false, false).size(), 10u);
}

}  // namespace
}  // namespace iris::agent
