#pragma once
// Turns the task, the history of earlier steps and the current screen into a ChatRequest. Layout
// (the one UI-TARS and OSWorld's agents are trained on, and friendly to a prefix cache because
// earlier turns never change once written, except images ageing out of the window):
//   system   the action format's prompt (UI-TARS: none; its prompt opens the first user turn)
//   user     task (+ target mockup, project files) + screenshot 0 (+ feedback)
//   assistant  answer 0          (tool formats: + one tool message per call with its result)
//   user     screenshot 1 + what happened (results, parse errors, refusals, visual summary)
//   ...
// Only the last `screenshotsInHistory` screenshots are sent as images; older ones become a line
// of text, so long sessions stay within the context.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/actions/action_format.h"
#include "agent/clients/chat.h"

namespace iris::agent {

// The text that introduces the visual goal's target image in the first user turn.
inline constexpr std::string_view kTargetCaption = "Target mockup (make the page look like this):";

// What the prompt remembers of one step.
struct StepMemory {
    std::shared_ptr<const EncodedImage> screenshot;  // what the model saw at this step
    std::string feedback;                  // shown with the screenshot: what the previous step did
    ChatResponse answer;                   // what the model said
    std::vector<std::string> toolResults;  // tool formats: one result text per answer.toolCalls
};

struct PromptSettings {
    ActionFormat format = ActionFormat::ToolCalls;
    std::string instruction;
    int screenWidth = 0;  // observation pixels
    int screenHeight = 0;
    bool browser = false;    // one browser page (navigate exists) rather than a whole desktop
    bool fileTools = false;  // a web-project workspace is open
    // The project's file listing, shown with the task to a ToolCalls model with fileTools.
    std::string projectFiles;
    std::shared_ptr<const EncodedImage> target;  // visual-feedback goal, may be null
    int screenshotsInHistory = 3;
};

// `history` holds the finished steps; `current` the step being asked about (answer still empty).
ChatRequest buildChatRequest(const PromptSettings& settings, std::span<const StepMemory> history,
                             const StepMemory& current);

}  // namespace iris::agent
