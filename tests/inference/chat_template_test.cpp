#include "inference/chat_template.h"

#include <gtest/gtest.h>

#include "inference/gguf/gguf_file.h"
#include "inference/gguf/gguf_writer.h"

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

// ---- MiniMax-M3 (expected text written out from docs/minimax-m3.md section 5) -------------------

// The fixed system block, with the line for the thinking mode.
std::string m3SystemBlock(const std::string& modeLine) {
    return "]~!b[]~b]system\n"
           "Your model version is MiniMax-M3, developed by MiniMax. Knowledge cutoff: January "
           "2026. Founded in early 2022, MiniMax is a global AI foundation model company "
           "committed to advancing the frontiers of AI towards AGI.\n"
           "\n"
           "<thinking_instructions>\n"
           "You have a thinking capability that allows you to reason step by step before "
           "responding. When thinking is enabled, wrap your reasoning in <mm:think></mm:think> "
           "tags before your response. When thinking is disabled, begin your response directly "
           "after the </mm:think> prefix. When thinking is adaptive, decide on your own whether "
           "to think for the current turn.\n" +
           modeLine +
           "\n"
           "</thinking_instructions>[e~[\n";
}

const char* const kDisabled =
    "Current thinking mode: disabled. Do not output any thinking process.";
const char* const kEnabled =
    "Current thinking mode: enabled. You MUST think step by step before every response, "
    "including after receiving function/tool results.";
const char* const kAdaptive =
    "Current thinking mode: adaptive. You are encouraged to think for complex decision-making, "
    "multi-step reasoning, or when analyzing function/tool results.";

TEST(ChatTemplate, MiniMaxM3OneUserTurnInEachThinkingMode) {
    const std::vector<ChatMessage> messages = {{"user", "Hi", {}}};
    const std::string turns =
        "]~b]developer\nYou are a helpful assistant.[e~[\n]~b]user\nHi[e~[\n]~b]ai\n";
    EXPECT_EQ(render(ChatTemplateKind::MiniMaxM3, messages),
              m3SystemBlock(kDisabled) + turns + "</mm:think>");
    EXPECT_EQ(render(ChatTemplateKind::MiniMaxM3, messages, thinking()),
              m3SystemBlock(kEnabled) + turns + "<mm:think>");
    ChatOptions adaptive;
    adaptive.adaptiveThinking = true;
    adaptive.enableThinking = true;  // adaptive wins
    EXPECT_EQ(render(ChatTemplateKind::MiniMaxM3, messages, adaptive),
              m3SystemBlock(kAdaptive) + turns);
    EXPECT_EQ(render(ChatTemplateKind::MiniMaxM3, messages, noGenerationPrompt()),
              m3SystemBlock(kDisabled) +
                  "]~b]developer\nYou are a helpful assistant.[e~[\n]~b]user\nHi[e~[\n");
}

