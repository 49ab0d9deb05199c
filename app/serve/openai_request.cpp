#include "app/serve/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

#include "agent/clients/openai_protocol.h"

namespace iris::app::serve {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxStopStrings = 16;

Status fieldError(const std::string& field, const std::string& problem) {
    return Status::invalidArgument(field + ": " + problem);
}

Result<Json> parseObject(std::string_view body) {
    Json json = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return fieldError("body", "not valid JSON");
    if (!json.is_object()) return fieldError("body", "expected a JSON object");
    return json;
}

// A member that is present and not null, or nullptr.
const Json* member(const Json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
}

Result<std::string> string(const Json& object, const char* key, const std::string& where) {
    const Json* value = member(object, key);
    if (value == nullptr) return fieldError(where + key, "missing");
    if (!value->is_string()) return fieldError(where + key, "expected a string");
    return value->get<std::string>();
}

// A finite number in [low, high], or `fallback` when absent.
Result<double> number(const Json& object, const char* key, double fallback, double low,
                      double high) {
    const Json* value = member(object, key);
    if (value == nullptr) return fallback;
    if (!value->is_number()) return fieldError(key, "expected a number");
    const double v = value->get<double>();
    if (!std::isfinite(v) || v < low || v > high) {
        return fieldError(key, "expected a number from " + std::to_string(low) + " to " +
                                   std::to_string(high));
    }
    return v;
}

Result<std::optional<std::int64_t>> integer(const Json& object, const char* key,
                                            std::int64_t low, std::int64_t high) {
    const Json* value = member(object, key);
    if (value == nullptr) return std::optional<std::int64_t>();
    if (!value->is_number_integer()) return fieldError(key, "expected an integer");
    // Positive numbers are unsigned in nlohmann::json; one past INT64_MAX must not wrap.
    const bool tooLarge =
        value->is_number_unsigned() && value->get<std::uint64_t>() > std::uint64_t(high);
    const std::int64_t v = tooLarge ? high : value->get<std::int64_t>();
    if (tooLarge || v < low || v > high) {
        return fieldError(key, "expected an integer from " + std::to_string(low) + " to " +
                                   std::to_string(high));
    }
    return std::optional<std::int64_t>(v);
}

Result<bool> boolean(const Json& object, const char* key) {
    const Json* value = member(object, key);
    if (value == nullptr) return false;
    if (!value->is_boolean()) return fieldError(key, "expected true or false");
    return value->get<bool>();
}

Result<std::vector<std::string>> stopStrings(const Json& object) {
    const Json* stop = member(object, "stop");
    std::vector<std::string> out;
    if (stop == nullptr) return out;
    if (stop->is_string()) {
        out.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
        if (stop->size() > kMaxStopStrings)
            return fieldError("stop", "at most " + std::to_string(kMaxStopStrings) + " strings");
        for (std::size_t i = 0; i < stop->size(); ++i) {
            if (!(*stop)[i].is_string())
                return fieldError("stop[" + std::to_string(i) + "]", "expected a string");
            out.push_back((*stop)[i].get<std::string>());
        }
    } else {
        return fieldError("stop", "expected a string or an array of strings");
    }
    std::erase_if(out, [](const std::string& s) { return s.empty(); });
    return out;
}

Result<inference::SamplingParams> sampling(const Json& object) {
    const Result<double> temperature = number(object, "temperature", 1.0, 0.0, 100.0);
    const Result<double> topP = number(object, "top_p", 1.0, 0.0, 1.0);
    const Result<double> minP = number(object, "min_p", 0.0, 0.0, 1.0);
    const Result<double> presence = number(object, "presence_penalty", 0.0, -2.0, 2.0);
    const Result<double> frequency = number(object, "frequency_penalty", 0.0, -2.0, 2.0);
    const Result<double> repetition = number(object, "repetition_penalty", 1.0, 0.0, 100.0);
    const Result<std::optional<std::int64_t>> topK =
        integer(object, "top_k", -1, std::numeric_limits<int>::max());
    const Result<std::optional<std::int64_t>> seed =
        integer(object, "seed", std::numeric_limits<std::int64_t>::min(),
                std::numeric_limits<std::int64_t>::max());
    for (const Status& s : {temperature.status(), topP.status(), minP.status(), presence.status(),
                            frequency.status(), repetition.status(), topK.status(), seed.status()})
        IRIS_RETURN_IF_ERROR(s);
    inference::SamplingParams params;
    params.temperature = float(*temperature);
    params.topP = float(*topP);
    params.minP = float(*minP);
    params.topK = int(topK->value_or(0));
    params.presencePenalty = float(*presence);
    params.frequencyPenalty = float(*frequency);
    params.repetitionPenalty = float(*repetition);
    params.seed = seed->has_value() ? std::uint64_t(**seed)
                                    : (std::uint64_t(std::random_device{}()) << 32) |
                                          std::random_device{}();
    return params;
}

Result<GenerationSettings> generationSettings(const Json& object) {
    GenerationSettings settings;
    Result<std::optional<std::int64_t>> maxTokens =
        integer(object, "max_completion_tokens", 1, std::numeric_limits<std::int32_t>::max());
    IRIS_RETURN_IF_ERROR(maxTokens.status());
    if (!maxTokens->has_value()) {
        maxTokens = integer(object, "max_tokens", 1, std::numeric_limits<std::int32_t>::max());
        IRIS_RETURN_IF_ERROR(maxTokens.status());
    }
    settings.maxTokens = *maxTokens;
    const Result<std::optional<std::int64_t>> n = integer(object, "n", 1, 1);
    IRIS_RETURN_IF_ERROR(n.status());
    Result<std::vector<std::string>> stop = stopStrings(object);
    IRIS_RETURN_IF_ERROR(stop.status());
    settings.stop = std::move(*stop);
    Result<inference::SamplingParams> params = sampling(object);
    IRIS_RETURN_IF_ERROR(params.status());
    settings.sampling = *params;
    Result<bool> stream = boolean(object, "stream");
    IRIS_RETURN_IF_ERROR(stream.status());
    settings.stream = *stream;
    if (const Json* options = member(object, "stream_options")) {
        if (!options->is_object()) return fieldError("stream_options", "expected an object");
        const Json* usage = member(*options, "include_usage");
        if (usage != nullptr && !usage->is_boolean())
            return fieldError("stream_options.include_usage", "expected true or false");
        settings.includeUsage = usage != nullptr && usage->get<bool>();
    }
    return settings;
}

Result<agent::ContentPart> contentPart(const Json& part, const std::string& where) {
    if (!part.is_object()) return fieldError(where, "expected an object");
    Result<std::string> type = string(part, "type", where + ".");
    IRIS_RETURN_IF_ERROR(type.status());
    if (*type == "text") {
        Result<std::string> text = string(part, "text", where + ".");
        IRIS_RETURN_IF_ERROR(text.status());
        return agent::ContentPart{std::move(*text), nullptr};
    }
    if (*type != "image_url")
        return fieldError(where + ".type", "expected \"text\" or \"image_url\", not \"" +
                                               *type + "\"");
    const Json* image = member(part, "image_url");
    if (image == nullptr) return fieldError(where + ".image_url", "missing");
    std::string url;
    std::string field = where + ".image_url";
    if (image->is_string()) {
        url = image->get<std::string>();
    } else {
        Result<std::string> inner = string(*image, "url", field + ".");
        IRIS_RETURN_IF_ERROR(inner.status());
        url = std::move(*inner);
        field += ".url";
    }
    Result<std::vector<std::uint8_t>> bytes = decodeDataUrl(url, field);
    IRIS_RETURN_IF_ERROR(bytes.status());
    auto encoded = std::make_shared<agent::EncodedImage>();
    encoded->mimeType = url.substr(5, url.find_first_of(";,") - 5);
    encoded->bytes = std::move(*bytes);
    return agent::ContentPart{{}, std::move(encoded)};
}

Result<std::vector<agent::ContentPart>> content(const Json& message, const std::string& where) {
    std::vector<agent::ContentPart> parts;
    const Json* value = member(message, "content");
    if (value == nullptr) return parts;
    if (value->is_string()) {
        parts.push_back({value->get<std::string>(), nullptr});
        return parts;
    }
    if (!value->is_array())
        return fieldError(where + "content", "expected a string or an array of parts");
    for (std::size_t i = 0; i < value->size(); ++i) {
        Result<agent::ContentPart> part =
            contentPart((*value)[i], where + "content[" + std::to_string(i) + "]");
        IRIS_RETURN_IF_ERROR(part.status());
        parts.push_back(std::move(*part));
    }
    return parts;
}

Result<agent::ToolCall> toolCall(const Json& call, const std::string& where) {
    if (!call.is_object()) return fieldError(where, "expected an object");
    const Json* function = member(call, "function");
    if (function == nullptr || !function->is_object())
        return fieldError(where + ".function", "expected an object");
    agent::ToolCall out;
    if (const Json* id = member(call, "id"); id != nullptr && id->is_string())
        out.id = id->get<std::string>();
    Result<std::string> name = string(*function, "name", where + ".function.");
    IRIS_RETURN_IF_ERROR(name.status());
    out.name = std::move(*name);
    const Json* arguments = member(*function, "arguments");
    if (arguments != nullptr && arguments->is_string()) {
        out.arguments = arguments->get<std::string>();
    } else if (arguments != nullptr && arguments->is_object()) {
        out.arguments = arguments->dump();
    } else if (arguments != nullptr) {
        return fieldError(where + ".function.arguments", "expected a string of a JSON object");
    }
    return out;
}

Result<agent::ChatMessage> message(const Json& json, const std::string& where) {
    if (!json.is_object()) return fieldError(where, "expected an object");
    Result<std::string> role = string(json, "role", where + ".");
    IRIS_RETURN_IF_ERROR(role.status());
    agent::ChatMessage out;
    out.role = *role == "developer" ? "system" : *role;  // OpenAI's newer name for system
    if (out.role != "system" && out.role != "user" && out.role != "assistant" &&
        out.role != "tool") {
        return fieldError(where + ".role",
                          "expected system, developer, user, assistant or tool, not \"" + *role +
                              "\"");
    }
    Result<std::vector<agent::ContentPart>> parts = content(json, where + ".");
    IRIS_RETURN_IF_ERROR(parts.status());
    out.content = std::move(*parts);
    if (const Json* calls = member(json, "tool_calls")) {
        if (!calls->is_array()) return fieldError(where + ".tool_calls", "expected an array");
        for (std::size_t i = 0; i < calls->size(); ++i) {
            Result<agent::ToolCall> call =
                toolCall((*calls)[i], where + ".tool_calls[" + std::to_string(i) + "]");
            IRIS_RETURN_IF_ERROR(call.status());
            out.toolCalls.push_back(std::move(*call));
        }
    }
    if (const Json* id = member(json, "tool_call_id"); id != nullptr && id->is_string())
        out.toolCallId = id->get<std::string>();
    return out;
}

Result<agent::ToolDefinition> tool(const Json& json, const std::string& where) {
    if (!json.is_object()) return fieldError(where, "expected an object");
    Result<std::string> type = string(json, "type", where + ".");
    IRIS_RETURN_IF_ERROR(type.status());
    if (*type != "function") return fieldError(where + ".type", "expected \"function\"");
    const Json* function = member(json, "function");
    if (function == nullptr || !function->is_object())
        return fieldError(where + ".function", "expected an object");
    agent::ToolDefinition out;
    Result<std::string> name = string(*function, "name", where + ".function.");
    IRIS_RETURN_IF_ERROR(name.status());
    out.name = std::move(*name);
    if (const Json* description = member(*function, "description")) {
        if (!description->is_string())
            return fieldError(where + ".function.description", "expected a string");
        out.description = description->get<std::string>();
    }
    if (const Json* parameters = member(*function, "parameters")) {
        if (!parameters->is_object())
            return fieldError(where + ".function.parameters", "expected a JSON Schema object");
        out.parametersSchema = parameters->dump();
    }
    return out;
}

// tool_choice: "none", "auto" (unset: nullopt for both), "required" (an empty name) or a
// function named by an object.
Result<std::optional<std::string>> readToolChoice(const Json& choice, bool& none) {
    if (choice.is_string()) {
        const std::string value = choice.get<std::string>();
        if (value != "none" && value != "auto" && value != "required")
            return fieldError("tool_choice", "expected none, auto, required or an object");
        none = value == "none";
        if (value == "required") return std::optional<std::string>(std::string());
        return std::optional<std::string>();
    }
    if (!choice.is_object()) return fieldError("tool_choice", "expected a string or an object");
    const Json* type = member(choice, "type");
    if (type == nullptr || !type->is_string() || type->get<std::string>() != "function")
        return fieldError("tool_choice.type", "expected \"function\"");
    const Json* function = member(choice, "function");
    if (function == nullptr || !function->is_object())
        return fieldError("tool_choice.function", "expected an object with a name");
    Result<std::string> name = string(*function, "name", "tool_choice.function.");
    IRIS_RETURN_IF_ERROR(name.status());
    if (name->empty()) return fieldError("tool_choice.function.name", "empty");
    return std::optional<std::string>(std::move(*name));
}

// tools and tool_choice: whether the answer is read for tool calls, and whether it must be one.
Status readTools(const Json& object, ChatCompletionRequest& request) {
    const Json* tools = member(object, "tools");
    const Json* choice = member(object, "tool_choice");
    bool none = false;
    std::optional<std::string> forced;
    if (choice != nullptr) {
        Result<std::optional<std::string>> read = readToolChoice(*choice, none);
        IRIS_RETURN_IF_ERROR(read.status());
        forced = std::move(*read);
    }
    if (tools == nullptr) {
        if (forced) return fieldError("tool_choice", "asks for a tool call, but no tools are given");
        return Status::ok();
    }
    if (!tools->is_array()) return fieldError("tools", "expected an array");
    if (none) return Status::ok();  // the model is not told of tools it may not call
    for (std::size_t i = 0; i < tools->size(); ++i) {
        Result<agent::ToolDefinition> definition =
            tool((*tools)[i], "tools[" + std::to_string(i) + "]");
        IRIS_RETURN_IF_ERROR(definition.status());
        request.chat.tools.push_back(std::move(*definition));
    }
    request.parseToolCalls = !request.chat.tools.empty();
    if (forced && request.chat.tools.empty())
        return fieldError("tool_choice", "asks for a tool call, but the tools array is empty");
    if (forced && !forced->empty() &&
        std::none_of(request.chat.tools.begin(), request.chat.tools.end(),
                     [&](const agent::ToolDefinition& t) { return t.name == *forced; }))
        return fieldError("tool_choice.function.name", "no tool named '" + *forced + "' in tools");
    request.forcedToolCall = std::move(forced);
    return Status::ok();
}

}  // namespace

