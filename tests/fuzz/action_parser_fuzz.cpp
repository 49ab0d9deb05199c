// libFuzzer target for the model-output parsers: any bytes, given to every format as answer text
// and as a tool call's arguments, must parse or fail cleanly, and whatever parses must be a valid
// action: finite coordinates, text that JSON can carry, a JSON form that reads back the same.
// Build with the `fuzz` preset (clang) and run, e.g.:
//   build/fuzz/tests/fuzz/iris_action_parser_fuzz -max_total_time=300 tests/fuzz/action_seeds
// The first byte picks the coordinate frame and whether the pointer position is known.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/actions/action_format.h"

namespace {

using namespace iris::agent;

void require(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "invariant broken: %s\n", what);
        std::abort();
    }
}

void requireFinite(const Point& p) {
    require(std::isfinite(p.x) && std::isfinite(p.y), "finite");
}

void checkAction(const Action& action, const ParseOptions& options) {
    std::visit(
        [&](const auto& a) {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, Click> || std::is_same_v<T, Scroll>) {
                if (a.at) requireFinite(*a.at);
            }
            if constexpr (std::is_same_v<T, MoveTo>) requireFinite(a.to);
            if constexpr (std::is_same_v<T, Drag>) {
                if (a.from) requireFinite(*a.from);
                requireFinite(a.to);
            }
            if constexpr (std::is_same_v<T, Wait>)
                require(std::isfinite(a.seconds) && a.seconds >= 0, "wait seconds");
        },
        action);
    // Points stay on the screen when its size is known.
    if (const auto* click = std::get_if<Click>(&action); click != nullptr && click->at)
        require(click->at->x >= 0 && click->at->x < options.screenWidth && click->at->y >= 0 &&
                    click->at->y < options.screenHeight,
                "click on screen");
    const nlohmann::json json = actionToJson(action);
    const std::string text = json.dump();  // throws (and so fails) on invalid UTF-8
    const iris::Result<Action> back = actionFromJson(nlohmann::json::parse(text));
    require(back.isOk(), "actionFromJson accepts actionToJson");
    require(*back == action, "JSON round trip");
    (void)describe(action);
}

void check(const ParsedStep& step, const ParseOptions& options) {
    require(!step.actions.empty() || !step.errors.empty(), "an action or an error");
    for (const Action& action : step.actions)
        checkAction(action, options);
    (void)nlohmann::json(step.thought).dump();
    for (const std::string& error : step.errors) {
        require(!error.empty(), "non-empty error");
        (void)nlohmann::json(error).dump();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::uint8_t mode = data[0];
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);

    ParseOptions options;
    options.screenWidth = 1920;
    options.screenHeight = 1080;
    switch (mode % 3) {
        case 0:
            options.frame = {CoordinateFrame::Kind::ScreenshotPixels, 0, 0};
            break;
        case 1:
            options.frame = {CoordinateFrame::Kind::Relative1000, 0, 0};
            break;
        default:
            options.frame = {CoordinateFrame::Kind::ResizedImage, 1932, 1092};
            break;
    }
    if ((mode & 4) != 0) options.pointer = Point{960, 540};

    for (const ActionFormat format : {ActionFormat::Computer13, ActionFormat::Pyautogui,
                                      ActionFormat::UiTars, ActionFormat::ToolCalls}) {
        ChatResponse asText;
        asText.text = text;
        check(parseModelOutput(format, asText, options), options);
    }
    static const char* const kTools[] = {"click",     "scroll", "drag",       "press_keys",
                                         "type_text", "wait",   "write_file", "replace_in_file"};
    ChatResponse asCall;
    asCall.toolCalls.push_back({"", kTools[(mode >> 3) % 8], text});
    check(parseModelOutput(ActionFormat::ToolCalls, asCall, options), options);
    return 0;
}
