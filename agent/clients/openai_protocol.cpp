#include "agent/clients/openai_protocol.h"

#include <limits>

#include <nlohmann/json.hpp>

namespace iris::agent {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

std::string excerpt(std::string_view text, std::size_t limit = 120) {
    if (text.size() <= limit) return std::string(text);
    return std::string(text.substr(0, limit)) + "...";
}

// The server's own words for an {"error": ...} object (OpenAI, vLLM and llama.cpp all use it).
std::string errorText(const Json& error) {
    if (error.is_string()) return error.get<std::string>();
    if (!error.is_object()) return excerpt(error.dump());
    std::string text;
    if (const auto m = error.find("message"); m != error.end() && m->is_string())
        text = m->get<std::string>();
    else
        text = excerpt(error.dump());
    for (const char* key : {"type", "code"}) {
        const auto it = error.find(key);
        if (it == error.end() || it->is_null()) continue;
        text += std::string(" (") + key + " " +
                (it->is_string() ? it->get<std::string>() : it->dump()) + ")";
    }
    return text;
}

Result<int> tokenCount(const Json& usage, const char* key, const std::string& where) {
    const auto it = usage.find(key);
    if (it == usage.end() || it->is_null()) return 0;
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
        it->get<std::int64_t>() > std::numeric_limits<int>::max()) {
        return Status::corrupt(where + "usage." + key + " is not a token count");
    }
    return int(it->get<std::int64_t>());
}

Status readUsage(const Json& object, ChatResponse& response, const std::string& where) {
    const auto usage = object.find("usage");
    if (usage == object.end() || usage->is_null()) return Status::ok();
    if (!usage->is_object()) return Status::corrupt(where + "usage is not an object");
    Result<int> prompt = tokenCount(*usage, "prompt_tokens", where);
    if (!prompt) return prompt.status();
    Result<int> completion = tokenCount(*usage, "completion_tokens", where);
    if (!completion) return completion.status();
    response.promptTokens = *prompt;
    response.completionTokens = *completion;
    return Status::ok();
}

// A string member, "" when absent or null; Corrupt when it is something else.
Result<std::string> optionalString(const Json& object, const char* key, const std::string& where) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::string();
    if (!it->is_string()) return Status::corrupt(where + key + " is not a string");
    return it->get<std::string>();
}

Result<OrderedJson> toolObject(const ToolDefinition& tool) {
    OrderedJson parameters = OrderedJson::object();
    if (!tool.parametersSchema.empty()) {
        parameters = OrderedJson::parse(tool.parametersSchema, nullptr, false);
        if (parameters.is_discarded() || !parameters.is_object()) {
            return Status::invalidArgument(
                "tool '" + tool.name +
                "': parametersSchema is not a JSON object: " + excerpt(tool.parametersSchema, 80));
        }
    }
    OrderedJson function = {{"name", tool.name}, {"description", tool.description}};
    function["parameters"] = std::move(parameters);
    return OrderedJson{{"type", "function"}, {"function", std::move(function)}};
}

}  // namespace