// docs/minimax-m3.md section 5.2's rendered example: adaptive thinking, one user turn, one tool.
TEST(ChatTemplate, MiniMaxM3ToolsAsInTheSpecExample) {
    ChatOptions options;
    options.adaptiveThinking = true;
    options.toolsJson = {
        R"({"type":"function","function":{"name":"get_weather","description":"Weather forecast","parameters":{"type":"object","properties":{"location":{"type":"string"},"days":{"type":"integer"}},"required":["location"]}}})"};
    const std::string ns = "]<]minimax[>[";
    EXPECT_EQ(
        render(ChatTemplateKind::MiniMaxM3,
               {{"user", "What's the weather in Paris for 3 days?", {}}}, options),
        m3SystemBlock(kAdaptive) +
            "]~b]developer\n"
            "You are a helpful assistant.\n"
            "\n"
            "# Tools\n"
            "You may call one or more tools to assist with the user query.\n"
            "Here are the tools available in JSONSchema format:\n"
            "\n"
            "<tools>\n"
            "<tool>{\"name\": \"get_weather\", \"description\": \"Weather forecast\", "
            "\"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": "
            "\"string\"}, \"days\": {\"type\": \"integer\"}}, \"required\": [\"location\"]}}"
            "</tool>\n"
            "</tools>\n"
            "\n"
            "To call tools, wrap all invocations in a single " +
            ns + "<tool_call>" + ns +
            "</tool_call> block. Parameter values containing nested objects or arrays are "
            "recursively expanded into XML elements. Example:\n" +
            ns + "<tool_call>\n" + ns + "<invoke name=\"tool-name-1\">" + ns + "<param-1>value-1" +
            ns + "</param-1>" + ns + "<param-2>" + ns + "<item>" + ns + "<key-a>val-a" + ns +
            "</key-a>" + ns + "<key-b>val-b" + ns + "</key-b>" + ns + "</item>" + ns +
            "</param-2>" + ns + "</invoke>\n" + ns + "<invoke name=\"tool-name-2\">" + ns +
            "<param-1>value-1" + ns + "</param-1>" + ns + "</invoke>\n" + ns +
            "</tool_call>[e~[\n"
            "]~b]user\n"
            "What's the weather in Paris for 3 days?[e~[\n"
            "]~b]ai\n");
}

TEST(ChatTemplate, MiniMaxM3ToolCallsAndResultsInAMultiTurnConversation) {
    const std::vector<ChatMessage> messages = {
        {"system", "Be brief.", {}},
        {"user", "Weather in Paris?", {}},
        {"assistant",
         "<mm:think>Need the tool.</mm:think>Let me check.",
         {{"get_weather", R"({"location":"Paris","days":3,"hourly":false,"units":null})"},
          {"search", R"({"query":{"terms":["rain","wind"],"limit":2.5}})"}}},
        {"tool", "{\"temp\": 21}", {}},
        {"tool", "no results", {}},
        {"assistant", "21 degrees.", {}},
        {"user", "Thanks", {}},
    };
    const std::string ns = "]<]minimax[>[";
    EXPECT_EQ(render(ChatTemplateKind::MiniMaxM3, messages),
              m3SystemBlock(kDisabled) +
                  "]~b]developer\nBe brief.[e~[\n"
                  "]~b]user\nWeather in Paris?[e~[\n"
                  // Reasoning of earlier answers is dropped; null arguments are left out.
                  "]~b]ai\n</mm:think>Let me check.\n" +
                  ns + "<tool_call>\n" + ns + "<invoke name=\"get_weather\">" + ns +
                  "<location>Paris" + ns + "</location>" + ns + "<days>3" + ns + "</days>" + ns +
                  "<hourly>false" + ns + "</hourly>" + ns + "</invoke>\n" + ns +
                  "<invoke name=\"search\">" + ns + "<query>" + ns + "<terms>" + ns + "<item>rain" +
                  ns + "</item>" + ns + "<item>wind" + ns + "</item>" + ns + "</terms>" + ns +
                  "<limit>2.5" + ns + "</limit>" + ns + "</query>" + ns + "</invoke>\n" + ns +
                  "</tool_call>[e~[\n"
                  "]~b]tool\n<response>{\"temp\": 21}</response>\n<response>no "
                  "results</response>[e~[\n"
                  "]~b]ai\n</mm:think>21 degrees.[e~[\n"
                  "]~b]user\nThanks[e~[\n"
                  "]~b]ai\n</mm:think>");
}

