#include "inference/model_answer.h"

#include <nlohmann/json.hpp>

namespace iris::inference {
namespace {

bool looksLikeMiniMaxM3(std::string_view text) {
    return text.find(kMiniMaxNamespace) != std::string_view::npos ||
           text.find("</mm:think>") != std::string_view::npos ||
           text.find("<mm:think>") != std::string_view::npos;
}

AnswerToolCall qwenBlock(std::string_view body) {
    AnswerToolCall out;
    out.body = std::string(body);
    const nlohmann::json json = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
        out.problem = AnswerToolCall::Problem::NotAnObject;
        return out;
    }
    const auto name = json.find("name");
    if (name == json.end() || !name->is_string()) {
        out.problem = AnswerToolCall::Problem::MissingName;
        return out;
    }
    out.call.name = name->get<std::string>();
    const auto arguments = json.find("arguments");
    if (arguments != json.end() && !arguments->is_null()) {
        // Model text may hold invalid UTF-8; replacement characters keep dump() from throwing.
        out.call.argumentsJson =
            arguments->is_string()
                ? arguments->get<std::string>()
                : arguments->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    return out;
}

// Appends the calls of every <tool_call> block in `text` and returns the text outside them.
std::string parseQwenBlocks(std::string_view text, std::vector<AnswerToolCall>& calls) {
    constexpr std::string_view kOpen = "<tool_call>";
    constexpr std::string_view kClose = "</tool_call>";
    std::string outside;
    std::size_t pos = 0;
    while (true) {
        const std::size_t open = text.find(kOpen, pos);
        outside += text.substr(pos, open == std::string_view::npos ? open : open - pos);
        if (open == std::string_view::npos) break;
        const std::size_t bodyStart = open + kOpen.size();
        const std::size_t close = text.find(kClose, bodyStart);
        const std::string_view body =
            text.substr(bodyStart, close == std::string_view::npos ? std::string_view::npos
                                                                   : close - bodyStart);
        pos = close == std::string_view::npos ? text.size() : close + kClose.size();
        calls.push_back(qwenBlock(body));
    }
    return outside;
}

}  // namespace

ModelAnswer parseModelAnswer(std::string_view text, const std::vector<std::string>& toolsJson) {
    ModelAnswer answer;
    std::string rest;
    if (looksLikeMiniMaxM3(text)) {
        MiniMaxM3Output m3 = parseMiniMaxM3Output(text, toolsJson);
        answer.reasoning = std::move(m3.reasoning);
        answer.errors = std::move(m3.errors);
        for (ChatToolCall& call : m3.toolCalls)
            answer.toolCalls.push_back({std::move(call), AnswerToolCall::Problem::None, {}});
        rest = std::move(m3.content);
        text = rest;
    }
    answer.content = parseQwenBlocks(text, answer.toolCalls);
    return answer;
}

}  // namespace iris::inference
