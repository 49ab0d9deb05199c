#pragma once
// The ways a model can express actions, and for each: the system prompt that teaches it, the
// parser that turns its answers into Actions, and (for tool calling) the tools it is offered.
// Parsers never execute anything a model wrote: Python is read as data, never run.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/actions/action.h"
#include "agent/clients/chat.h"
#include "base/status.h"

namespace iris::agent {

enum class ActionFormat {
    Computer13,  // OSWorld's computer_13 JSON: {"action_type": "CLICK", "parameters": {...}}
    Pyautogui,   // OSWorld's pyautogui: Python code in a ```python fence, or WAIT/DONE/FAIL
    UiTars,      // UI-TARS: "Thought: ...\nAction: click(start_box='(x,y)')"
    // OpenAI tool calls, or in the text Qwen/Hermes <tool_call>{...}</tool_call> or MiniMax-M3's
    // ]<]minimax[>[<tool_call> XML (after an optional <mm:think> reasoning block, which becomes
    // the step's thought)
    ToolCalls,
};

// "computer13", "pyautogui", "uitars", "tools" (also "computer_13" and "tool_calls").
Result<ActionFormat> actionFormatFromName(std::string_view name);
std::string_view actionFormatName(ActionFormat format);

// How the model's coordinates relate to the screenshot it saw: absolute pixels of that
// screenshot, the 0..1000 relative frame some UI-TARS versions use, or pixels of a resized image
// (Qwen2.5-VL smart resize) of size width x height.
struct CoordinateFrame {
    enum class Kind {
        ScreenshotPixels,
        Relative1000,
        ResizedImage,
        // Pixels of the image the model was actually shown, which only its client knows
        // (ModelClient::imageSizeFor): the agent loop resolves it for every screenshot to
        // ResizedImage, or to ScreenshotPixels when the client shows screenshots unchanged.
        // Parsers cannot map it unresolved.
        ModelImage,
    };
    Kind kind = Kind::ScreenshotPixels;
    int width = 0;  // ResizedImage only
    int height = 0;
};

// The frame a format's answers are in when nobody says otherwise. UI-TARS prompts do not state
// the screen size, so its models answer in the frame of the image they saw (ModelImage); the
// other formats' prompts name the screenshot's size, and their models answer in its pixels.
inline CoordinateFrame defaultCoordinateFrame(ActionFormat format) {
    CoordinateFrame frame;
    if (format == ActionFormat::UiTars) frame.kind = CoordinateFrame::Kind::ModelImage;
    return frame;
}

struct ParseOptions {
    // The screenshot the model saw, in observation pixels; 0 x 0 when unknown (then points are
    // not range-checked, and only CoordinateFrame::Kind::ScreenshotPixels can be mapped). Points
    // outside it are errors; points on its right or bottom edge become its last pixel.
    int screenWidth = 0;
    int screenHeight = 0;
    CoordinateFrame frame;
    std::optional<Point> pointer;  // where the pointer is, for relative moves; unknown if empty
};

// One model answer, understood. `errors` name what could not be understood and where
// ("line 3: pyautogui.clik: unknown function"), so that the loop can tell the model; the actions
// that did parse are kept, in order, but a step with errors is usually better sent back than
// half-executed. An answer with neither actions nor errors does not occur: "no action found" is
// an error.
struct ParsedStep {
    std::string thought;  // the model's reasoning text, when the format separates it
    std::vector<Action> actions;
    std::vector<std::string> errors;
};

// Parses one model answer (its text and tool calls) into actions in observation pixels of a
// screenshot of options.screenWidth x options.screenHeight. Never throws; any input is safe.
ParsedStep parseModelOutput(ActionFormat format, const ChatResponse& response,
                            const ParseOptions& options);

struct PromptContext {
    int screenWidth = 1920;  // the screenshot the model will see
    int screenHeight = 1080;
    bool browser = false;    // one browser page (navigate exists) rather than a whole desktop
    bool fileTools = false;  // a web project's files can be read and edited (ToolCalls only)
};

// The system prompt for a format, in the style that format's models were trained on.
std::string systemPrompt(ActionFormat format, const PromptContext& context);

// The tools offered in ToolCalls format: one function per action kind. `withFileTools` adds
// read_file, write_file and replace_in_file; `withNavigate` adds navigate.
std::vector<ToolDefinition> toolDefinitions(bool withFileTools, bool withNavigate = true);

}  // namespace iris::agent
