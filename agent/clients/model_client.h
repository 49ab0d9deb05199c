#pragma once
// Whoever answers the agent's chat requests: the local engine, an OpenAI-compatible server, or a
// recorded session. The loop holds one of these and nothing more specific.
#include <functional>
#include <string>
#include <string_view>

#include "agent/clients/chat.h"
#include "inference/status.h"

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
};

}  // namespace iris::agent