Result<std::string> openAiToolJson(const ToolDefinition& tool) {
    Result<OrderedJson> json = toolObject(tool);
    if (!json) return json.status();
    return json->dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

std::string base64Encode(std::span<const std::uint8_t> bytes) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t v = std::uint32_t(bytes[i]) << 16 | std::uint32_t(bytes[i + 1]) << 8 |
                                std::uint32_t(bytes[i + 2]);
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += kAlphabet[(v >> 6) & 63];
        out += kAlphabet[v & 63];
    }
    if (const std::size_t rest = bytes.size() - i; rest > 0) {
        std::uint32_t v = std::uint32_t(bytes[i]) << 16;
        if (rest == 2) v |= std::uint32_t(bytes[i + 1]) << 8;
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

Result<std::vector<std::uint8_t>> base64Decode(std::string_view text) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    std::size_t length = text.size();
    if (length % 4 == 0 && length >= 4) {  // at most two '=' at the end
        length -= text.ends_with("==") ? 2 : text.ends_with('=') ? 1 : 0;
    }
    if (length % 4 == 1)
        return Status::invalidArgument("base64: " + std::to_string(text.size()) +
                                       " characters is not the length of any encoding");
    std::vector<std::uint8_t> out;
    out.reserve(length / 4 * 3 + 2);
    std::uint32_t bits = 0;
    int count = 0;
    for (std::size_t i = 0; i < length; ++i) {
        const int v = value(text[i]);
        if (v < 0)
            return Status::invalidArgument("base64: byte " + std::to_string(i) +
                                           ": not a base64 character");
        bits = bits << 6 | std::uint32_t(v);
        if (++count == 4) {
            out.push_back(std::uint8_t(bits >> 16));
            out.push_back(std::uint8_t(bits >> 8));
            out.push_back(std::uint8_t(bits));
            bits = 0;
            count = 0;
        }
    }
    if (count == 2) out.push_back(std::uint8_t(bits >> 4));
    if (count == 3) {
        out.push_back(std::uint8_t(bits >> 10));
        out.push_back(std::uint8_t(bits >> 2));
    }
    return out;
}

