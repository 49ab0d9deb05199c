#pragma once
// A chat answer read while it is generated, for streamed responses. The text outside tool-call
// blocks goes out as content as soon as it cannot be the start of a block's opening tag; a block
// goes out as one or more tool calls once its closing tag arrives (or the answer ends), read by
// the parser of whole answers (inference::parseModelAnswer); an answer that opens with
// <mm:think> (MiniMax-M3) streams that part as reasoning up to </mm:think>.
//
// The pieces add up to readChatAnswer's reading of the whole text, with the differences a
// stream cannot avoid: content is not trimmed around the calls; a block that does not parse
// goes out as content (readChatAnswer then answers the whole text as content, which a stream
// that has already sent calls cannot take back); and reasoning cut off before </mm:think> has
// gone out as reasoning (readChatAnswer, finding no </mm:think>, reads it all as content).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "agent/clients/chat.h"

namespace iris::app::serve {

struct AnswerDelta {
    enum class Kind { Content, Reasoning, ToolCall };
    Kind kind = Kind::Content;
    std::string text;     // Content and Reasoning
    agent::ToolCall call;  // ToolCall
    int index = 0;        // ToolCall: its place among the answer's calls, from 0
};

class AnswerStream {
public:
    // readCalls: tools were offered (otherwise blocks are content, as in readChatAnswer).
    // toolsJson types MiniMax-M3's parameters; calls get ids "call_<idPrefix>_<n>".
    AnswerStream(bool readCalls, std::vector<std::string> toolsJson, std::string idPrefix);

    // The next piece of generated text; what can be sent now, in order.
    std::vector<AnswerDelta> push(std::string_view text);
    // The answer has ended: whatever was held back (an unclosed last block is read as a call
    // when it parses, as a whole answer's would be).
    std::vector<AnswerDelta> finish();

    int toolCalls() const { return m_calls; }

private:
    enum class State { Content, Block, Reasoning };

    // Moves what is decided in m_pending to `out`; `final` releases what was held back.
    void drain(std::vector<AnswerDelta>& out, bool final);
    void emitText(std::vector<AnswerDelta>& out, AnswerDelta::Kind kind, std::string_view text);
    void emitBlock(std::vector<AnswerDelta>& out, std::string_view block);

    bool m_readCalls;
    std::vector<std::string> m_toolsJson;
    std::string m_idPrefix;
    State m_state = State::Content;
    std::string m_pending;      // received, not yet sent
    std::string_view m_close;  // the closing tag of the open block
    bool m_started = false;     // past leading whitespace (reasoning can open only there)
    int m_calls = 0;
};

}  // namespace iris::app::serve
