#include "agent/prompt_builder.h"

#include <algorithm>

namespace iris::agent {
namespace {

void addText(ChatMessage& message, std::string text) {
    if (!text.empty()) message.content.push_back({std::move(text), nullptr});
}

void addImage(ChatMessage& message, const std::shared_ptr<const EncodedImage>& image) {
    if (image) message.content.push_back({{}, image});
}

// The user turn of one step: its screenshot (or a note that it aged out) and its feedback.
ChatMessage observationTurn(const StepMemory& step, std::size_t index, bool withImage) {
    ChatMessage message;
    message.role = "user";
    addText(message, step.feedback);
    if (withImage && step.screenshot) {
        addImage(message, step.screenshot);
    } else if (step.screenshot) {
        addText(message, "(screenshot of step " + std::to_string(index + 1) + " omitted)");
    }
    if (message.content.empty()) addText(message, "(no new observation)");
    return message;
}

}  // namespace

ChatRequest buildChatRequest(const PromptSettings& settings, std::span<const StepMemory> history,
                             const StepMemory& current) {
    ChatRequest request;
    const bool tools = settings.format == ActionFormat::ToolCalls;
    if (tools) request.tools = toolDefinitions(settings.fileTools, settings.browser);

    PromptContext context;
    context.screenWidth = settings.screenWidth;
    context.screenHeight = settings.screenHeight;
    context.browser = settings.browser;
    context.fileTools = settings.fileTools;
    ChatMessage task;
    task.role = "user";
    if (settings.format == ActionFormat::UiTars) {
        // UI-TARS was trained with its prompt as the first user turn, ending in
        // "## User Instruction" followed by the task.
        addText(task, systemPrompt(settings.format, context) + settings.instruction);
    } else {
        request.messages.push_back(
            ChatMessage::text("system", systemPrompt(settings.format, context)));
        addText(task, "Task: " + settings.instruction);
    }
    if (settings.target) {
        addText(task, std::string(kTargetCaption));
        addImage(task, settings.target);
    }
    // The listing is for a model that can open the files: only the tool format has file tools. A
    // UI-TARS-style model would read it as part of the task, one it was not trained with.
    if (tools && settings.fileTools && !settings.projectFiles.empty())
        addText(task, "Project files:\n" + settings.projectFiles);
    request.messages.push_back(std::move(task));

    const std::size_t steps = history.size() + 1;
    const std::size_t firstImage =
        steps > std::size_t(std::max(settings.screenshotsInHistory, 1))
            ? steps - std::size_t(std::max(settings.screenshotsInHistory, 1))
            : 0;
    for (std::size_t i = 0; i < history.size(); ++i) {
        const StepMemory& step = history[i];
        ChatMessage observed = observationTurn(step, i, i >= firstImage);
        // The first step's observation joins the task turn: one user turn, then the answer.
        if (i == 0) {
            for (ContentPart& part : observed.content)
                request.messages.back().content.push_back(std::move(part));
        } else {
            request.messages.push_back(std::move(observed));
        }
        ChatMessage answer;
        answer.role = "assistant";
        addText(answer, step.answer.text);
        answer.toolCalls = step.answer.toolCalls;
        request.messages.push_back(std::move(answer));
        // An OpenAI server requires a tool message for every call of the previous turn.
        for (std::size_t c = 0; c < step.answer.toolCalls.size(); ++c) {
            const ToolCall& call = step.answer.toolCalls[c];
            if (call.id.empty()) continue;
            ChatMessage result;
            result.role = "tool";
            result.toolCallId = call.id;
            addText(result, c < step.toolResults.size() ? step.toolResults[c] : "ok");
            request.messages.push_back(std::move(result));
        }
    }
    ChatMessage now = observationTurn(current, history.size(), true);
    if (history.empty()) {
        for (ContentPart& part : now.content)
            request.messages.back().content.push_back(std::move(part));
    } else {
        request.messages.push_back(std::move(now));
    }
    return request;
}

}  // namespace iris::agent