Result<std::vector<std::uint8_t>> decodeDataUrl(std::string_view url, const std::string& field) {
    if (!url.starts_with("data:"))
        return fieldError(field, "expected a data URL (data:image/png;base64,...); the server "
                                 "does not fetch URLs");
    const std::size_t comma = url.find(',');
    if (comma == std::string_view::npos) return fieldError(field, "a data URL without a comma");
    if (!url.substr(0, comma).ends_with(";base64"))
        return fieldError(field, "expected base64 data (data:image/...;base64,...)");
    Result<std::vector<std::uint8_t>> bytes = agent::base64Decode(url.substr(comma + 1));
    if (!bytes) return fieldError(field, bytes.status().message());
    if (bytes->empty()) return fieldError(field, "an empty image");
    return bytes;
}

std::string errorField(std::string_view message) {
    const std::size_t colon = message.find(": ");
    if (colon == std::string_view::npos) return {};
    const std::string_view field = message.substr(0, colon);
    if (field.find(' ') != std::string_view::npos) return {};
    return std::string(field);
}

Result<ChatCompletionRequest> parseChatCompletionRequest(std::string_view body) {
    Result<Json> object = parseObject(body);
    IRIS_RETURN_IF_ERROR(object.status());
    ChatCompletionRequest request;
    const Json* messages = member(*object, "messages");
    if (messages == nullptr) return fieldError("messages", "missing");
    if (!messages->is_array() || messages->empty())
        return fieldError("messages", "expected a non-empty array");
    for (std::size_t i = 0; i < messages->size(); ++i) {
        Result<agent::ChatMessage> m = message((*messages)[i], "messages[" + std::to_string(i) + "]");
        IRIS_RETURN_IF_ERROR(m.status());
        request.chat.messages.push_back(std::move(*m));
    }
    IRIS_RETURN_IF_ERROR(readTools(*object, request));
    Result<GenerationSettings> settings = generationSettings(*object);
    IRIS_RETURN_IF_ERROR(settings.status());
    request.settings = std::move(*settings);
    return request;
}

