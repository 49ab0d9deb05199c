#pragma once
// One local engine for several Iris processes of the same user. The registry of
// app/session/model_choice.h shares a loaded engine inside a process; this shares it across
// processes (a GUI session and `iris eval run` started in a terminal, say), so that the weights,
// the KV pool and the cores are not taken twice.
//
// Publishing: a process that loads an engine through the registry serves it with the
// OpenAI-compatible server (app/serve/openai_server.h) on 127.0.0.1, a port the kernel chooses
// and a random 256-bit key, and writes an entry (EngineEntry) into the discovery folder
// $XDG_RUNTIME_DIR/iris/engines (folder 0700, files 0600). The entry goes when the last holder
// of the engine in that process lets it go, or on a clean exit.
//
// Attaching: a process that asks for a local engine its own registry does not have looks there
// for a live engine of another process over the same files (FileIdentity) that the reuse rule
// of model_choice.cpp accepts (context and pool at least as large, the same chat template and
// image budget), and talks to it over HTTP (SharedEngineClient). The server renders the prompt
// with the same code as the in-process client (agent::promptRequest) and receives the images'
// original bytes, so the answers are the same. When that process exits, the client loads its
// own engine and retries the request there.
//
// Off unless the front end turns it on (configureEngineSharing with a process kind), when
// XDG_RUNTIME_DIR is unset, and for a ModelChoice with shareEngine false (--no-shared-engine).
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/clients/model_client.h"
#include "app/session/model_choice.h"
#include "base/status.h"
#include "inference/scheduler.h"
#include "inference/vision/image_preprocess.h"

namespace iris::app {

struct EngineSharingConfig {
    // What the entries say this process is: "gui", "run", "eval", "serve", "replay". Empty:
    // sharing is off (the default, so that tests and other commands stay on their own).
    std::string processKind;
    // The discovery folder; empty: $XDG_RUNTIME_DIR/iris/engines (off when that is unset).
    std::filesystem::path directory;
};

// Process-wide; called once by the front end before it makes model clients. Thread-safe.
void configureEngineSharing(EngineSharingConfig config);
// The configured process kind; empty while sharing is off.
std::string engineSharingProcessKind();
// The discovery folder while sharing is on, else nullopt. The first time it is off because
// XDG_RUNTIME_DIR is unset, one line on stderr says so.
std::optional<std::filesystem::path> engineSharingDirectory();

// A model file as an entry names it: the same path, size, modification time, device and inode
// is the same file (a file replaced in place, by a new pull say, is another).
struct FileIdentity {
    std::filesystem::path path;  // canonical; empty: no file (no projector)
    std::uintmax_t size = 0;
    std::int64_t modifiedNs = 0;
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    bool operator==(const FileIdentity&) const = default;
};
// The identity of `path` (empty: the empty identity); IoError naming it when it cannot be read.
Result<FileIdentity> fileIdentity(const std::filesystem::path& path);

// One published engine.
struct EngineEntry {
    pid_t pid = 0;
    std::string processKind;
    FileIdentity model;
    FileIdentity mmproj;
    // What the reuse rule compares (inference::EngineOptions).
    std::int64_t contextSize = 0;
    int maxSessions = 0;
    std::string chatTemplate;  // chatTemplateKindName; empty: the file's own
    std::int64_t imageMaxPixels = 0;
    // The vision tower's resize, so that an attached client answers imageSizeFor as the engine
    // resizes; absent without a projector.
    std::optional<inference::ImagePreprocessOptions> image;
    std::string host = "127.0.0.1";
    int port = 0;
    std::string apiKey;     // empty: the server asks for none
    std::string modelName;  // what the server calls the model
};

nlohmann::json engineEntryJson(const EngineEntry& entry);
// Corrupt naming `where` and the field for a missing or mistyped one.
Result<EngineEntry> engineEntryFromJson(const nlohmann::json& json, const std::string& where);

// Writes `entry` as <directory>/<pid>-<port>.json, atomically, mode 0600, creating the folder
// with mode 0700 (and making an existing one 0700). The file's path; IoError naming it.
Result<std::filesystem::path> writeEngineEntry(const std::filesystem::path& directory,
                                               const EngineEntry& entry);
// The entries of live engines of other processes in `directory`, read in file-name order.
// Removes the stale ones it meets: unreadable, of a process that no longer exists, or whose
// server refuses the connection or does not answer /health with 200 (a server that is slow to
// answer is skipped, not removed). Only entries `wanted` accepts are asked for /health.
std::vector<EngineEntry> liveEngineEntries(
    const std::filesystem::path& directory,
    const std::function<bool(const EngineEntry&)>& wanted = {});
// Whether the entry's server answers GET /health with 200 now.
bool engineAnswers(const EngineEntry& entry);

// The reuse rule of model_choice.cpp across processes: the same model and projector files, a
// context and a pool at least as large as `choice` asks for, the same chat template and image
// budget.
bool entryServes(const EngineEntry& entry, const ModelChoice& choice, const FileIdentity& model,
                 const FileIdentity& mmproj);

// A published engine: its server (sharing the scheduler with the process's own clients) and its
// entry file. Destroying it removes the entry and stops the server; the scheduler runs on.
class EnginePublication {
public:
    // Serves `scheduler` (loaded for `choice`) on 127.0.0.1 and writes its entry into
    // `directory`. Errors are the server's or the entry file's.
    static Result<std::unique_ptr<EnginePublication>> start(
        std::shared_ptr<inference::Scheduler> scheduler, const ModelChoice& choice,
        const std::filesystem::path& directory, const std::string& processKind);
    ~EnginePublication();
    EnginePublication(const EnginePublication&) = delete;
    EnginePublication& operator=(const EnginePublication&) = delete;

