#include "app/session/model_choice.h"

#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

#include "agent/clients/local_engine_client.h"
#include "agent/clients/openai_client.h"
#include "agent/clients/pooled_client.h"
#include "app/models/catalogue.h"
#include "app/models/model_pull.h"
#include "app/models/model_store.h"
#include "app/session/data_paths.h"
#include "app/session/engine_sharing.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

// One loaded engine of the process: its files and a weak reference to its scheduler, so that the
// registry never keeps an engine alive by itself.
struct LoadedEngine {
    fs::path model;
    fs::path mmproj;
    std::weak_ptr<inference::Scheduler> scheduler;
};

// The registry. `entries` is short (one entry per model loaded at once), so a list will do.
struct Registry {
    std::mutex entriesMutex;  // guards entries
    std::vector<LoadedEngine> entries;
    // Held across a load (after a look-up missed), so that callers asking for the same files at
    // once load them once: the second finds the first's engine when it gets the lock.
    std::mutex loadMutex;
};

Registry& registry() {
    static Registry instance;
    return instance;
}

// The same file named two ways ("m.gguf", "./m.gguf", through a link) is one key.
fs::path canonicalPath(const fs::path& path) {
    if (path.empty()) return path;
    std::error_code error;
    fs::path canonical = fs::weakly_canonical(path, error);
    return error ? fs::absolute(path, error) : canonical;
}

// Reuse rule. When a second user (an evaluation started while the GUI runs a session, say) asks
// for the files an engine already serves, that engine is reused if its context and its KV pool
// are at least what the new user asks for: the weights, the vision tower and the prefix cache are
// then shared, and the new user's sequences join the running batch. If the loaded engine is
// smaller, a second one is loaded with the new user's sizes rather than silently giving them less:
// a shorter context would refuse long prompts in the middle of a task, and a smaller pool would
// make `--parallel N` queue its tasks behind one another, both surprises to a person who asked
// for the size. The price, while both live, is the second engine's KV pool and its copy of the
// weights Iris repacks at load (q8_0, q5_0, q4_0, the K-quants: kernels::packWeights); weights
// used in place share the pages of the read-only mapped file. Compute threads are not compared:
// they set the speed, not what the engine can serve.
bool serves(const inference::Scheduler& scheduler, const ModelChoice& choice) {
    const inference::EngineOptions& loaded = scheduler.engine().options();
    return loaded.contextSize >= choice.contextSize && loaded.maxSessions >= choice.parallel &&
           loaded.chatTemplate == choice.chatTemplate &&
           loaded.imageMaxPixels == choice.imageMaxPixels;
}

std::shared_ptr<inference::Scheduler> findServing(Registry& r, const fs::path& model,
                                                  const fs::path& mmproj,
                                                  const ModelChoice& choice) {
    std::lock_guard lock(r.entriesMutex);
    std::erase_if(r.entries, [](const LoadedEngine& e) { return e.scheduler.expired(); });
    for (const LoadedEngine& entry : r.entries) {
        if (entry.model != model || entry.mmproj != mmproj) continue;
        std::shared_ptr<inference::Scheduler> scheduler = entry.scheduler.lock();
        if (scheduler && serves(*scheduler, choice)) return scheduler;
    }
    return nullptr;
}

Result<std::shared_ptr<inference::Scheduler>> loadScheduler(const ModelChoice& choice,
                                                            LoadProgress onLoadProgress) {
    inference::EngineOptions options;
    options.device = choice.device;
    options.threads = choice.threads;
    options.contextSize = choice.contextSize;
    options.maxSessions = choice.parallel;
    options.mmprojPath = choice.mmprojPath;
    options.imageMaxPixels = choice.imageMaxPixels;
    options.chatTemplate = choice.chatTemplate;
    options.kvTiers = choice.kvTiers;
    options.onLoadProgress = std::move(onLoadProgress);
    Result<std::unique_ptr<inference::Engine>> engine =
        inference::Engine::load(choice.modelPath, options);
    if (!engine) return engine.status();
    // maxRunning 0: as many sequences at once as the pool holds contexts (choice.parallel).
    inference::SchedulerOptions scheduling;
    scheduling.kvDisk = kvDiskOptions(choice.kvDiskBytes);
    Result<std::unique_ptr<inference::Scheduler>> scheduler =
        inference::Scheduler::start(std::move(*engine), scheduling);
    if (!scheduler) return scheduler.status().withContext(choice.modelPath.string() + ": ");
    return std::shared_ptr<inference::Scheduler>(std::move(*scheduler));
}

