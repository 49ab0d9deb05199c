#include "agent/actions/action.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace iris::agent {
namespace {

// One value of every alternative, with optional fields both present and absent.
std::vector<Action> everyAction() {
    return {
        Click{Point{640, 400}, MouseButton::Left, 1},
        Click{std::nullopt, MouseButton::Right, 2},
        Click{Point{0.5, 1.25}, MouseButton::Middle, 3},
        MoveTo{Point{10, 20}},
        MouseDown{MouseButton::Right},
        MouseUp{MouseButton::Middle},
        Drag{Point{1, 2}, Point{3, 4}, MouseButton::Left},
        Drag{std::nullopt, Point{5, 6}, MouseButton::Right},
        Scroll{Point{100, 200}, 0, 3},
        Scroll{std::nullopt, -2, -5},
        TypeText{"hello \"world\"\nnew line \xc3\xa9"},
        PressKeys{{"enter"}},
        PressKeys{{"ctrl", "shift", "t"}},
        KeyDown{"shift"},
        KeyUp{"shift"},
        Wait{2.5},
        Done{"all good"},
        Fail{"no such menu"},
        Navigate{"https://example.com/a?b=c"},
        ReadFile{"src/index.html"},
        WriteFile{"src/app.js", "console.log('hi');\n"},
        ReplaceInFile{"src/app.css", "color: red", "color: blue"},
    };
}

TEST(ActionJson, RoundTripsEveryAlternative) {
    std::vector<bool> seen(std::variant_size_v<Action>, false);
    for (const Action& action : everyAction()) {
        seen[action.index()] = true;
        const nlohmann::json json = actionToJson(action);
        EXPECT_EQ(json.at("type").get<std::string>(), actionName(action));
        // Through text too, as the recorder stores it.
        const Result<Action> back = actionFromJson(nlohmann::json::parse(json.dump()));
        ASSERT_TRUE(back.isOk()) << json.dump() << ": " << back.status().message();
        EXPECT_EQ(*back, action) << json.dump();
    }
    for (std::size_t i = 0; i < seen.size(); ++i)
        EXPECT_TRUE(seen[i]) << "alternative " << i;
}

TEST(ActionJson, UsesTheDocumentedFieldNames) {
    EXPECT_EQ(
        actionToJson(Click{Point{640, 400}, MouseButton::Left, 1}),
        nlohmann::json::parse(R"({"type":"click","x":640,"y":400,"button":"left","count":1})"));
    EXPECT_EQ(actionToJson(Drag{Point{1, 2}, Point{3, 4}, MouseButton::Left}),
              nlohmann::json::parse(
                  R"({"type":"drag","from_x":1,"from_y":2,"x":3,"y":4,"button":"left"})"));
    // Absent optional points are omitted, not null.
    EXPECT_EQ(actionToJson(Scroll{std::nullopt, 0, 3}),
              nlohmann::json::parse(R"({"type":"scroll","dx":0,"dy":3})"));
    EXPECT_EQ(actionToJson(ReplaceInFile{"a", "b", "c"}),
              nlohmann::json::parse(
                  R"({"type":"replace_in_file","path":"a","old_text":"b","new_text":"c"})"));
}

TEST(ActionJson, DefaultsOptionalFields) {
    const Result<Action> click = actionFromJson(nlohmann::json::parse(R"({"type":"click"})"));
    ASSERT_TRUE(click.isOk());
    EXPECT_EQ(*click, Action(Click{}));
    const Result<Action> wait = actionFromJson(nlohmann::json::parse(R"({"type":"wait"})"));
    ASSERT_TRUE(wait.isOk());
    EXPECT_EQ(*wait, Action(Wait{1.0}));
}

struct BadJson {
    const char* json;
    const char* message;
};

class ActionJsonErrors : public testing::TestWithParam<BadJson> {};

TEST_P(ActionJsonErrors, NameTheField) {
    const Result<Action> result = actionFromJson(nlohmann::json::parse(GetParam().json));
    ASSERT_FALSE(result.isOk()) << GetParam().json;
    EXPECT_EQ(result.status().code(), StatusCode::InvalidArgument);
    EXPECT_EQ(result.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ActionJsonErrors,
    testing::Values(
        BadJson{R"([1,2])", "action JSON: expected an object, got array"},
        BadJson{R"({"x":1})", "action JSON: field 'type': missing"},
        BadJson{R"({"type":7})", "action JSON: field 'type': expected a string"},
        BadJson{R"({"type":"teleport"})",
                "action JSON: field 'type': unknown action type \"teleport\""},
        BadJson{R"({"type":"click","x":"1","y":2})", "action JSON: field 'x': expected a number"},
        BadJson{R"({"type":"click","x":1})", "action JSON: field 'y': missing"},
        BadJson{R"({"type":"click","x":1,"y":2,"count":4})",
                "action JSON: field 'count': expected an integer from 1 to 3"},
        BadJson{R"({"type":"click","button":"side"})",
                "action JSON: field 'button': expected \"left\", \"right\" or \"middle\", not "
                "\"side\""},
        BadJson{R"({"type":"move_to","y":2})", "action JSON: field 'x': missing"},
        BadJson{R"({"type":"drag","from_x":1,"x":3,"y":4})",
                "action JSON: field 'from_y': missing"},
        BadJson{R"({"type":"scroll","dy":1.5})", "action JSON: field 'dy': expected an integer"},
        BadJson{R"({"type":"scroll","dy":18446744073709551615})",
                "action JSON: field 'dy': expected an integer from -10000 to 10000"},
        BadJson{R"({"type":"type_text"})", "action JSON: field 'text': missing"},
        BadJson{R"({"type":"press_keys","keys":[]})",
                "action JSON: field 'keys': expected at least one key"},
        BadJson{R"({"type":"press_keys","keys":"enter"})",
                "action JSON: field 'keys': expected an array of strings"},
        BadJson{R"({"type":"press_keys","keys":["ctrl", 3]})",
                "action JSON: field 'keys': expected an array of non-empty strings"},
        BadJson{R"({"type":"key_down","key":""})",
                "action JSON: field 'key': expected a non-empty key name"},
        BadJson{R"({"type":"wait","seconds":-1})",
                "action JSON: field 'seconds': expected a number >= 0"},
        BadJson{R"({"type":"done","message":null})",
                "action JSON: field 'message': expected a string"},
        BadJson{R"({"type":"replace_in_file","path":"a","old_text":"b"})",
                "action JSON: field 'new_text': missing"}));

TEST(Action, ClassifiesEpisodeEndAndFileActions) {
    for (const Action& action : everyAction()) {
        const std::string_view name = actionName(action);
        EXPECT_EQ(endsEpisode(action), name == "done" || name == "fail") << name;
        EXPECT_EQ(isFileAction(action),
                  name == "read_file" || name == "write_file" || name == "replace_in_file")
            << name;
    }
}

TEST(Action, DescribesActionsReadably) {
    EXPECT_EQ(describe(Click{Point{640, 400}, MouseButton::Left, 1}), "click(640, 400)");
    EXPECT_EQ(describe(Click{Point{1.5, 2}, MouseButton::Left, 2}), "double_click(1.5, 2)");
    EXPECT_EQ(describe(Click{std::nullopt, MouseButton::Right, 1}), "right_click()");
    EXPECT_EQ(describe(TypeText{"hello\n"}), "type(\"hello\\n\")");
    EXPECT_EQ(describe(PressKeys{{"ctrl", "s"}}), "hotkey(ctrl+s)");
    EXPECT_EQ(describe(PressKeys{{"enter"}}), "press(enter)");
    EXPECT_EQ(describe(Scroll{Point{10, 20}, 0, -3}), "scroll(10, 20, dy=-3)");
    EXPECT_EQ(describe(Drag{Point{1, 2}, Point{3, 4}, MouseButton::Left}), "drag(1, 2 -> 3, 4)");
    EXPECT_EQ(describe(WriteFile{"a.txt", "abc"}), "write_file(\"a.txt\", 3 bytes)");
    EXPECT_EQ(describe(Wait{0.5}), "wait(0.5s)");
    // Long text is shortened so a log line stays a line.
    EXPECT_LT(describe(TypeText{std::string(10000, 'a')}).size(), 200u);
}

TEST(Action, NamesMouseButtons) {
    EXPECT_EQ(mouseButtonName(MouseButton::Left), "left");
    EXPECT_EQ(mouseButtonName(MouseButton::Right), "right");
    EXPECT_EQ(mouseButtonName(MouseButton::Middle), "middle");
}

}  // namespace
}  // namespace iris::agent
