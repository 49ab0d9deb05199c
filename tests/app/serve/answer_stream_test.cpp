// AnswerStream against the whole-answer reader (readChatAnswer) on the same text, fed in every
// way a generation can cut it: whole, byte by byte, and in seeded random pieces.
#include "app/serve/answer_stream.h"

#include <cstdint>
#include <random>

#include <gtest/gtest.h>

#include "app/serve/openai_response.h"
#include "base/strings.h"
#include "inference/chat_template.h"

namespace iris::app::serve {
namespace {

const std::vector<std::string> kTools = {
    R"({"type":"function","function":{"name":"type_text","parameters":{"type":"object","properties":{"text":{"type":"string"}}}}})",
    R"({"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}}}}})"};

// What a client assembles from the deltas.
struct Streamed {
    std::string content, reasoning;
    std::vector<agent::ToolCall> calls;
    std::vector<AnswerDelta> deltas;
};

void collect(Streamed& into, std::vector<AnswerDelta> deltas) {
    for (AnswerDelta& delta : deltas) {
        if (delta.kind == AnswerDelta::Kind::Content) into.content += delta.text;
        if (delta.kind == AnswerDelta::Kind::Reasoning) into.reasoning += delta.text;
        if (delta.kind == AnswerDelta::Kind::ToolCall) {
            EXPECT_EQ(delta.index, int(into.calls.size()));
            into.calls.push_back(delta.call);
        }
        into.deltas.push_back(std::move(delta));
    }
}

Streamed stream(const std::vector<std::string_view>& pieces, bool readCalls = true) {
    AnswerStream reader(readCalls, kTools, "t");
    Streamed out;
    for (std::string_view piece : pieces)
        collect(out, reader.push(piece));
    collect(out, reader.finish());
    EXPECT_EQ(reader.toolCalls(), int(out.calls.size()));
    return out;
}

// Cuts: whole, every byte apart, and random pieces of 1 to 7 bytes.
std::vector<std::vector<std::string_view>> cuttings(std::string_view text) {
    std::vector<std::vector<std::string_view>> all = {{text}, {}};
    for (std::size_t i = 0; i < text.size(); ++i)
        all[1].push_back(text.substr(i, 1));
    std::mt19937 random(7);
    for (int round = 0; round < 20; ++round) {
        std::vector<std::string_view> pieces;
        for (std::size_t at = 0; at < text.size();) {
            const std::size_t n = 1 + random() % 7;
            pieces.push_back(text.substr(at, n));
            at += n;
        }
        all.push_back(std::move(pieces));
    }
    return all;
}

// Every cutting of `text` streams to what readChatAnswer reads from it whole.
void expectSameAsWhole(const std::string& text) {
    const ChatAnswer whole = readChatAnswer(text, true, true, kTools, "t");
    for (const auto& pieces : cuttings(text)) {
        const Streamed streamed = stream(pieces);
        EXPECT_EQ(trim(streamed.content), whole.content) << text;
        EXPECT_EQ(trim(streamed.reasoning), whole.reasoning) << text;
        ASSERT_EQ(streamed.calls.size(), whole.toolCalls.size()) << text;
        for (std::size_t i = 0; i < whole.toolCalls.size(); ++i) {
            EXPECT_EQ(streamed.calls[i].id, whole.toolCalls[i].id);
            EXPECT_EQ(streamed.calls[i].name, whole.toolCalls[i].name);
            EXPECT_EQ(streamed.calls[i].arguments, whole.toolCalls[i].arguments);
        }
    }
}

TEST(AnswerStream, QwenCallsStreamAsTheWholeAnswerReadsThem) {
    expectSameAsWhole(
        "I will click.\n<tool_call>\n{\"name\": \"click\", \"arguments\": {\"x\": 10, \"y\": 20}}\n"
        "</tool_call>\n<tool_call>\n{\"name\": \"type_text\", \"arguments\": {\"text\": \"a<b\"}}\n"
        "</tool_call>");
    expectSameAsWhole("Just text, with a <toolbox> and a </tool_call> but no call.");
    expectSameAsWhole("<tool_call>\n{\"name\": \"click\", \"arguments\": {\"x\": 1, \"y\": 2}}");
}