// The pool of several endpoints that clients of the same list, model name and key variable
// share while any of them lives; a new one (with its prober thread) otherwise.
Result<std::shared_ptr<agent::EndpointPool>> sharedEndpointPool(const ModelChoice& choice) {
    struct Entry {
        std::vector<std::string> endpoints;
        std::string modelName;
        std::string apiKeyEnv;
        std::weak_ptr<agent::EndpointPool> pool;
    };
    static std::mutex mutex;
    static std::vector<Entry> entries;
    const std::lock_guard lock(mutex);
    std::erase_if(entries, [](const Entry& e) { return e.pool.expired(); });
    for (const Entry& entry : entries) {
        if (entry.endpoints != choice.endpoints || entry.modelName != choice.modelName ||
            entry.apiKeyEnv != choice.apiKeyEnv)
            continue;
        if (std::shared_ptr<agent::EndpointPool> pool = entry.pool.lock()) return pool;
    }
    agent::EndpointPoolSettings settings;
    settings.apiKeyEnv = choice.apiKeyEnv;
    Result<std::shared_ptr<agent::EndpointPool>> pool =
        agent::EndpointPool::make(choice.endpoints, std::move(settings));
    if (!pool) return pool.status();
    entries.push_back({choice.endpoints, choice.modelName, choice.apiKeyEnv, *pool});
    return pool;
}

Result<std::unique_ptr<agent::ModelClient>> localEngineClient(const ModelChoice& choice,
                                                              LoadProgress onLoadProgress) {
    Result<std::shared_ptr<inference::Scheduler>> scheduler =
        sharedScheduler(choice, std::move(onLoadProgress));
    if (!scheduler) return scheduler.status();
    return std::unique_ptr<agent::ModelClient>(agent::LocalEngineClient::attach(
        std::move(*scheduler), choice.modelPath.filename().string()));
}

}  // namespace

inference::KvDiskStoreOptions kvDiskOptions(std::int64_t budgetBytes) {
    inference::KvDiskStoreOptions options;
    if (budgetBytes <= 0) return options;
    options.folder = defaultKvDirectory();
    options.budgetBytes = budgetBytes;
    return options;
}

Result<std::int64_t> kvDiskBytesFromGigabytes(double gigabytes) {
    if (!(gigabytes >= 0) || gigabytes > 1e6)
        return Status::invalidArgument("--kv-disk-gb must be 0 (off) to 1000000");
    return std::int64_t(gigabytes * double(std::int64_t(1) << 30));
}

Result<inference::KvTierOptions> kvTierOptions(double residentMb, double hostMb,
                                               std::int64_t diskBytes) {
    if (!(residentMb >= 0) || residentMb > 1e9 || !(hostMb >= 0) || hostMb > 1e9)
        return Status::invalidArgument("--kv-resident-mb and --kv-host-mb must be 0 to 1e9");
    inference::KvTierOptions options;
    if (residentMb == 0) return options;
    options.computeBytes = std::max<std::int64_t>(1, std::int64_t(residentMb * double(1 << 20)));
    options.hostBytes = std::int64_t(hostMb * double(1 << 20));
    if (diskBytes > 0) {
        options.diskBytes = diskBytes;
        options.diskFolder = defaultKvDirectory().string();
    }
    return options;
}

Result<std::shared_ptr<inference::Scheduler>> sharedScheduler(const ModelChoice& choice,
                                                              LoadProgress onLoadProgress) {
    if (choice.backend != ModelChoice::Backend::LocalEngine)
        return Status::invalidArgument("sharedScheduler: the choice is not a local model");
    const fs::path model = canonicalPath(choice.modelPath);
    const fs::path mmproj = canonicalPath(choice.mmprojPath);
    Registry& r = registry();
    if (auto found = findServing(r, model, mmproj, choice)) return found;
    std::lock_guard loading(r.loadMutex);
    if (auto found = findServing(r, model, mmproj, choice)) return found;
    Result<std::shared_ptr<inference::Scheduler>> loaded =
        loadScheduler(choice, std::move(onLoadProgress));
    if (!loaded) return loaded.status();
    // Published for other processes while anyone here holds it (engine_sharing.h): the pointer
    // handed out keeps the publication alive, which ends before the scheduler does.
    struct Published {
        std::shared_ptr<inference::Scheduler> scheduler;
        std::unique_ptr<EnginePublication> publication;
        ~Published() { publication.reset(); }
    };
    auto published = std::make_shared<Published>();
    published->scheduler = *loaded;
    published->publication = publishLoadedEngine(*loaded, choice);
    std::shared_ptr<inference::Scheduler> scheduler(published, published->scheduler.get());
    std::lock_guard lock(r.entriesMutex);
    r.entries.push_back({model, mmproj, scheduler});
    return scheduler;
}

