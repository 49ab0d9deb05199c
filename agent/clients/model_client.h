#pragma once
// Whoever answers the agent's chat requests: the local engine, an OpenAI-compatible server, or a
// recorded session. The loop holds one of these and nothing more specific.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/clients/chat.h"
#include "base/status.h"
#include "inference/vision/image_preprocess.h"

namespace iris::agent {

// Receives the answer's text as it is produced; return false to cancel the request.
using TextStream = std::function<bool(std::string_view delta)>;

class ModelClient {
public:
    virtual ~ModelClient() = default;

    // Blocks until the answer is complete, failed, or was cancelled (Status code Cancelled).
    // `onText`, when set, sees the text as it streams in (on the calling thread).
    virtual Result<ChatResponse> complete(const ChatRequest& request,
                                          const TextStream& onText = {}) = 0;

    // Makes a complete() running on another thread return Cancelled soon (within a poll
    // interval). Thread-safe; without a request in flight it does nothing.
    virtual void cancel() = 0;

    // "openai http://127.0.0.1:8000/v1 model=ui-tars", "local qwen2.5-vl-3b.gguf", "replay 12":
    // for logs and recordings; never contains a secret.
    virtual std::string describe() const = 0;

    // The size of the image the model is shown for a width x height screenshot, when the client
    // resizes it first (the local engine's smart resize for Qwen2.5-VL): models such as UI-TARS
    // answer in that image's pixels (CoordinateFrame::Kind::ModelImage). nullopt: the model sees
    // the screenshot as it is, or the client cannot tell. Clients that wrap another forward it.
    virtual std::optional<inference::ImageSize> imageSizeFor(int width, int height) const {
        (void)width;
        (void)height;
        return std::nullopt;
    }

    // The servers that answered this client's requests, distinct, in the order of their first
    // answer, as agent/clients/endpoint_pool.h's endpointLabel shows them (no credentials): what
    // an evaluation records per task. Empty for clients that ask no server.
    virtual std::vector<std::string> endpointsUsed() const { return {}; }
};

}  // namespace iris::agent
