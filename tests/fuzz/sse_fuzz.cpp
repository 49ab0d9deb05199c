// libFuzzer target for the streamed-answer path of the OpenAI client: arbitrary bytes, split into
// chunks at fuzzer-chosen points, go through SseParser and ChatCompletionStream, and the same
// bytes are read as a whole (non-streamed) answer. Any input must parse or fail cleanly.
//   build/fuzz/tests/fuzz/iris_sse_fuzz -max_total_time=300 corpus/ tests/fuzz/sse_seeds/
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/clients/openai_protocol.h"
#include "agent/clients/sse_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace iris::agent;
    if (size == 0) return 0;
    // The first byte picks the chunk size, so that splits land everywhere.
    const std::size_t chunk = std::size_t(data[0] % 64) + 1;
    const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);

    SseParser parser;
    ChatCompletionStream stream;
    std::vector<SseEvent> events;
    std::string delta, text;
    bool failed = false;
    for (std::size_t at = 0; at < bytes.size() && !failed; at += chunk) {
        events.clear();
        failed = !parser.feed(bytes.substr(at, chunk), events).isOk();
        for (const SseEvent& event : events) {
            if (!stream.onEvent(event, delta).isOk()) {
                failed = true;
                break;
            }
            text += delta;
        }
    }
    const ChatResponse streamed = stream.response();
    if (!failed && streamed.text != text) __builtin_trap();  // the deltas add up to the text

    const iris::Result<ChatResponse> whole = parseChatCompletion(bytes);
    std::size_t sink = streamed.toolCalls.size() + std::size_t(parser.hasPartialEvent());
    if (whole) sink += whole->text.size() + whole->toolCalls.size();
    return sink == 1 ? 0 : 0;  // `sink` keeps the work from being optimised away
}
