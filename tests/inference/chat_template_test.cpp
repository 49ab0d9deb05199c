#include "inference/chat_template.h"

#include <gtest/gtest.h>

namespace iris::inference {
namespace {

std::string render(ChatTemplateKind kind, const std::vector<ChatMessage>& messages,
                   const ChatOptions& options = ChatOptions()) {
    Result<std::string> text = ChatTemplate(kind).render(messages, options);
    EXPECT_TRUE(text) << text.status().message();
    return text ? *text : std::string();
}

ChatOptions noGenerationPrompt() {
    ChatOptions o;
    o.addGenerationPrompt = false;
    return o;
}

ChatOptions thinking() {
    ChatOptions o;
    o.enableThinking = true;
    return o;
}

TEST(ChatTemplate, Qwen2AddsItsDefaultSystemMessage) {
    EXPECT_EQ(render(ChatTemplateKind::Qwen2, {{"user", "Hi", {}}}),
              "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
              "assistant.<|im_end|>\n"
              "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(render(ChatTemplateKind::Qwen2,
                     {{"system", "Be brief.", {}}, {"user", "Hi", {}}, {"assistant", "Hello.", {}}},
                     noGenerationPrompt()),
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
              "<|im_start|>assistant\nHello.<|im_end|>\n");
}

TEST(ChatTemplate, Qwen2VlPlacesImagesWhereTheMarkersStand) {
    EXPECT_EQ(render(ChatTemplateKind::Qwen2Vl,
                     {{"user", "<__media__>What is on the screen? <__media__>", {}}}),
              "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
              "<|vision_start|><|image_pad|><|vision_end|>What is on the screen? "
              "<|vision_start|><|image_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, Qwen3HasNoDefaultSystemAndAnEmptyThinkBlockWhenThinkingIsOff) {
    EXPECT_EQ(render(ChatTemplateKind::Qwen3, {{"user", "2+2?", {}}}),
              "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    EXPECT_EQ(render(ChatTemplateKind::Qwen3, {{"user", "2+2?", {}}}, thinking()),
              "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, ToolsCallsAndResponsesAsQwen25WritesThem) {
    const std::string tool =
        R"({"type":"function","function":{"name":"click","description":"Click at a point","parameters":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}}}}})";
    const std::vector<ChatMessage> messages = {
        {"user", "Press OK", {}},
        {"assistant", "", {{"click", R"({"x":10,"y":20})"}}},
        {"tool", "clicked", {}},
        {"tool", "dialog closed", {}},
    };
    ChatOptions options;
    options.toolsJson = {tool};
    EXPECT_EQ(
        render(ChatTemplateKind::Qwen2, messages, options),
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
        "assistant.\n\n# Tools\n\n"
        "You may call one or more functions to assist with the user query.\n\nYou are provided "
        "with function "
        "signatures within <tools></tools> XML tags:\n<tools>\n"
        R"({"type": "function", "function": {"name": "click", "description": "Click at a point", "parameters": )"
        R"({"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}}}})"
        "\n</tools>\n\nFor each function call, return a json object with function name and "
        "arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
        "\"arguments\": "
        "<args-json-object>}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\nPress OK<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n{\"name\": \"click\", \"arguments\": {\"x\": 10, "
        "\"y\": 20}}\n"
        "</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\nclicked\n</tool_response>\n<tool_response>\ndialog "
        "closed\n"
        "</tool_response><|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, RefusesToolCallArgumentsThatAreNotJson) {
    const Result<std::string> text =
        ChatTemplate(ChatTemplateKind::Qwen2).render({{"assistant", "", {{"click", "{x: 1"}}}}, {});
    ASSERT_FALSE(text);
    EXPECT_EQ(text.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(text.status().message().find("tool call 'click' arguments"), std::string::npos);
}

TEST(PythonStyleJson, WritesSeparatorsAndEscapesLikeJsonDumps) {
    EXPECT_EQ(*pythonStyleJson(R"({"b":[1,2.5,true,null],"a":"é\n\"q\"\u0001"})"),
              "{\"b\": [1, 2.5, true, null], \"a\": \"é\\n\\\"q\\\"\\u0001\"}");
    EXPECT_FALSE(pythonStyleJson("{").isOk());
}

}  // namespace
}  // namespace iris::inference
