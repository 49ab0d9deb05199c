// The publishing and attaching side of engine sharing (engine_sharing.h): the server over a
// registry engine with its entry, the client of another process's engine and its fallback, and
// what the front ends say about which engine they use.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <system_error>
#include <utility>

#include <sys/random.h>

#include "agent/clients/local_engine_client.h"
#include "agent/clients/openai_client.h"
#include "app/serve/openai_server.h"
#include "app/session/engine_sharing.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

// 256 random bits from the kernel, as hex: the key a published server asks for.
Result<std::string> randomKey() {
    unsigned char bytes[32];
    if (::getrandom(bytes, sizeof bytes, 0) != ssize_t(sizeof bytes))
        return Status::ioError("getrandom: no random bytes for the shared engine's key");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string key;
    for (const unsigned char byte : bytes) {
        key += kHex[byte >> 4];
        key += kHex[byte & 15];
    }
    return key;
}

// The schedulers of this process that are published, and why others are not, for
// engineUseSummary. Raw pointers are only compared, never followed.
struct PublishedSet {
    std::mutex mutex;
    std::vector<const inference::Scheduler*> published;
    std::vector<std::pair<const inference::Scheduler*, std::string>> notShared;
};

PublishedSet& publishedSet() {
    static PublishedSet set;
    return set;
}

void noteNotShared(const inference::Scheduler* scheduler, std::string why) {
    PublishedSet& set = publishedSet();
    std::lock_guard lock(set.mutex);
    std::erase_if(set.notShared, [&](const auto& n) { return n.first == scheduler; });
    set.notShared.emplace_back(scheduler, std::move(why));
}

std::string processName(const EngineEntry& entry) {
    return "iris " + entry.processKind + " (pid " + std::to_string(entry.pid) + ")";
}

}  // namespace

struct EnginePublication::Server {
    explicit Server(serve::ServerOptions options) : server(std::move(options)) {}
    serve::OpenAiServer server;
};

Result<std::unique_ptr<EnginePublication>> EnginePublication::start(
    std::shared_ptr<inference::Scheduler> scheduler, const ModelChoice& choice,
    const fs::path& directory, const std::string& processKind) {
    Result<EngineEntry> entry = engineEntryFor(scheduler->engine(), choice.modelPath, processKind);
    IRIS_RETURN_IF_ERROR(entry.status());
    Result<std::string> key = randomKey();
    IRIS_RETURN_IF_ERROR(key.status());
    entry->apiKey = std::move(*key);
    serve::ServerOptions options;
    options.host = entry->host;
    options.port = 0;
    options.apiKey = entry->apiKey;
    options.modelName = entry->modelName;  // what the in-process client reports, too
    // A connection's thread waits for its generation: one per sequence the engine runs at once,
    // and some for requests waiting their turn and /health.
    options.httpThreads = entry->maxSessions + 8;
    options.logRequests = false;              // the requests are the other process's to log
    options.shutdownSchedulerOnStop = false;  // this process's own clients go on using it
    std::unique_ptr<EnginePublication> publication(new EnginePublication);
    publication->m_server = std::make_unique<Server>(std::move(options));
    Result<int> port = publication->m_server->server.start();
    IRIS_RETURN_IF_ERROR(port.status());
    publication->m_scheduler = scheduler.get();
    publication->m_server->server.setScheduler(std::move(scheduler));
    entry->port = *port;
    Result<fs::path> file = writeEngineEntry(directory, *entry);
    IRIS_RETURN_IF_ERROR(file.status());  // the destructor stops the server
    publication->m_entry = std::move(*entry);
    publication->m_file = std::move(*file);
    PublishedSet& set = publishedSet();
    std::lock_guard lock(set.mutex);
    set.published.push_back(publication->m_scheduler);
    return publication;
}

EnginePublication::~EnginePublication() {
    // The entry first, so that no reader finds a server that is going away.
    if (!m_file.empty()) {
        std::error_code ignored;
        fs::remove(m_file, ignored);
    }
    if (m_server) m_server->server.stop();
    PublishedSet& set = publishedSet();
    std::lock_guard lock(set.mutex);
    std::erase(set.published, m_scheduler);
}

PublishedEntry::PublishedEntry(const fs::path& directory, const EngineEntry& entry) {
    Result<fs::path> file = writeEngineEntry(directory, entry);
    if (!file) {
        std::cerr << "iris: not shared with other Iris processes: " << file.status().message()
                  << '\n';
        return;
    }
    m_file = std::move(*file);
}

PublishedEntry::~PublishedEntry() {
    std::error_code ignored;
    if (!m_file.empty()) fs::remove(m_file, ignored);
}

struct SharedEngineClient::State {
    std::unique_ptr<agent::OpenAiClient> remote;
    mutable std::mutex mutex;  // guards local (set once, by complete())
    std::unique_ptr<agent::ModelClient> local;
    std::atomic<bool> cancelled{false};

    agent::ModelClient* localClient() const {
        std::lock_guard lock(mutex);
        return local.get();
    }
};

