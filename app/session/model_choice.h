#pragma once
// Which model answers the agent: Iris's own engine on a GGUF file, an OpenAI-compatible server,
// or none. The command line fills a ModelChoice from its options (app/cli/agent_setup.h), the
// GUI from its settings (app/gui/settings.h); makeModelClient is the one place that turns it
// into a client.
//
// Several endpoints: every client made for the same list, model name and key variable while one
// of them lives shares one agent::EndpointPool (a process-wide registry of weak references, as
// for local engines), so an evaluation's tasks balance their requests over the servers together.
//
// One copy of a local model per process: local clients are clients of a serving engine
// (inference::Scheduler) that sharedScheduler() hands out from a process-wide registry, so an
// evaluation's parallel tasks, a GUI session and its forks share the loaded weights and the
// prefix cache, and run at once up to the engine's `parallel` sequences.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/clients/model_client.h"
#include "base/status.h"
#include "inference/backend/device.h"
#include "inference/scheduler.h"
#include "inference/thread_pool.h"

namespace iris::app {

namespace models {
struct Catalogue;
class ModelStore;
}  // namespace models

struct ModelChoice {
    enum class Backend { None, LocalEngine, Endpoint };
    Backend backend = Backend::None;

    // LocalEngine: the language model, its optional vision projector, and the engine's size.
    std::filesystem::path modelPath;
    std::filesystem::path mmprojPath;  // empty: text only
    // The image budget in pixels (a catalogue model's max_pixels); 0: the projector's own.
    std::int64_t imageMaxPixels = 0;
    // The chat template to render instead of the file's (inference::EngineOptions::chatTemplate).
    std::optional<inference::ChatTemplateKind> chatTemplate;
    inference::DeviceChoice device{};  // --device (inference/backend/device.h)
    int threads = inference::ThreadPool::hardwareThreads();
    std::int64_t contextSize = 16384;  // tokens per sequence
    // Sequences the engine runs at once (an evaluation's --parallel): its KV pool holds this many
    // contexts, and more requests at once wait their turn.
    int parallel = 1;
    // Use another Iris process's engine over the same files, and publish this one for others
    // (app/session/engine_sharing.h); false: --no-shared-engine, the GUI's setting.
    bool shareEngine = true;
    // Budget of the KV disk tier in defaultKvDirectory() (--kv-disk-gb); 0: off.
    std::int64_t kvDiskBytes = 0;
    // MiniMax-M3's KV tiers (--kv-resident-mb, --kv-host-mb; kvTierOptions()); off by default.
    inference::KvTierOptions kvTiers{};

    // Endpoint: the server's base URL (requests go to {endpoint}/chat/completions), the model
    // name it expects, and the environment variable holding its key (its value is never kept).
    std::string endpoint;
    // Two or more: requests are balanced over these servers and fail over between them
    // (agent/clients/endpoint_pool.h); `endpoint` is then unused. Fewer: `endpoint` alone.
    std::vector<std::string> endpoints;
    std::string modelName = "iris";
    std::string apiKeyEnv = "IRIS_API_KEY";
};

// For a LocalEngine `choice` whose model file is a pulled model the catalogue knows (a blob of
// `store`) or a bundled one (in `modelsDirectory`/NAME): the catalogue's image budget and chat
// template, where `choice` does not set them already. So a model chosen by its file (the GUI
// keeps a path; `--model FILE`) runs as `--model NAME` runs it.
void applyCatalogueDefaults(ModelChoice& choice, const models::ModelStore& store,
                            const models::Catalogue& catalogue,
                            const std::filesystem::path& modelsDirectory);
// The same with the user's store (models::defaultModelsDirectory()) and the bundled catalogue.
void applyCatalogueDefaults(ModelChoice& choice);

// Called on the loading thread with the fraction of the model loaded (see
// inference::EngineOptions::onLoadProgress).
using LoadProgress = std::function<void(double fraction)>;

// The disk tier options of a scheduler: defaultKvDirectory() under `budgetBytes` (0: off).
inference::KvDiskStoreOptions kvDiskOptions(std::int64_t budgetBytes);
// --kv-disk-gb's value in bytes: InvalidArgument for a negative or non-numeric one.
Result<std::int64_t> kvDiskBytesFromGigabytes(double gigabytes);
// The KV tiers of --kv-resident-mb (0: off), --kv-host-mb and the disk budget (spill file in
// defaultKvDirectory(), unlinked at once). InvalidArgument for a value out of range.
Result<inference::KvTierOptions> kvTierOptions(double residentMb, double hostMb,
                                               std::int64_t diskBytes);

// The client `choice` asks for; nullptr for Backend::None. A local client is a client of
// sharedScheduler(choice). Opening a local model reads the whole file (seconds): callers with a
// GUI call this off its thread. Ranges (threads >= 1, a context of at least 256 tokens,
// parallel >= 1) are the caller's to check; errors are the engine's or the client's.
// Thread-safe.
Result<std::unique_ptr<agent::ModelClient>> makeModelClient(const ModelChoice& choice,
                                                            LoadProgress onLoadProgress = {});

// The serving engine of a LocalEngine `choice`. While some client or caller holds a scheduler
// for the same model and projector files (compared as canonical paths) whose context and pool
// are at least as large (contextSize, parallel), with the same image budget and chat template,
// that one, and onLoadProgress is not called;
// otherwise a newly loaded engine with choice's threads, context and parallel, and a scheduler
// running up to `parallel` sequences. The registry keeps only weak references: once every
// holder is gone, the engine is freed and the next call loads the file again. Thread-safe;
// calls for the same files at once load them once. Errors are the engine's (naming the file).
Result<std::shared_ptr<inference::Scheduler>> sharedScheduler(const ModelChoice& choice,
                                                              LoadProgress onLoadProgress = {});

}  // namespace iris::app