    const EngineEntry& entry() const { return m_entry; }
    const std::filesystem::path& file() const { return m_file; }

private:
    struct Server;
    EnginePublication() = default;

    std::unique_ptr<Server> m_server;
    EngineEntry m_entry;
    std::filesystem::path m_file;
    const inference::Scheduler* m_scheduler = nullptr;
};

// An entry file that only names an engine served otherwise (`iris serve`'s own server): written
// by the constructor (a failure is said on stderr and leaves nothing), removed by the destructor.
class PublishedEntry {
public:
    PublishedEntry(const std::filesystem::path& directory, const EngineEntry& entry);
    ~PublishedEntry();
    PublishedEntry(const PublishedEntry&) = delete;
    PublishedEntry& operator=(const PublishedEntry&) = delete;
    bool written() const { return !m_file.empty(); }

private:
    std::filesystem::path m_file;
};

// The entry for an engine loaded with `options` from `model` (and options.mmprojPath), without
// port and key; used by EnginePublication and `iris serve`.
Result<EngineEntry> engineEntryFor(const inference::Engine& engine,
                                   const std::filesystem::path& model,
                                   const std::string& processKind);

// Loads the process's own engine: what SharedEngineClient falls back to.
using LoadHere = std::function<Result<std::unique_ptr<agent::ModelClient>>()>;

// The client of another process's engine (`entry`): an OpenAI client with the entry's key. When
// a request fails and that engine no longer answers /health (its process exited or stopped
// sharing), it calls `loadHere` once, says so on stderr, and retries the request there; later
// requests go there too. describe() is the in-process client's ("local <file name>"), so
// recordings and evaluation results do not depend on where the engine ran.
class SharedEngineClient final : public agent::ModelClient {
public:
    SharedEngineClient(EngineEntry entry, std::string fileName, LoadHere loadHere);
    ~SharedEngineClient() override;

    Result<agent::ChatResponse> complete(const agent::ChatRequest& request,
                                         const agent::TextStream& onText = {}) override;
    void cancel() override;
    std::string describe() const override;
    std::optional<inference::ImageSize> imageSizeFor(int width, int height) const override;

    const EngineEntry& entry() const { return m_entry; }
    // Whether the requests now go to an engine loaded here (after the publisher went away).
    bool fellBack() const;

private:
    struct State;
    EngineEntry m_entry;
    std::string m_fileName;
    LoadHere m_loadHere;
    std::unique_ptr<State> m_state;
};

// For makeModelClient: a SharedEngineClient of a live engine of another process that serves
// `choice`, or nullptr (sharing off, choice.shareEngine false, none found).
std::unique_ptr<agent::ModelClient> attachSharedEngine(const ModelChoice& choice,
                                                       LoadHere loadHere);
// For sharedScheduler: publishes a newly loaded engine when sharing is on and
// choice.shareEngine; nullptr otherwise or when publishing failed (said on stderr).
std::unique_ptr<EnginePublication> publishLoadedEngine(
    std::shared_ptr<inference::Scheduler> scheduler, const ModelChoice& choice);

// What the command line and the GUI's status bar say about the engine `client` uses:
// "shared with iris gui (pid 1234)", "loaded here (published for other Iris processes)",
// "loaded here (not shared: ...)"; empty for a client that is not a local engine's.
std::string engineUseSummary(const agent::ModelClient& client);

// With --device auto on the CPU, the line that says why the engine `client` loaded here does not
// run on a GPU (Engine::deviceNote()); empty otherwise.
std::string engineDeviceNote(const agent::ModelClient& client);

}  // namespace iris::app