TEST(ChatTemplate, MiniMaxM3ToolCallWithoutTextAndImagesInUserTurns) {
    const std::string ns = "]<]minimax[>[";
    const std::vector<ChatMessage> messages = {
        {"user", "<__media__>Click OK. <__media__>", {}},
        {"assistant", "", {{"click", R"({"x":10,"y":20})"}}},
        {"tool", "clicked <__media__>", {}},
    };
    EXPECT_EQ(render(ChatTemplateKind::MiniMaxM3, messages, noGenerationPrompt()),
              m3SystemBlock(kDisabled) +
                  "]~b]developer\nYou are a helpful assistant.[e~[\n"
                  "]~b]user\n]<]start of image[>[]<]image[>[]<]end of image[>[Click OK. "
                  "]<]start of image[>[]<]image[>[]<]end of image[>[[e~[\n"
                  "]~b]ai\n</mm:think>" +
                  ns + "<tool_call>\n" + ns + "<invoke name=\"click\">" + ns + "<x>10" + ns +
                  "</x>" + ns + "<y>20" + ns + "</y>" + ns + "</invoke>\n" + ns +
                  "</tool_call>[e~[\n"
                  "]~b]tool\n<response>clicked ]<]start of image[>[]<]image[>[]<]end of "
                  "image[>[</response>[e~[\n");
    EXPECT_EQ(ChatTemplate(ChatTemplateKind::MiniMaxM3).imagePlaceholder(), "]<]image[>[");
    EXPECT_EQ(ChatTemplate(ChatTemplateKind::Qwen2Vl).imagePlaceholder(), "<|image_pad|>");
}