namespace {

// The bundled entry whose installed model file `modelFile` is (app/models/catalogue.h).
const models::CatalogueEntry* bundledEntryOfFile(const models::Catalogue& catalogue,
                                                 const std::filesystem::path& modelsDirectory,
                                                 const std::filesystem::path& modelFile) {
    for (const models::CatalogueEntry& entry : catalogue.entries) {
        if (!entry.bundled) continue;
        Result<models::BundledFiles> files = models::bundledModelFiles(entry, modelsDirectory);
        std::error_code error;
        if (files && std::filesystem::equivalent(files->model, modelFile, error)) return &entry;
    }
    return nullptr;
}

}  // namespace

void applyCatalogueDefaults(ModelChoice& choice, const models::ModelStore& store,
                            const models::Catalogue& catalogue,
                            const std::filesystem::path& modelsDirectory) {
    if (choice.backend != ModelChoice::Backend::LocalEngine || choice.modelPath.empty()) return;
    if (choice.imageMaxPixels > 0 && choice.chatTemplate) return;
    std::optional<models::CatalogueEntry> entry =
        models::catalogueEntryOfFile(store, catalogue, choice.modelPath);
    if (!entry) {
        if (const models::CatalogueEntry* bundled =
                bundledEntryOfFile(catalogue, modelsDirectory, choice.modelPath))
            entry = *bundled;
    }
    if (!entry) return;
    if (choice.imageMaxPixels == 0) choice.imageMaxPixels = entry->maxPixels;
    if (!choice.chatTemplate)
        choice.chatTemplate = inference::chatTemplateKindFromName(entry->chatTemplate);
}

void applyCatalogueDefaults(ModelChoice& choice) {
    if (choice.backend != ModelChoice::Backend::LocalEngine || choice.modelPath.empty()) return;
    // A missing or broken catalogue only loses the defaults.
    const Result<models::Catalogue> catalogue =
        models::loadCatalogue(dataDirectory() / "models" / "catalogue.json");
    if (!catalogue) return;
    applyCatalogueDefaults(choice, models::ModelStore(models::defaultModelsDirectory()), *catalogue,
                           dataDirectory() / "models");
}

Result<std::unique_ptr<agent::ModelClient>> makeModelClient(const ModelChoice& choice,
                                                            LoadProgress onLoadProgress) {
    switch (choice.backend) {
        case ModelChoice::Backend::None:
            break;
        case ModelChoice::Backend::Endpoint: {
            agent::OpenAiSettings settings;
            settings.baseUrl = choice.endpoint;
            settings.model = choice.modelName;
            settings.apiKeyEnv = choice.apiKeyEnv;
            if (choice.endpoints.size() >= 2) {
                Result<std::shared_ptr<agent::EndpointPool>> pool = sharedEndpointPool(choice);
                if (!pool) return pool.status();
                return std::unique_ptr<agent::ModelClient>(
                    std::make_unique<agent::PooledClient>(std::move(*pool), std::move(settings)));
            }
            return std::unique_ptr<agent::ModelClient>(
                std::make_unique<agent::OpenAiClient>(std::move(settings)));
        }
        case ModelChoice::Backend::LocalEngine: {
            // Another Iris process's engine when this one has none for it (engine_sharing.h).
            const bool loadedHere =
                findServing(registry(), canonicalPath(choice.modelPath),
                            canonicalPath(choice.mmprojPath), choice) != nullptr;
            if (!loadedHere) {
                if (auto shared = attachSharedEngine(
                        choice, [choice] { return localEngineClient(choice, {}); }))
                    return shared;
            }
            return localEngineClient(choice, std::move(onLoadProgress));
        }
    }
    return std::unique_ptr<agent::ModelClient>();
}

}  // namespace iris::app
