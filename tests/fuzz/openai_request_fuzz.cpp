// libFuzzer target for `iris serve`'s request parsers and answer reader: any bytes, read as a
// chat or completion body, must parse or fail with InvalidArgument naming a field, and whatever
// parses must hold what the server relies on (sampling in range, images with bytes); any bytes
// read back as a model answer must give JSON that serialises. Build with the `fuzz` preset
// (clang) and run, e.g.:
//   build/fuzz/tests/fuzz/iris_openai_request_fuzz -max_total_time=300 tests/fuzz/openai_request_seeds
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "app/serve/openai_request.h"
#include "app/serve/openai_response.h"

namespace {

using namespace iris::app::serve;

void require(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "invariant broken: %s\n", what);
        std::abort();
    }
}

void checkSettings(const GenerationSettings& s) {
    require(std::isfinite(s.sampling.temperature) && s.sampling.temperature >= 0, "temperature");
    require(s.sampling.topP >= 0 && s.sampling.topP <= 1, "top_p");
    require(!s.maxTokens || *s.maxTokens >= 1, "max_tokens");
    for (const std::string& stop : s.stop)
        require(!stop.empty(), "stop strings are not empty");
}

void checkError(const iris::Status& status) {
    require(status.code() == iris::StatusCode::InvalidArgument, "errors are InvalidArgument");
    require(!errorField(status.message()).empty(), "errors name a field");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    iris::Result<ChatCompletionRequest> chat = parseChatCompletionRequest(body);
    if (chat) {
        checkSettings(chat->settings);
        for (const iris::agent::ChatMessage& message : chat->chat.messages) {
            for (const iris::agent::ContentPart& part : message.content)
                require(!part.isImage() || !part.image->bytes.empty(), "images have bytes");
        }
        require(chat->parseToolCalls == !chat->chat.tools.empty(), "tools offered are read");
    } else {
        checkError(chat.status());
    }
    iris::Result<CompletionRequest> completion = parseCompletionRequest(body);
    if (completion) {
        checkSettings(completion->settings);
        require(completion->tokenPrompt != completion->promptTokens.empty(), "token prompts");
    } else {
        checkError(completion.status());
    }
    const ChatAnswer answer = readChatAnswer(body, true, true, {}, "f");
    const std::string json = chatCompletionJson({"id", "m", 0}, answer, "stop", {});
    require(!nlohmann::json::parse(json, nullptr, false).is_discarded(), "answers serialise");
    return 0;
}
