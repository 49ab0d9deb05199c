#include "agent/actions/action_format.h"

#include <exception>
#include <type_traits>

#include "agent/actions/parse_common.h"

namespace iris::agent {
namespace {

// Model text can be any bytes; everything an Action carries must be valid UTF-8 so that it can be
// recorded as JSON.
void makeValidUtf8(Action& action) {
    const auto fix = [](std::string& s) { s = detail::toValidUtf8(s); };
    std::visit(
        [&](auto& a) {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, TypeText>) fix(a.text);
            if constexpr (std::is_same_v<T, PressKeys>)
                for (std::string& key : a.keys)
                    fix(key);
            if constexpr (std::is_same_v<T, KeyDown> || std::is_same_v<T, KeyUp>) fix(a.key);
            if constexpr (std::is_same_v<T, Done>) fix(a.message);
            if constexpr (std::is_same_v<T, Fail>) fix(a.reason);
            if constexpr (std::is_same_v<T, Navigate>) fix(a.url);
            if constexpr (std::is_same_v<T, ReadFile>) fix(a.path);
            if constexpr (std::is_same_v<T, WriteFile>) {
                fix(a.path);
                fix(a.content);
            }
            if constexpr (std::is_same_v<T, ReplaceInFile>) {
                fix(a.path);
                fix(a.oldText);
                fix(a.newText);
            }
        },
        action);
}

}  // namespace

Result<ActionFormat> actionFormatFromName(std::string_view name) {
    if (name == "computer13" || name == "computer_13") return ActionFormat::Computer13;
    if (name == "pyautogui") return ActionFormat::Pyautogui;
    if (name == "uitars" || name == "ui-tars" || name == "ui_tars") return ActionFormat::UiTars;
    if (name == "tools" || name == "tool_calls") return ActionFormat::ToolCalls;
    return Status::invalidArgument("unknown action format '" + detail::snippet(name) +
                                   "' (expected computer13, pyautogui, uitars or tools)");
}

std::string_view actionFormatName(ActionFormat format) {
    switch (format) {
        case ActionFormat::Computer13:
            return "computer13";
        case ActionFormat::Pyautogui:
            return "pyautogui";
        case ActionFormat::UiTars:
            return "uitars";
        case ActionFormat::ToolCalls:
            return "tools";
    }
    return "tools";
}

ParsedStep parseModelOutput(ActionFormat format, const ChatResponse& response,
                            const ParseOptions& options) {
    ParsedStep step;
    try {
        switch (format) {
            case ActionFormat::Computer13:
                detail::parseComputer13(response.text, options, step);
                break;
            case ActionFormat::Pyautogui:
                detail::parsePyautogui(response.text, options, step);
                break;
            case ActionFormat::UiTars:
                detail::parseUiTars(response.text, options, step);
                break;
            case ActionFormat::ToolCalls:
                detail::parseToolCalls(response, options, step);
                break;
        }
    } catch (const std::exception& e) {
        // The parsers report problems as errors; reaching here is a bug, but one model answer must
        // not take the agent down.
        step.errors.push_back(std::string("internal parser error: ") + e.what());
    }
    step.thought = detail::toValidUtf8(step.thought);
    for (Action& action : step.actions)
        makeValidUtf8(action);
    for (std::string& error : step.errors)
        error = detail::toValidUtf8(error);
    if (step.actions.empty() && step.errors.empty())
        step.errors.push_back("no action found in the answer");
    return step;
}

}  // namespace iris::agent
