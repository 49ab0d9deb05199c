#include "agent/recording/chat_json.h"

#include <limits>
#include <span>

#include "base/sha256.h"

namespace iris::agent {

std::string sha256Hex(std::span<const std::uint8_t> bytes) {
    return toHex(Sha256::hash(bytes));
}

std::string toJsonText(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

using nlohmann::json;

// Field readers: a missing or mistyped field is an error naming its path.
Status wrongType(const std::string& path, std::string_view expected) {
    return Status::corrupt(path + ": expected " + std::string(expected));
}

Result<std::string> readString(const json& object, const std::string& path, const char* key,
                               bool required = true) {
    if (!object.is_object()) return wrongType(path, "an object");
    const auto it = object.find(key);
    if (it == object.end()) {
        if (required) return Status::corrupt(path + "." + key + ": missing");
        return std::string();
    }
    if (!it->is_string()) return wrongType(path + "." + key, "a string");
    return it->get<std::string>();
}

template <class Number>
Result<Number> readNumber(const json& object, const std::string& path, const char* key,
                          Number fallback) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_number()) return wrongType(path + "." + key, "a number");
    if constexpr (std::is_integral_v<Number>) {
        if (!it->is_number_integer()) return wrongType(path + "." + key, "an integer");
        const auto value = it->get<std::int64_t>();
        if (value < std::numeric_limits<Number>::min() ||
            value > std::numeric_limits<Number>::max()) {
            return Status::corrupt(path + "." + key + ": " + std::to_string(value) +
                                   " is out of range");
        }
        return static_cast<Number>(value);
    } else {
        return it->get<Number>();
    }
}

Result<const json*> readArray(const json& object, const std::string& path, const char* key) {
    static const json kEmpty = json::array();
    const auto it = object.find(key);
    if (it == object.end()) return &kEmpty;
    if (!it->is_array()) return wrongType(path + "." + key, "an array");
    return &*it;
}

json toolCallsToJson(const std::vector<ToolCall>& calls) {
    json out = json::array();
    for (const ToolCall& call : calls) {
        out.push_back({{"id", call.id}, {"name", call.name}, {"arguments", call.arguments}});
    }
    return out;
}

Result<std::vector<ToolCall>> toolCallsFromJson(const json& parent, const std::string& path) {
    auto array = readArray(parent, path, "tool_calls");
    if (!array) return array.status();
    std::vector<ToolCall> calls;
    for (std::size_t i = 0; i < (*array)->size(); ++i) {
        const json& item = (**array)[i];
        const std::string itemPath = path + ".tool_calls[" + std::to_string(i) + "]";
        ToolCall call;
        auto id = readString(item, itemPath, "id", false);
        if (!id) return id.status();
        auto name = readString(item, itemPath, "name");
        if (!name) return name.status();
        auto arguments = readString(item, itemPath, "arguments", false);
        if (!arguments) return arguments.status();
        calls.push_back({std::move(*id), std::move(*name), std::move(*arguments)});
    }
    return calls;
}

}  // namespace

json imageReference(const EncodedImage& image) {
    return {{"type", "image"},
            {"sha256", sha256Hex(std::span<const std::uint8_t>(image.bytes))},
            {"mime_type", image.mimeType},
            {"width", image.width},
            {"height", image.height}};
}

json chatRequestToJson(const ChatRequest& request, const ImageReferenceFn& reference) {
    json messages = json::array();
    for (const ChatMessage& message : request.messages) {
        json content = json::array();
        for (const ContentPart& part : message.content) {
            if (part.isImage()) {
                content.push_back(reference(*part.image));
            } else {
                content.push_back({{"type", "text"}, {"text", part.text}});
            }
        }
        json m = {{"role", message.role}, {"content", std::move(content)}};
        if (!message.toolCalls.empty()) m["tool_calls"] = toolCallsToJson(message.toolCalls);
        if (!message.toolCallId.empty()) m["tool_call_id"] = message.toolCallId;
        messages.push_back(std::move(m));
    }
    json tools = json::array();
    for (const ToolDefinition& tool : request.tools) {
        tools.push_back({{"name", tool.name},
                         {"description", tool.description},
                         {"parameters", tool.parametersSchema}});
    }
    json out = {{"messages", std::move(messages)}, {"tools", std::move(tools)},
                {"max_tokens", request.maxTokens}, {"temperature", request.temperature},
                {"top_p", request.topP},           {"stop", request.stop}};
    out["seed"] = request.seed ? json(*request.seed) : json(nullptr);
    return out;
}