Result<std::string> chatCompletionBody(const ChatRequest& request, const std::string& model,
                                       bool stream) {
    OrderedJson body = OrderedJson::object();
    body["model"] = model;
    OrderedJson messages = OrderedJson::array();
    for (std::size_t m = 0; m < request.messages.size(); ++m) {
        const ChatMessage& message = request.messages[m];
        const std::string where = "message " + std::to_string(m) + " (" + message.role + ")";
        if (message.role.empty()) return Status::invalidArgument(where + ": no role");
        OrderedJson out = OrderedJson::object();
        out["role"] = message.role;
        bool hasImage = false;
        std::string text;
        for (const ContentPart& part : message.content) {
            hasImage = hasImage || part.isImage();
            if (!part.isImage()) text += part.text;
        }
        if (hasImage) {
            // Parts in their order, so that "look at this: <image>" keeps its meaning.
            OrderedJson parts = OrderedJson::array();
            for (std::size_t p = 0; p < message.content.size(); ++p) {
                const ContentPart& part = message.content[p];
                if (!part.isImage()) {
                    parts.push_back({{"type", "text"}, {"text", part.text}});
                    continue;
                }
                const EncodedImage& image = *part.image;
                if (image.mimeType.empty() || image.bytes.empty()) {
                    return Status::invalidArgument(where + " part " + std::to_string(p) +
                                                   ": an image without bytes or MIME type");
                }
                parts.push_back({{"type", "image_url"},
                                 {"image_url",
                                  {{"url", "data:" + image.mimeType + ";base64," +
                                               base64Encode(image.bytes)}}}});
            }
            out["content"] = std::move(parts);
        } else if (text.empty() && !message.toolCalls.empty()) {
            out["content"] = nullptr;
        } else {
            out["content"] = text;
        }
        if (!message.toolCalls.empty()) {
            OrderedJson calls = OrderedJson::array();
            for (const ToolCall& call : message.toolCalls) {
                OrderedJson entry = OrderedJson::object();
                if (!call.id.empty()) entry["id"] = call.id;
                entry["type"] = "function";
                entry["function"] = {{"name", call.name}, {"arguments", call.arguments}};
                calls.push_back(std::move(entry));
            }
            out["tool_calls"] = std::move(calls);
        }
        if (message.role == "tool") out["tool_call_id"] = message.toolCallId;
        messages.push_back(std::move(out));
    }
    body["messages"] = std::move(messages);

    if (!request.tools.empty()) {
        OrderedJson tools = OrderedJson::array();
        for (const ToolDefinition& tool : request.tools) {
            Result<OrderedJson> json = toolObject(tool);
            if (!json) return json.status();
            tools.push_back(std::move(*json));
        }
        body["tools"] = std::move(tools);
    }
    body["max_tokens"] = request.maxTokens;
    body["temperature"] = request.temperature;
    body["top_p"] = request.topP;
    if (request.seed) body["seed"] = *request.seed;
    if (!request.stop.empty()) body["stop"] = request.stop;
    body["stream"] = stream;
    if (stream) body["stream_options"] = {{"include_usage", true}};
    // Replacement characters rather than an exception for text that is not valid UTF-8.
    return body.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

Result<ChatResponse> parseChatCompletion(std::string_view body) {
    Json object;
    try {
        object = Json::parse(body);
    } catch (const Json::exception& e) {
        return Status::corrupt(std::string("malformed JSON response: ") + e.what() + ": " +
                               excerpt(body));
    }
    if (!object.is_object()) return Status::corrupt("the response is not a JSON object");
    if (const auto error = object.find("error"); error != object.end() && !error->is_null())
        return Status::ioError("the server reported an error: " + errorText(*error));

    ChatResponse response;
    Result<std::string> model = optionalString(object, "model", "");
    if (!model) return model.status();
    response.model = *model;
    IRIS_RETURN_IF_ERROR(readUsage(object, response, ""));

    const auto choices = object.find("choices");
    if (choices == object.end() || !choices->is_array() || choices->empty())
        return Status::corrupt("the response has no choices");
    const Json& choice = choices->front();
    if (!choice.is_object()) return Status::corrupt("choices[0] is not an object");
    Result<std::string> finish = optionalString(choice, "finish_reason", "choices[0].");
    if (!finish) return finish.status();
    response.finishReason = *finish;
    const auto message = choice.find("message");
    if (message == choice.end() || !message->is_object())
        return Status::corrupt("choices[0].message is missing");

    if (const auto content = message->find("content"); content != message->end()) {
        if (content->is_string()) {
            response.text = content->get<std::string>();
        } else if (content->is_array()) {  // content parts, as some servers answer
            for (const Json& part : *content) {
                if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
                    part["text"].is_string()) {
                    response.text += part["text"].get<std::string>();
                }
            }
        } else if (!content->is_null()) {
            return Status::corrupt("choices[0].message.content is not a string");
        }
    }
    if (const auto calls = message->find("tool_calls");
        calls != message->end() && !calls->is_null()) {
        if (!calls->is_array())
            return Status::corrupt("choices[0].message.tool_calls is not an array");
        for (std::size_t i = 0; i < calls->size(); ++i) {
            const Json& call = (*calls)[i];
            const std::string where = "choices[0].message.tool_calls[" + std::to_string(i) + "].";
            if (!call.is_object()) return Status::corrupt(where + " is not an object");
            ToolCall out;
            Result<std::string> id = optionalString(call, "id", where);
            if (!id) return id.status();
            out.id = *id;
            const auto function = call.find("function");
            if (function == call.end() || !function->is_object())
                return Status::corrupt(where + "function is missing");
            Result<std::string> name = optionalString(*function, "name", where + "function.");
            if (!name) return name.status();
            out.name = *name;
            if (const auto args = function->find("arguments"); args != function->end()) {
                // Some servers send the arguments as an object rather than as text.
                out.arguments = args->is_string() ? args->get<std::string>() : args->dump();
            }
            response.toolCalls.push_back(std::move(out));
        }
    }
    return response;
}

Status ChatCompletionStream::onEvent(const SseEvent& event, std::string& textDelta) {
    textDelta.clear();
    if (m_done) return Status::ok();  // nothing after [DONE] belongs to the answer
    ++m_events;
    Status status = chunk(event, textDelta);
    if (status.isOk()) return status;
    return status.withContext("event " + std::to_string(event.number) + " (byte " +
                              std::to_string(event.offset) + "): ");
}

