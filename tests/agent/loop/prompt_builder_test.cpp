#include "agent/prompt_builder.h"

#include <gtest/gtest.h>

namespace iris::agent {
namespace {

std::shared_ptr<const EncodedImage> image(int tag) {
    auto encoded = std::make_shared<EncodedImage>();
    encoded->mimeType = "image/png";
    encoded->bytes = {std::uint8_t(tag)};
    return encoded;
}

int imagesIn(const ChatRequest& request) {
    int count = 0;
    for (const ChatMessage& message : request.messages)
        for (const ContentPart& part : message.content)
            count += part.isImage() ? 1 : 0;
    return count;
}

TEST(PromptBuilder, AlternatesObservationsAndAnswersAfterTheSystemPrompt) {
    PromptSettings settings;
    settings.format = ActionFormat::Pyautogui;
    settings.instruction = "open the menu";
    settings.screenWidth = 1280;
    settings.screenHeight = 800;
    std::vector<StepMemory> history(2);
    for (int i = 0; i < 2; ++i) {
        history[std::size_t(i)].screenshot = image(i);
        history[std::size_t(i)].answer.text = "answer " + std::to_string(i);
    }
    history[1].feedback = "click failed";
    const ChatRequest request = buildChatRequest(settings, history, {image(2), "note", {}, {}});

    ASSERT_EQ(request.messages.size(), 6u);
    const std::vector<std::string> roles = {"system", "user",      "assistant",
                                            "user",   "assistant", "user"};
    for (std::size_t i = 0; i < roles.size(); ++i)
        EXPECT_EQ(request.messages[i].role, roles[i]);
    EXPECT_NE(request.messages[0].content[0].text.find("1280"), std::string::npos)
        << "the system prompt states the screen size";
    EXPECT_EQ(request.messages[1].content[0].text, "Task: open the menu");
    EXPECT_EQ(request.messages[2].content[0].text, "answer 0");
    EXPECT_EQ(request.messages[3].content[0].text, "click failed");
    EXPECT_EQ(request.messages[5].content.back().image->bytes[0], 2);
    EXPECT_TRUE(request.tools.empty());
}

TEST(PromptBuilder, SendsOnlyTheLastScreenshotsAsImages) {
    PromptSettings settings;
    settings.instruction = "x";
    settings.screenshotsInHistory = 2;
    std::vector<StepMemory> history(5);
    for (std::size_t i = 0; i < history.size(); ++i)
        history[i].screenshot = image(int(i));
    const ChatRequest request = buildChatRequest(settings, history, {image(9), {}, {}, {}});
    EXPECT_EQ(imagesIn(request), 2);
    EXPECT_NE(request.messages[1].content.back().text.find("screenshot of step 1 omitted"),
              std::string::npos);
}

TEST(PromptBuilder, AnswersEveryToolCallWithAToolMessage) {
    PromptSettings settings;
    settings.format = ActionFormat::ToolCalls;
    settings.instruction = "x";
    StepMemory step;
    step.screenshot = image(0);
    step.answer.toolCalls = {{"call_1", "click", R"({"x":1,"y":2})"},
                             {"call_2", "type_text", R"({"text":"a"})"}};
    step.toolResults = {"ok", "error: no focus"};
    const std::vector<StepMemory> history = {step};
    const ChatRequest request = buildChatRequest(settings, history, {image(1), {}, {}, {}});
    EXPECT_FALSE(request.tools.empty());
    ASSERT_EQ(request.messages.size(), 6u);  // system, user, assistant, tool, tool, user
    EXPECT_EQ(request.messages[3].role, "tool");
    EXPECT_EQ(request.messages[3].toolCallId, "call_1");
    EXPECT_EQ(request.messages[4].content[0].text, "error: no focus");
    EXPECT_EQ(request.messages[2].toolCalls.size(), 2u);
}

TEST(PromptBuilder, OpensWithUiTarsPromptAndTheTaskInTheFirstUserTurn) {
    PromptSettings settings;
    settings.format = ActionFormat::UiTars;
    settings.instruction = "open the settings";
    const ChatRequest request = buildChatRequest(settings, {}, {image(0), {}, {}, {}});
    ASSERT_EQ(request.messages.size(), 1u);
    EXPECT_EQ(request.messages[0].role, "user");
    const std::string& text = request.messages[0].content[0].text;
    EXPECT_NE(text.find("## User Instruction\nopen the settings"), std::string::npos) << text;
    EXPECT_TRUE(request.messages[0].content.back().isImage());
}

TEST(PromptBuilder, ListsTheProjectFilesOnlyToAModelWithFileTools) {
    PromptSettings settings;
    settings.instruction = "make the title blue";
    settings.fileTools = true;
    settings.projectFiles = "index.html (120 bytes)\n";
    auto text = [&](ActionFormat format) {
        settings.format = format;
        std::string all;
        for (const ChatMessage& message :
             buildChatRequest(settings, {}, {image(0), {}, {}, {}}).messages)
            for (const ContentPart& part : message.content)
                all += part.text;
        return all;
    };
    EXPECT_NE(text(ActionFormat::ToolCalls).find("Project files:\nindex.html (120 bytes)"),
              std::string::npos);
    // The others cannot open a file; the bundled model's prompt must be the one it was trained on.
    for (ActionFormat format :
         {ActionFormat::UiTars, ActionFormat::Pyautogui, ActionFormat::Computer13})
        EXPECT_EQ(text(format).find("Project files"), std::string::npos) << int(format);
}

}  // namespace
}  // namespace iris::agent