Result<ChatRequest> chatRequestFromJson(const json& in, const ImageLookupFn& lookup) {
    const std::string root = "request";
    if (!in.is_object()) return wrongType(root, "an object");
    ChatRequest request;
    auto messages = readArray(in, root, "messages");
    if (!messages) return messages.status();
    for (std::size_t i = 0; i < (*messages)->size(); ++i) {
        const json& m = (**messages)[i];
        const std::string path = "messages[" + std::to_string(i) + "]";
        ChatMessage message;
        auto role = readString(m, path, "role");
        if (!role) return role.status();
        message.role = std::move(*role);
        auto content = readArray(m, path, "content");
        if (!content) return content.status();
        for (std::size_t j = 0; j < (*content)->size(); ++j) {
            const json& part = (**content)[j];
            const std::string partPath = path + ".content[" + std::to_string(j) + "]";
            auto type = readString(part, partPath, "type");
            if (!type) return type.status();
            if (*type == "text") {
                auto text = readString(part, partPath, "text");
                if (!text) return text.status();
                message.content.push_back({std::move(*text), nullptr});
            } else if (*type == "image") {
                auto sha = readString(part, partPath, "sha256");
                if (!sha) return sha.status();
                auto image = lookup(*sha);
                if (!image) return image.status().withContext(partPath + ".sha256: ");
                message.content.push_back({std::string(), std::move(*image)});
            } else {
                return Status::corrupt(partPath + ".type: unknown part type \"" + *type + "\"");
            }
        }
        auto calls = toolCallsFromJson(m, path);
        if (!calls) return calls.status();
        message.toolCalls = std::move(*calls);
        auto callId = readString(m, path, "tool_call_id", false);
        if (!callId) return callId.status();
        message.toolCallId = std::move(*callId);
        request.messages.push_back(std::move(message));
    }
    auto tools = readArray(in, root, "tools");
    if (!tools) return tools.status();
    for (std::size_t i = 0; i < (*tools)->size(); ++i) {
        const json& t = (**tools)[i];
        const std::string path = "tools[" + std::to_string(i) + "]";
        ToolDefinition tool;
        auto name = readString(t, path, "name");
        if (!name) return name.status();
        auto description = readString(t, path, "description", false);
        if (!description) return description.status();
        auto parameters = readString(t, path, "parameters", false);
        if (!parameters) return parameters.status();
        request.tools.push_back(
            {std::move(*name), std::move(*description), std::move(*parameters)});
    }
    auto maxTokens = readNumber<int>(in, root, "max_tokens", request.maxTokens);
    if (!maxTokens) return maxTokens.status();
    request.maxTokens = *maxTokens;
    auto temperature = readNumber<double>(in, root, "temperature", request.temperature);
    if (!temperature) return temperature.status();
    request.temperature = *temperature;
    auto topP = readNumber<double>(in, root, "top_p", request.topP);
    if (!topP) return topP.status();
    request.topP = *topP;
    if (const auto seed = in.find("seed"); seed != in.end() && !seed->is_null()) {
        if (!seed->is_number_unsigned()) return wrongType(root + ".seed", "an unsigned integer");
        request.seed = seed->get<std::uint64_t>();
    }
    auto stop = readArray(in, root, "stop");
    if (!stop) return stop.status();
    for (std::size_t i = 0; i < (*stop)->size(); ++i) {
        const json& s = (**stop)[i];
        if (!s.is_string()) return wrongType("stop[" + std::to_string(i) + "]", "a string");
        request.stop.push_back(s.get<std::string>());
    }
    return request;
}

json chatResponseToJson(const ChatResponse& response) {
    return {{"text", response.text},
            {"tool_calls", toolCallsToJson(response.toolCalls)},
            {"finish_reason", response.finishReason},
            {"model", response.model},
            {"prompt_tokens", response.promptTokens},
            {"completion_tokens", response.completionTokens},
            {"latency_ms", response.latencyMs},
            {"time_to_first_token_ms", response.timeToFirstTokenMs}};
}

Result<ChatResponse> chatResponseFromJson(const json& in) {
    const std::string root = "response";
    if (!in.is_object()) return wrongType(root, "an object");
    ChatResponse response;
    auto text = readString(in, root, "text", false);
    if (!text) return text.status();
    response.text = std::move(*text);
    auto calls = toolCallsFromJson(in, root);
    if (!calls) return calls.status();
    response.toolCalls = std::move(*calls);
    auto finish = readString(in, root, "finish_reason", false);
    if (!finish) return finish.status();
    response.finishReason = std::move(*finish);
    auto model = readString(in, root, "model", false);
    if (!model) return model.status();
    response.model = std::move(*model);
    auto promptTokens = readNumber<int>(in, root, "prompt_tokens", 0);
    if (!promptTokens) return promptTokens.status();
    response.promptTokens = *promptTokens;
    auto completionTokens = readNumber<int>(in, root, "completion_tokens", 0);
    if (!completionTokens) return completionTokens.status();
    response.completionTokens = *completionTokens;
    auto latency = readNumber<double>(in, root, "latency_ms", 0.0);
    if (!latency) return latency.status();
    response.latencyMs = *latency;
    auto ttft = readNumber<double>(in, root, "time_to_first_token_ms", 0.0);
    if (!ttft) return ttft.status();
    response.timeToFirstTokenMs = *ttft;
    return response;
}

}  // namespace iris::agent