TEST(AnswerStream, MiniMaxM3ReasoningAndCallsStreamAsTheWholeAnswerReadsThem) {
    const std::string ns(inference::kMiniMaxNamespace);
    expectSameAsWhole("\n<mm:think>Type it.</mm:think>\nTyping.\n" + ns + "<tool_call>\n" + ns +
                      "<invoke name=\"type_text\">" + ns + "<text>42" + ns + "</text>" + ns +
                      "</invoke>\n" + ns + "<invoke name=\"click\">" + ns + "<x>3" + ns + "</x>" +
                      ns + "</invoke>\n" + ns + "</tool_call>");
    // Cut off while thinking: a stream has sent the reasoning as reasoning by then (the whole
    // reader, finding no </mm:think>, answers the text as content).
    for (const auto& pieces : cuttings("<mm:think>only thinking, cut off")) {
        const Streamed cut = stream(pieces);
        EXPECT_EQ(cut.reasoning, "only thinking, cut off");
        EXPECT_EQ(cut.content, "");
    }
}

TEST(AnswerStream, TextGoesOutBeforeTheCallIsComplete) {
    AnswerStream reader(true, kTools, "t");
    Streamed out;
    collect(out, reader.push("Clicking <tool"));
    EXPECT_EQ(out.content, "Clicking ");  // "<tool" may open a block: held back
    collect(out, reader.push("_call>\n{\"name\": \"click\", "));
    EXPECT_TRUE(out.calls.empty());
    collect(out, reader.push("\"arguments\": {\"x\": 1, \"y\": 2}}\n</tool_call>"));
    ASSERT_EQ(out.calls.size(), 1u);  // as soon as the block closes, before the answer ends
    EXPECT_EQ(out.calls[0].id, "call_t_0");
    EXPECT_EQ(out.calls[0].arguments, R"({"x":1,"y":2})");
    collect(out, reader.push(" done"));
    EXPECT_EQ(out.content, "Clicking  done");
    collect(out, reader.finish());
    EXPECT_EQ(out.content, "Clicking  done");
}

TEST(AnswerStream, ABlockThatDoesNotParseIsContentAndNothingIsLost) {
    const std::string text = "Hm <tool_call>{\"name\": </tool_call> ok";
    for (const auto& pieces : cuttings(text)) {
        const Streamed out = stream(pieces);
        EXPECT_TRUE(out.calls.empty());
        EXPECT_EQ(out.content, text);
    }
    // Without tools offered, a block is text.
    const std::string call = "<tool_call>{\"name\": \"click\"}</tool_call>";
    const Streamed plain = stream({call}, false);
    EXPECT_TRUE(plain.calls.empty());
    EXPECT_EQ(plain.content, call);
    // Whitespace alone is content too.
    EXPECT_EQ(stream({" \n"}).content, " \n");
}

TEST(AnswerStream, AForcedOpeningMakesTheAnswerACall) {
    const inference::ChatTemplate qwen(inference::ChatTemplateKind::Qwen2Vl);
    AnswerStream reader(true, kTools, "t");
    Streamed out;
    collect(out, reader.push(qwen.toolCallOpening("click")));
    EXPECT_TRUE(out.deltas.empty());
    collect(out, reader.push("{\"x\": 5, \"y\": 6}}\n</tool_call>"));
    collect(out, reader.finish());
    ASSERT_EQ(out.calls.size(), 1u);
    EXPECT_EQ(out.calls[0].name, "click");
    EXPECT_EQ(out.calls[0].arguments, R"({"x":5,"y":6})");
    EXPECT_TRUE(out.content.empty());

    const inference::ChatTemplate m3(inference::ChatTemplateKind::MiniMaxM3);
    const std::string ns(inference::kMiniMaxNamespace);
    AnswerStream m3Reader(true, kTools, "t");
    Streamed m3Out;
    collect(m3Out, m3Reader.push(m3.toolCallOpening("type_text")));
    collect(m3Out, m3Reader.push(ns + "<text>hi" + ns + "</text>" + ns + "</invoke>\n" + ns +
                                 "</tool_call>"));
    collect(m3Out, m3Reader.finish());
    ASSERT_EQ(m3Out.calls.size(), 1u);
    EXPECT_EQ(m3Out.calls[0].name, "type_text");
    EXPECT_EQ(m3Out.calls[0].arguments, R"({"text":"hi"})");
}

}  // namespace
}  // namespace iris::app::serve
