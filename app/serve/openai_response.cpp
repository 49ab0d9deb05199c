#include "app/serve/openai_response.h"

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "inference/model_answer.h"

namespace iris::app::serve {
namespace {

using Json = nlohmann::ordered_json;

// Model text may hold invalid UTF-8 (a stream cut inside a character); replacement characters
// keep dump() from throwing.
std::string dump(const Json& json) {
    return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json usageObject(const Usage& usage) {
    return {{"prompt_tokens", usage.promptTokens},
            {"completion_tokens", usage.completionTokens},
            {"total_tokens", usage.promptTokens + usage.completionTokens},
            {"prompt_tokens_details", {{"cached_tokens", usage.cachedTokens}}}};
}

Json headObject(const ResponseHead& head, const char* object) {
    return {{"id", head.id}, {"object", object}, {"created", head.created}, {"model", head.model}};
}

Json toolCallObject(const agent::ToolCall& call) {
    return {{"id", call.id},
            {"type", "function"},
            {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

Json messageObject(const ChatAnswer& answer) {
    Json message = {{"role", "assistant"}};
    if (answer.content.empty() && !answer.toolCalls.empty())
        message["content"] = nullptr;
    else
        message["content"] = answer.content;
    if (!answer.reasoning.empty()) message["reasoning_content"] = answer.reasoning;
    if (!answer.toolCalls.empty()) {
        Json calls = Json::array();
        for (const agent::ToolCall& call : answer.toolCalls)
            calls.push_back(toolCallObject(call));
        message["tool_calls"] = std::move(calls);
    }
    return message;
}

Json finish(const char* reason) {
    return reason == nullptr ? Json(nullptr) : Json(reason);
}

}  // namespace

ChatAnswer readChatAnswer(std::string_view text, bool parseToolCalls, bool miniMax,
                          const std::vector<std::string>& toolsJson, std::string_view idPrefix) {
    ChatAnswer answer;
    answer.content = std::string(text);
    if (!parseToolCalls && !miniMax) return answer;
    const inference::ModelAnswer parsed = inference::parseModelAnswer(text, toolsJson);
    if (!parsed.errors.empty()) return answer;
    // A model that calls tools it was not offered has written text.
    if (!parsed.toolCalls.empty() && !parseToolCalls) return answer;
    std::vector<agent::ToolCall> calls;
    for (const inference::AnswerToolCall& call : parsed.toolCalls) {
        if (call.problem != inference::AnswerToolCall::Problem::None) return answer;
        calls.push_back({"call_" + std::string(idPrefix) + "_" + std::to_string(calls.size()),
                         call.call.name,
                         call.call.argumentsJson.empty() ? "{}" : call.call.argumentsJson});
    }
    if (calls.empty() && parsed.reasoning.empty()) return answer;
    answer.content = std::string(trim(parsed.content));
    answer.reasoning = parsed.reasoning;
    answer.toolCalls = std::move(calls);
    return answer;
}

const char* finishReason(inference::StopReason reason, bool toolCalls) {
    switch (reason) {
        case inference::StopReason::EndOfGeneration:
        case inference::StopReason::StopString:
            return toolCalls ? "tool_calls" : "stop";
        case inference::StopReason::MaxTokens:
        case inference::StopReason::ContextFull:
            return "length";
        case inference::StopReason::Cancelled:
            return "stop";
    }
    return "stop";
}

std::string chatCompletionJson(const ResponseHead& head, const ChatAnswer& answer,
                               const char* finishReason, const Usage& usage) {
    Json json = headObject(head, "chat.completion");
    json["choices"] = Json::array({{{"index", 0},
                                    {"message", messageObject(answer)},
                                    {"finish_reason", finish(finishReason)}}});
    json["usage"] = usageObject(usage);
    return dump(json);
}

std::string chatChunkJson(const ResponseHead& head, std::string_view deltaJson,
                          const char* finishReason) {
    Json json = headObject(head, "chat.completion.chunk");
    json["choices"] = Json::array({{{"index", 0},
                                    {"delta", Json::parse(deltaJson)},
                                    {"finish_reason", finish(finishReason)}}});
    return dump(json);
}

std::string roleDeltaJson() {
    return R"({"role":"assistant","content":""})";
}

std::string contentDeltaJson(std::string_view text) {
    return dump(Json{{"content", std::string(text)}});
}

std::string reasoningDeltaJson(std::string_view text) {
    return dump(Json{{"reasoning_content", std::string(text)}});
}

std::string toolCallDeltaJson(const agent::ToolCall& call, int index) {
    Json entry = {{"index", index}};
    entry.update(toolCallObject(call));
    return dump(Json{{"tool_calls", Json::array({std::move(entry)})}});
}

std::string usageChunkJson(const ResponseHead& head, const char* object, const Usage& usage) {
    Json json = headObject(head, object);
    json["choices"] = Json::array();
    json["usage"] = usageObject(usage);
    return dump(json);
}

std::string completionJson(const ResponseHead& head, std::string_view text,
                           const char* finishReason, const Usage& usage) {
    Json json = headObject(head, "text_completion");
    json["choices"] = Json::array({{{"index", 0},
                                    {"text", std::string(text)},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish(finishReason)}}});
    json["usage"] = usageObject(usage);
    return dump(json);
}

std::string completionChunkJson(const ResponseHead& head, std::string_view text,
                                const char* finishReason) {
    Json json = headObject(head, "text_completion");
    json["choices"] = Json::array({{{"index", 0},
                                    {"text", std::string(text)},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish(finishReason)}}});
    return dump(json);
}

std::string errorJson(std::string_view message, std::string_view type, std::string_view param,
                      std::string_view code) {
    Json error = {{"message", std::string(message)}, {"type", std::string(type)}};
    error["param"] = param.empty() ? Json(nullptr) : Json(std::string(param));
    error["code"] = code.empty() ? Json(nullptr) : Json(std::string(code));
    return dump(Json{{"error", std::move(error)}});
}

}  // namespace iris::app::serve
