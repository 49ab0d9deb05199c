#pragma once
// Which model answers the agent: Iris's own engine on a GGUF file, an OpenAI-compatible server,
// or none. The command line fills a ModelChoice from its options (app/cli/agent_setup.h), the
// GUI from its settings (app/gui/settings.h); makeModelClient is the one place that turns it
// into a client.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "agent/clients/model_client.h"
#include "base/status.h"
#include "inference/thread_pool.h"

namespace iris::app {

struct ModelChoice {
    enum class Backend { None, LocalEngine, Endpoint };
    Backend backend = Backend::None;

    // LocalEngine: the language model, its optional vision projector, and the engine's size.
    std::filesystem::path modelPath;
    std::filesystem::path mmprojPath;  // empty: text only
    int threads = inference::ThreadPool::hardwareThreads();
    std::int64_t contextSize = 16384;

    // Endpoint: the server's base URL (requests go to {endpoint}/chat/completions), the model
    // name it expects, and the environment variable holding its key (its value is never kept).
    std::string endpoint;
    std::string modelName = "iris";
    std::string apiKeyEnv = "IRIS_API_KEY";
};

// Called on the loading thread with the fraction of the model loaded (see
// inference::EngineOptions::onLoadProgress).
using LoadProgress = std::function<void(double fraction)>;

// The client `choice` asks for; nullptr for Backend::None. Opening a local model reads the whole
// file (seconds): callers with a GUI call this off its thread. Ranges (threads >= 1, a context of
// at least 256 tokens) are the caller's to check; errors are the engine's or the client's.
Result<std::unique_ptr<agent::ModelClient>> makeModelClient(const ModelChoice& choice,
                                                            LoadProgress onLoadProgress = {});

}  // namespace iris::app