TEST(ChatTemplate, MiniMaxM3RefusesBadToolsAndArguments) {
    const Result<std::string> call = ChatTemplate(ChatTemplateKind::MiniMaxM3)
                                         .render({{"assistant", "", {{"click", "[1]"}}}}, {});
    ASSERT_FALSE(call);
    EXPECT_EQ(call.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(call.status().message().find("tool call 'click' arguments"), std::string::npos);
    ChatOptions options;
    options.toolsJson = {"{\"name\": \"a\"}", "{oops"};
    const Result<std::string> tools =
        ChatTemplate(ChatTemplateKind::MiniMaxM3).render({{"user", "x", {}}}, options);
    ASSERT_FALSE(tools);
    EXPECT_NE(tools.status().message().find("tool description 2"), std::string::npos);
}

// The kind for a model file: general.architecture minimax-m3, or M3's template text.
TEST(ChatTemplate, ForModelPicksMiniMaxM3ByArchitectureOrTemplateText) {
    const auto kindOf = [](const std::string& arch, const std::string& templateText) {
        GgufWriter w;
        w.set("general.architecture", arch);
        if (!templateText.empty()) w.set("tokenizer.chat_template", templateText);
        const std::vector<std::byte> bytes = w.serialize();
        Result<GgufFile> file = GgufFile::parse(bytes, "m.gguf");
        EXPECT_TRUE(file) << file.status().message();
        Result<ChatTemplate> chat = ChatTemplate::forModel(*file);
        EXPECT_TRUE(chat) << chat.status().message();
        return chat ? chat->kind() : ChatTemplateKind::Qwen2;
    };
    EXPECT_EQ(kindOf("minimax-m3", ""), ChatTemplateKind::MiniMaxM3);
    EXPECT_EQ(kindOf("minimax-m3", "{{ anything }}"), ChatTemplateKind::MiniMaxM3);
    EXPECT_EQ(kindOf("llama", "{{ ']~b]' + role }}{{ ']<]minimax[>[<tool_call>' }}"),
              ChatTemplateKind::MiniMaxM3);
    EXPECT_EQ(kindOf("qwen3", "<|im_start|><think>"), ChatTemplateKind::Qwen3);
}

// ---- MiniMax-M3 output parser ----------------------------------------------------------------

const std::string kNs = "]<]minimax[>[";

std::string m3Tag(const std::string& name, bool closing = false) {
    return kNs + (closing ? "</" : "<") + name + ">";
}

std::string m3Element(const std::string& name, const std::string& value) {
    return m3Tag(name) + value + m3Tag(name, true);
}

std::string m3Invoke(const std::string& name, const std::string& parameters) {
    return kNs + "<invoke name=\"" + name + "\">" + parameters + m3Tag("invoke", true);
}

std::string m3Block(const std::string& invokes) {
    return m3Tag("tool_call") + "\n" + invokes + "\n" + m3Tag("tool_call", true);
}

std::string errorsOf(const MiniMaxM3Output& out) {
    std::string all;
    for (const std::string& e : out.errors)
        all += e + "; ";
    return all;
}

TEST(MiniMaxM3Output, ReasoningContentAndTheSpecsToolCall) {
    // The example call of docs/minimax-m3.md section 5.3; the schema types days as an integer,
    // location as a string.
    const std::vector<std::string> tools = {
        R"({"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"},"days":{"type":"integer"}}}}})"};
    const std::string text =
        "<mm:think>The user wants weather.</mm:think>\nChecking.\n" +
        m3Block(m3Invoke("get_weather", m3Element("location", "Paris") + m3Element("days", "3")));
    const MiniMaxM3Output out = parseMiniMaxM3Output(text, tools);
    EXPECT_TRUE(out.errors.empty()) << errorsOf(out);
    EXPECT_EQ(out.reasoning, "The user wants weather.");
    EXPECT_EQ(out.content, "Checking.");
    ASSERT_EQ(out.toolCalls.size(), 1u);
    EXPECT_EQ(out.toolCalls[0].name, "get_weather");
    EXPECT_EQ(out.toolCalls[0].argumentsJson, R"({"location":"Paris","days":3})");
}

TEST(MiniMaxM3Output, BareThinkCloserEndsReasoningOpenedByThePrompt) {
    const MiniMaxM3Output thought = parseMiniMaxM3Output("step 1, step 2\n</mm:think>\n\nDone.");
    EXPECT_EQ(thought.reasoning, "step 1, step 2");
    EXPECT_EQ(thought.content, "Done.");
    const MiniMaxM3Output plain = parseMiniMaxM3Output("Just text.[e~[");
    EXPECT_EQ(plain.reasoning, "");
    EXPECT_EQ(plain.content, "Just text.");
    EXPECT_TRUE(plain.toolCalls.empty());
    EXPECT_TRUE(plain.errors.empty());
}

TEST(MiniMaxM3Output, SeveralCallsWithWhitespaceBetweenElements) {
    const std::string text = kNs + "<tool_call>\n" + kNs + "<invoke name=\"click\">\n  " +
                             m3Element("x", "10") + "\n  " + m3Element("y", " 20 ") + "\n" +
                             m3Tag("invoke", true) + "\n" + kNs + "<invoke name='type_text'>" +
                             m3Element("text", "42") + m3Tag("invoke", true) + "\n" +
                             m3Tag("tool_call", true);
    const std::vector<std::string> tools = {
        R"({"name":"type_text","parameters":{"type":"object","properties":{"text":{"type":"string"}}}})"};
    const MiniMaxM3Output out = parseMiniMaxM3Output(text, tools);
    EXPECT_TRUE(out.errors.empty()) << errorsOf(out);
    ASSERT_EQ(out.toolCalls.size(), 2u);
    EXPECT_EQ(out.toolCalls[0].argumentsJson, R"({"x":10,"y":20})");
    // A string parameter stays text even when it reads as a number.
    EXPECT_EQ(out.toolCalls[1].argumentsJson, R"({"text":"42"})");
    EXPECT_EQ(out.content, "");
}

TEST(MiniMaxM3Output, NestedObjectsArraysAndUnicode) {
    const std::string parameters =
        m3Element("query",
                  m3Element("terms", m3Element("item", "pluie") + m3Element("item", "风")) +
                      m3Element("limit", "2.5") + m3Element("exact", "true")) +
        m3Element("rows", m3Element("item", m3Element("a", "1") + m3Element("b", "x<y>")) +
                              m3Element("item", m3Element("a", "null"))) +
        m3Element("inline", "{\"k\": [1, 2]}") + m3Element("note", "héllo 👍\nline 2");
    const MiniMaxM3Output out = parseMiniMaxM3Output(m3Block(m3Invoke("search", parameters)));
    EXPECT_TRUE(out.errors.empty()) << errorsOf(out);
    ASSERT_EQ(out.toolCalls.size(), 1u);
    EXPECT_EQ(out.toolCalls[0].argumentsJson,
              R"({"query":{"terms":["pluie","风"],"limit":2.5,"exact":true},)"
              R"("rows":[{"a":1,"b":"x<y>"},{"a":null}],"inline":{"k":[1,2]},)"
              R"("note":"héllo 👍\nline 2"})");
}

TEST(MiniMaxM3Output, SchemaTypesEmptyAndArrayValues) {
    const std::vector<std::string> tools = {
        R"({"name":"press_keys","parameters":{"type":"object","properties":{"keys":{"type":"array","items":{"type":"string"}},"extra":{"type":"object"}}}})"};
    const MiniMaxM3Output out = parseMiniMaxM3Output(
        m3Block(m3Invoke("press_keys",
                         m3Element("keys", m3Element("item", "1") + m3Element("item", "ctrl")) +
                             m3Element("extra", ""))),
        tools);
    EXPECT_TRUE(out.errors.empty()) << errorsOf(out);
    ASSERT_EQ(out.toolCalls.size(), 1u);
    EXPECT_EQ(out.toolCalls[0].argumentsJson, R"({"keys":["1","ctrl"],"extra":{}})");
}

TEST(MiniMaxM3Output, CutOffOutputKeepsTheCallsItCompleted) {
    const std::string text = m3Tag("tool_call") + "\n" +
                             m3Invoke("click", m3Element("x", "1") + m3Element("y", "2")) + "\n" +
                             kNs + "<invoke name=\"click\">" + m3Tag("x") + "3";
    const MiniMaxM3Output out = parseMiniMaxM3Output(text);
    ASSERT_EQ(out.toolCalls.size(), 1u);
    EXPECT_EQ(out.toolCalls[0].argumentsJson, R"({"x":1,"y":2})");
    ASSERT_EQ(out.errors.size(), 1u) << errorsOf(out);
    const std::size_t secondX = text.rfind(m3Tag("x"));
    EXPECT_EQ(out.errors[0],
              "byte " + std::to_string(secondX) + ": <x> is not closed by " + m3Tag("x", true));

    const MiniMaxM3Output thinking = parseMiniMaxM3Output("<mm:think>hmm, the");
    EXPECT_EQ(thinking.reasoning, "hmm, the");
    ASSERT_EQ(thinking.errors.size(), 1u);
    EXPECT_EQ(thinking.errors[0],
              "byte 0: <mm:think> is not closed by </mm:think> (the answer was cut off?)");
}

TEST(MiniMaxM3Output, MalformedCallsAreErrorsNamingTheByteAndTheRestStillParses) {
    const std::string prefix = m3Tag("tool_call") + "\n";
    const std::size_t base = prefix.size();  // where the bad invoke starts
    const std::size_t afterName = base + kNs.size() + std::string("<invoke name=\"click\">").size();
    struct Bad {
        std::string invoke;
        std::size_t offset;
        std::string message;
    };
    const std::vector<Bad> cases = {
        {kNs + "<invoke>" + m3Tag("invoke", true), base + kNs.size() + 7,
         "expected name=\"...\" in <invoke, found '>" + kNs + "</invoke>"},
        {kNs + "<invoke name=click>" + m3Tag("invoke", true), base + kNs.size() + 13,
         "expected a quoted tool name, found 'click>" + kNs + "</invoke>"},
        {kNs + "<invoke name=\"click\">" + m3Element("x", "1") + "stray" + m3Tag("invoke", true),
         afterName + m3Element("x", "1").size(),
         "expected a parameter element or " + kNs + "</invoke>, found 'stray" + kNs + "</invoke>"},
        {kNs + "<invoke name=\"click\">" + m3Tag("x") + "1" + m3Tag("y", true) +
             m3Tag("invoke", true),
         afterName + m3Tag("x").size() + 1,
         "expected " + kNs + "</x> to close <x> opened at byte " + std::to_string(afterName) +
             ", found '" + kNs + "</y>" + kNs + "</invoke>"},
    };
    const std::string good = m3Invoke("done", m3Element("message", "ok"));
    for (const Bad& bad : cases) {
        const std::string text =
            prefix + bad.invoke + "\n" + good + "\n" + m3Tag("tool_call", true);
        const MiniMaxM3Output out = parseMiniMaxM3Output(text);
        ASSERT_EQ(out.errors.size(), 1u) << bad.invoke << ": " << errorsOf(out);
        // The quotation of what was found goes on for up to 40 bytes.
        const std::string expected = "byte " + std::to_string(bad.offset) + ": " + bad.message;
        EXPECT_EQ(out.errors[0].substr(0, expected.size()), expected) << bad.invoke;
        ASSERT_EQ(out.toolCalls.size(), 1u) << bad.invoke;
        EXPECT_EQ(out.toolCalls[0].name, "done");
    }
}

TEST(MiniMaxM3Output, JunkInTheBlockAndDeepNestingAreErrorsNotCrashes) {
    const MiniMaxM3Output junk =
        parseMiniMaxM3Output(m3Tag("tool_call") + "hello" + m3Tag("tool_call", true));
    ASSERT_EQ(junk.errors.size(), 1u);
    EXPECT_EQ(junk.errors[0], "byte " + std::to_string(m3Tag("tool_call").size()) + ": expected " +
                                  kNs +
                                  "<invoke name=\"...\"> in the tool-call block, found 'hello'");
    EXPECT_TRUE(junk.toolCalls.empty());

    std::string deep;
    for (int i = 0; i < 10000; ++i)
        deep += m3Tag("a");
    const MiniMaxM3Output nested = parseMiniMaxM3Output(m3Block(m3Invoke("x", deep)));
    ASSERT_EQ(nested.errors.size(), 1u);
    EXPECT_NE(nested.errors[0].find("nested more than 32 deep"), std::string::npos);

    // Invalid UTF-8 in a value still yields JSON that can be read back.
    const MiniMaxM3Output bytes =
        parseMiniMaxM3Output(m3Block(m3Invoke("type_text", m3Element("text", "a\xff"))));
    ASSERT_EQ(bytes.toolCalls.size(), 1u);
    EXPECT_EQ(bytes.toolCalls[0].argumentsJson, "{\"text\":\"a\xef\xbf\xbd\"}");
}

// What the template writes for a call, the parser reads back.
TEST(MiniMaxM3Output, ReadsBackWhatTheTemplateRenders) {
    const std::string arguments =
        R"({"location":"Paris","days":3,"opts":{"tags":["a","b"],"deep":{"on":true}},"ratio":0.25})";
    const Result<std::string> prompt =
        ChatTemplate(ChatTemplateKind::MiniMaxM3)
            .render({{"assistant", "Sure.", {{"go", arguments}}}}, noGenerationPrompt());
    ASSERT_TRUE(prompt) << prompt.status().message();
    const std::size_t answer = prompt->rfind("]~b]ai\n");
    ASSERT_NE(answer, std::string::npos);
    const MiniMaxM3Output out = parseMiniMaxM3Output(prompt->substr(answer + 7));
    EXPECT_TRUE(out.errors.empty()) << errorsOf(out);
    EXPECT_EQ(out.content, "Sure.");
    ASSERT_EQ(out.toolCalls.size(), 1u);
    EXPECT_EQ(out.toolCalls[0].name, "go");
    EXPECT_EQ(out.toolCalls[0].argumentsJson, arguments);
}

TEST(PythonStyleJson, WritesSeparatorsAndEscapesLikeJsonDumps) {
    EXPECT_EQ(*pythonStyleJson(R"({"b":[1,2.5,true,null],"a":"é\n\"q\"\u0001"})"),
              "{\"b\": [1, 2.5, true, null], \"a\": \"é\\n\\\"q\\\"\\u0001\"}");
    EXPECT_FALSE(pythonStyleJson("{").isOk());
}

}  // namespace
}  // namespace iris::inference