Status ChatCompletionStream::chunk(const SseEvent& event, std::string& textDelta) {
    if (event.data == "[DONE]") {
        m_done = true;
        return Status::ok();
    }
    Json object;
    try {
        object = Json::parse(event.data);
    } catch (const Json::exception& e) {
        return Status::corrupt(std::string("malformed JSON: ") + e.what() + ": " +
                               excerpt(event.data, 80));
    }
    if (event.type == "error")
        return Status::ioError("the server reported an error: " + errorText(object));
    if (!object.is_object()) return Status::corrupt("the chunk is not a JSON object");
    if (const auto error = object.find("error"); error != object.end() && !error->is_null())
        return Status::ioError("the server reported an error: " + errorText(*error));

    Result<std::string> model = optionalString(object, "model", "");
    if (!model) return model.status();
    if (!model->empty()) m_response.model = *model;
    IRIS_RETURN_IF_ERROR(readUsage(object, m_response, ""));

    const auto choices = object.find("choices");
    if (choices == object.end() || choices->is_null()) return Status::ok();
    if (!choices->is_array()) return Status::corrupt("choices is not an array");
    for (const Json& choice : *choices) {
        if (!choice.is_object()) return Status::corrupt("a choice is not an object");
        if (const auto index = choice.find("index");
            index != choice.end() &&
            !(index->is_number_integer() && index->get<std::int64_t>() == 0)) {
            continue;  // only the first choice is asked for
        }
        Result<std::string> finish = optionalString(choice, "finish_reason", "choices[0].");
        if (!finish) return finish.status();
        if (!finish->empty()) m_response.finishReason = *finish;

        const auto delta = choice.find("delta");
        if (delta == choice.end() || delta->is_null()) continue;
        if (!delta->is_object()) return Status::corrupt("choices[0].delta is not an object");
        Result<std::string> content = optionalString(*delta, "content", "choices[0].delta.");
        if (!content) return content.status();
        textDelta += *content;

        const auto calls = delta->find("tool_calls");
        if (calls == delta->end() || calls->is_null()) continue;
        if (!calls->is_array())
            return Status::corrupt("choices[0].delta.tool_calls is not an array");
        for (std::size_t i = 0; i < calls->size(); ++i) {
            const Json& call = (*calls)[i];
            const std::string where = "choices[0].delta.tool_calls[" + std::to_string(i) + "].";
            if (!call.is_object()) return Status::corrupt(where + " is not an object");
            std::int64_t index = std::int64_t(i);
            if (const auto it = call.find("index"); it != call.end() && !it->is_null()) {
                if (!it->is_number_integer())
                    return Status::corrupt(where + "index is not an integer");
                index = it->get<std::int64_t>();
            }
            if (index < 0 || index >= kMaxToolCalls) {
                return Status::corrupt(where + "index " + std::to_string(index) +
                                       " is out of range");
            }
            ToolCall& out = m_toolCalls[int(index)];
            Result<std::string> id = optionalString(call, "id", where);
            if (!id) return id.status();
            if (out.id.empty()) out.id = *id;  // some servers repeat it in every delta
            const auto function = call.find("function");
            if (function == call.end() || function->is_null()) continue;
            if (!function->is_object()) return Status::corrupt(where + "function is not an object");
            Result<std::string> name = optionalString(*function, "name", where + "function.");
            if (!name) return name.status();
            if (*name != out.name) out.name += *name;  // fragments, or the whole name repeated
            Result<std::string> arguments =
                optionalString(*function, "arguments", where + "function.");
            if (!arguments) return arguments.status();
            out.arguments += *arguments;
        }
    }
    m_response.text += textDelta;
    return Status::ok();
}

ChatResponse ChatCompletionStream::response() const {
    ChatResponse response = m_response;
    for (const auto& [index, call] : m_toolCalls)
        response.toolCalls.push_back(call);
    return response;
}

}  // namespace iris::agent