SharedEngineClient::SharedEngineClient(EngineEntry entry, std::string fileName, LoadHere loadHere)
    : m_entry(std::move(entry)),
      m_fileName(std::move(fileName)),
      m_loadHere(std::move(loadHere)),
      m_state(std::make_unique<State>()) {
    agent::OpenAiSettings settings;
    settings.baseUrl = "http://" + m_entry.host + ":" + std::to_string(m_entry.port) + "/v1";
    settings.model = m_entry.modelName;
    settings.apiKeyEnv.clear();
    settings.apiKey = m_entry.apiKey;
    // A local engine on a CPU may think for minutes before its first token (a long prompt's
    // prefill, requests queued ahead): the in-process client has no time limit, nor should this.
    settings.idleTimeoutMs = 60 * 60 * 1000;
    settings.totalTimeoutMs = 6 * 60 * 60 * 1000;
    // A refused connection means the publisher is gone: fall back at once instead of retrying.
    settings.maxRetries = 0;
    m_state->remote = std::make_unique<agent::OpenAiClient>(std::move(settings));
}

SharedEngineClient::~SharedEngineClient() = default;

Result<agent::ChatResponse> SharedEngineClient::complete(const agent::ChatRequest& request,
                                                         const agent::TextStream& onText) {
    m_state->cancelled = false;
    if (agent::ModelClient* local = m_state->localClient()) return local->complete(request, onText);
    Result<agent::ChatResponse> answer = m_state->remote->complete(request, onText);
    if (answer || answer.status().code() == StatusCode::Cancelled || engineAnswers(m_entry))
        return answer;
    // The publisher exited (or stopped sharing) under this request. Text it streamed is shown
    // again from the start by the retry.
    std::cerr << "iris: the shared engine of " << processName(m_entry) << " is gone ("
              << answer.status().message() << "); loading the model here and asking again\n";
    Result<std::unique_ptr<agent::ModelClient>> loaded = m_loadHere();
    if (!loaded) return loaded.status();
    agent::ModelClient* local = loaded->get();
    {
        std::lock_guard lock(m_state->mutex);
        m_state->local = std::move(*loaded);
    }
    if (m_state->cancelled) return Status::cancelled("cancelled while the model was loading");
    return local->complete(request, onText);
}

void SharedEngineClient::cancel() {
    m_state->cancelled = true;
    m_state->remote->cancel();
    if (agent::ModelClient* local = m_state->localClient()) local->cancel();
}

std::string SharedEngineClient::describe() const {
    return "local " + m_fileName;
}

std::optional<inference::ImageSize> SharedEngineClient::imageSizeFor(int width, int height) const {
    if (!m_entry.image) return std::nullopt;
    Result<inference::ImageSize> size = inference::smartResize(width, height, *m_entry.image);
    if (!size) return std::nullopt;
    return *size;
}

bool SharedEngineClient::fellBack() const {
    return m_state->localClient() != nullptr;
}

std::unique_ptr<agent::ModelClient> attachSharedEngine(const ModelChoice& choice,
                                                       LoadHere loadHere) {
    if (choice.backend != ModelChoice::Backend::LocalEngine || !choice.shareEngine) return nullptr;
    const std::optional<fs::path> directory = engineSharingDirectory();
    if (!directory) return nullptr;
    // Unreadable files are the load's to report.
    const Result<FileIdentity> model = fileIdentity(choice.modelPath);
    const Result<FileIdentity> mmproj = fileIdentity(choice.mmprojPath);
    if (!model || !mmproj) return nullptr;
    std::vector<EngineEntry> live = liveEngineEntries(*directory, [&](const EngineEntry& entry) {
        return entryServes(entry, choice, *model, *mmproj);
    });
    if (live.empty()) return nullptr;
    return std::make_unique<SharedEngineClient>(
        std::move(live.front()), choice.modelPath.filename().string(), std::move(loadHere));
}

std::unique_ptr<EnginePublication> publishLoadedEngine(
    std::shared_ptr<inference::Scheduler> scheduler, const ModelChoice& choice) {
    if (!choice.shareEngine) {
        noteNotShared(scheduler.get(), "turned off");
        return nullptr;
    }
    const std::optional<fs::path> directory = engineSharingDirectory();
    if (!directory) {
        noteNotShared(scheduler.get(), "sharing is off in this process");
        return nullptr;
    }
    const inference::Scheduler* raw = scheduler.get();
    Result<std::unique_ptr<EnginePublication>> publication = EnginePublication::start(
        std::move(scheduler), choice, *directory, engineSharingProcessKind());
    if (!publication) {
        std::cerr << "iris: not shared with other Iris processes: "
                  << publication.status().message() << '\n';
        noteNotShared(raw, publication.status().message());
        return nullptr;
    }
    return std::move(*publication);
}

std::string engineUseSummary(const agent::ModelClient& client) {
    if (const auto* shared = dynamic_cast<const SharedEngineClient*>(&client)) {
        if (shared->fellBack())
            return "loaded here (the engine of " + processName(shared->entry()) + " went away)";
        return "shared with " + processName(shared->entry());
    }
    const auto* local = dynamic_cast<const agent::LocalEngineClient*>(&client);
    if (local == nullptr) return {};
    const inference::Scheduler* scheduler = local->scheduler().get();
    PublishedSet& set = publishedSet();
    std::lock_guard lock(set.mutex);
    if (std::find(set.published.begin(), set.published.end(), scheduler) != set.published.end())
        return "loaded here (published for other Iris processes)";
    for (const auto& [notShared, why] : set.notShared) {
        if (notShared == scheduler) return "loaded here (not shared: " + why + ")";
    }
    return "loaded here (not shared)";
}

std::string engineDeviceNote(const agent::ModelClient& client) {
    const auto* local = dynamic_cast<const agent::LocalEngineClient*>(&client);
    if (local == nullptr || local->scheduler() == nullptr) return {};
    return local->scheduler()->engine().deviceNote();
}

}  // namespace iris::app
