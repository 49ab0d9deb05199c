#include "app/serve/answer_stream.h"

#include <algorithm>

#include "base/strings.h"
#include "inference/chat_template.h"
#include "inference/model_answer.h"

namespace iris::app::serve {
namespace {

constexpr std::string_view kThinkOpen = "<mm:think>";
constexpr std::string_view kThinkClose = "</mm:think>";

// The tool-call blocks inference::parseModelAnswer reads, MiniMax-M3's first: its opening tag
// ends with Qwen's, so at one position the longer one is the one meant.
struct BlockTags {
    std::string open, close;
};
const std::vector<BlockTags>& blockTags() {
    static const std::vector<BlockTags> tags = {
        {std::string(inference::kMiniMaxNamespace) + "<tool_call>",
         std::string(inference::kMiniMaxNamespace) + "</tool_call>"},
        {"<tool_call>", "</tool_call>"}};
    return tags;
}

// The length of the longest end of `text` that is the start of `tag` (and not all of it): what
// must wait for the next piece to tell.
std::size_t partialTag(std::string_view text, std::string_view tag) {
    for (std::size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
        if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
    }
    return 0;
}

}  // namespace

AnswerStream::AnswerStream(bool readCalls, std::vector<std::string> toolsJson,
                           std::string idPrefix)
    : m_readCalls(readCalls), m_toolsJson(std::move(toolsJson)), m_idPrefix(std::move(idPrefix)) {}

std::vector<AnswerDelta> AnswerStream::push(std::string_view text) {
    std::vector<AnswerDelta> out;
    m_pending += text;
    drain(out, false);
    return out;
}

std::vector<AnswerDelta> AnswerStream::finish() {
    std::vector<AnswerDelta> out;
    drain(out, true);
    return out;
}

void AnswerStream::emitText(std::vector<AnswerDelta>& out, AnswerDelta::Kind kind,
                            std::string_view text) {
    if (text.empty()) return;
    if (!out.empty() && out.back().kind == kind) {  // one delta per kind of text and push
        out.back().text += text;
        return;
    }
    out.push_back({kind, std::string(text), {}, 0});
}

void AnswerStream::emitBlock(std::vector<AnswerDelta>& out, std::string_view block) {
    const inference::ModelAnswer parsed = inference::parseModelAnswer(block, m_toolsJson);
    const bool calls =
        parsed.errors.empty() && !parsed.toolCalls.empty() && trim(parsed.content).empty() &&
        std::all_of(parsed.toolCalls.begin(), parsed.toolCalls.end(), [](const auto& call) {
            return call.problem == inference::AnswerToolCall::Problem::None;
        });
    if (!calls) return emitText(out, AnswerDelta::Kind::Content, block);
    for (const inference::AnswerToolCall& call : parsed.toolCalls) {
        AnswerDelta delta;
        delta.kind = AnswerDelta::Kind::ToolCall;
        delta.index = m_calls;
        delta.call = {"call_" + m_idPrefix + "_" + std::to_string(m_calls), call.call.name,
                      call.call.argumentsJson.empty() ? "{}" : call.call.argumentsJson};
        ++m_calls;
        out.push_back(std::move(delta));
    }
}

void AnswerStream::drain(std::vector<AnswerDelta>& out, bool final) {
    while (!m_pending.empty()) {
        const std::string_view pending = m_pending;
        if (m_state == State::Block) {
            const std::size_t close = pending.find(m_close);
            if (close == std::string_view::npos && !final) return;
            const std::size_t end =
                close == std::string_view::npos ? pending.size() : close + m_close.size();
            emitBlock(out, pending.substr(0, end));
            m_pending.erase(0, end);
            m_state = State::Content;
            continue;
        }
        if (m_state == State::Reasoning) {
            const std::size_t close = pending.find(kThinkClose);
            if (close == std::string_view::npos) {
                const std::size_t keep = final ? 0 : partialTag(pending, kThinkClose);
                emitText(out, AnswerDelta::Kind::Reasoning, pending.substr(0, pending.size() - keep));
                m_pending.erase(0, pending.size() - keep);
                return;
            }
            emitText(out, AnswerDelta::Kind::Reasoning, pending.substr(0, close));
            m_pending.erase(0, close + kThinkClose.size());
            m_state = State::Content;
            continue;
        }
        // Content. Before anything but whitespace, wait to see whether reasoning opens.
        if (!m_started) {
            const std::size_t lead = std::min(pending.find_first_not_of(" \t\r\n"), pending.size());
            const std::string_view rest = pending.substr(lead);
            if (rest.starts_with(kThinkOpen)) {
                m_pending.erase(0, lead + kThinkOpen.size());
                m_started = true;
                m_state = State::Reasoning;
                continue;
            }
            if (!final && kThinkOpen.starts_with(rest)) return;  // "<mm:" so far, or nothing
            m_started = true;
        }
        // Up to the first opening tag, less what may be the start of one.
        std::size_t open = std::string_view::npos;
        const BlockTags* tags = nullptr;
        if (m_readCalls) {
            for (const BlockTags& candidate : blockTags()) {
                const std::size_t at = pending.find(candidate.open);
                if (at < open) open = at, tags = &candidate;
            }
        }
        if (tags == nullptr) {
            std::size_t keep = 0;
            if (!final && m_readCalls) {
                for (const BlockTags& candidate : blockTags())
                    keep = std::max(keep, partialTag(pending, candidate.open));
            }
            emitText(out, AnswerDelta::Kind::Content, pending.substr(0, pending.size() - keep));
            m_pending.erase(0, pending.size() - keep);
            return;
        }
        emitText(out, AnswerDelta::Kind::Content, pending.substr(0, open));
        m_pending.erase(0, open);
        m_close = tags->close;
        m_state = State::Block;
    }
}

}  // namespace iris::app::serve