Result<CompletionRequest> parseCompletionRequest(std::string_view body) {
    Result<Json> object = parseObject(body);
    IRIS_RETURN_IF_ERROR(object.status());
    CompletionRequest request;
    const Json* prompt = member(*object, "prompt");
    if (prompt == nullptr) return fieldError("prompt", "missing");
    // One prompt: a string, a one-string array, or an array of token ids.
    if (prompt->is_array() && prompt->size() == 1 && prompt->front().is_string())
        prompt = &prompt->front();
    if (prompt->is_string()) {
        request.promptText = prompt->get<std::string>();
    } else if (prompt->is_array() && !prompt->empty()) {
        request.tokenPrompt = true;
        for (std::size_t i = 0; i < prompt->size(); ++i) {
            const Json& id = (*prompt)[i];
            if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
                id.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max()) {
                return fieldError("prompt[" + std::to_string(i) + "]",
                                  "expected a token id (one prompt per request)");
            }
            request.promptTokens.push_back(std::int32_t(id.get<std::int64_t>()));
        }
    } else {
        return fieldError("prompt", "expected a string or a non-empty array of token ids");
    }
    Result<GenerationSettings> settings = generationSettings(*object);
    IRIS_RETURN_IF_ERROR(settings.status());
    request.settings = std::move(*settings);
    return request;
}

}  // namespace iris::app::serve
