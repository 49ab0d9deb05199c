// The discovery side of engine sharing: the process-wide switch, file identities, entry files,
// and finding the live ones (engine_sharing.h). The publishing and attaching side is in
// engine_sharing_client.cpp.
#include "app/session/engine_sharing.h"

#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <system_error>

#include "app/session/json_file.h"
#include "inference/chat_template.h"
#include "inference/engine.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

struct SharingState {
    std::mutex mutex;  // guards the rest
    EngineSharingConfig config;
    bool saidUnset = false;  // the XDG_RUNTIME_DIR line is written once
};

SharingState& sharingState() {
    static SharingState state;
    return state;
}

Json identityJson(const FileIdentity& id) {
    if (id.path.empty()) return nullptr;
    return {{"path", id.path.string()},
            {"size", id.size},
            {"modified_ns", id.modifiedNs},
            {"device", id.device},
            {"inode", id.inode}};
}

FileIdentity identityFromJson(const Json& json) {
    FileIdentity id;
    if (json.is_null()) return id;
    id.path = json.at("path").get<std::string>();
    id.size = json.at("size").get<std::uintmax_t>();
    id.modifiedNs = json.at("modified_ns").get<std::int64_t>();
    id.device = json.at("device").get<std::uint64_t>();
    id.inode = json.at("inode").get<std::uint64_t>();
    return id;
}

// kill(pid, 0) probes without sending: EPERM still means the process exists.
bool processExists(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

enum class Health { Answers, Gone, Slow };

// GET /health with the entry's key. Refused or answered otherwise than 200 (503 while its
// server stops): gone. Loopback answers at once unless the process is stuck or swamped: slow.
Health health(const EngineEntry& entry) {
    httplib::Client client(entry.host, entry.port);
    client.set_connection_timeout(2);
    client.set_read_timeout(5);
    httplib::Headers headers;
    if (!entry.apiKey.empty()) headers.emplace("Authorization", "Bearer " + entry.apiKey);
    const httplib::Result answer = client.Get("/health", headers);
    if (answer) return answer->status == 200 ? Health::Answers : Health::Gone;
    const httplib::Error error = answer.error();
    return error == httplib::Error::Read || error == httplib::Error::ConnectionTimeout
               ? Health::Slow
               : Health::Gone;
}

void removeQuietly(const fs::path& path) {
    std::error_code ignored;
    fs::remove(path, ignored);
}

}  // namespace

void configureEngineSharing(EngineSharingConfig config) {
    SharingState& state = sharingState();
    std::lock_guard lock(state.mutex);
    state.config = std::move(config);
}

std::string engineSharingProcessKind() {
    SharingState& state = sharingState();
    std::lock_guard lock(state.mutex);
    return state.config.processKind;
}

std::optional<fs::path> engineSharingDirectory() {
    SharingState& state = sharingState();
    std::lock_guard lock(state.mutex);
    if (state.config.processKind.empty()) return std::nullopt;
    if (!state.config.directory.empty()) return state.config.directory;
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    if (runtime == nullptr || *runtime == '\0') {
        if (!state.saidUnset)
            std::cerr << "iris: XDG_RUNTIME_DIR is unset: local engines are not shared with "
                         "other Iris processes\n";
        state.saidUnset = true;
        return std::nullopt;
    }
    return fs::path(runtime) / "iris" / "engines";
}

Result<FileIdentity> fileIdentity(const fs::path& path) {
    if (path.empty()) return FileIdentity{};
    std::error_code error;
    fs::path canonical = fs::canonical(path, error);
    if (error) return Status::ioError(path.string() + ": " + error.message());
    struct stat info {};
    if (::stat(canonical.c_str(), &info) != 0)
        return Status::ioError(canonical.string() + ": " + std::generic_category().message(errno));
    FileIdentity id;
    id.path = std::move(canonical);
    id.size = std::uintmax_t(info.st_size);
    id.modifiedNs = std::int64_t(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
    id.device = std::uint64_t(info.st_dev);
    id.inode = std::uint64_t(info.st_ino);
    return id;
}

Json engineEntryJson(const EngineEntry& entry) {
    Json image = nullptr;
    if (entry.image) {
        image = {{"patch_size", entry.image->patchSize},
                 {"merge_size", entry.image->mergeSize},
                 {"min_pixels", entry.image->minPixels},
                 {"max_pixels", entry.image->maxPixels}};
    }
    return {{"pid", entry.pid},
            {"process", entry.processKind},
            {"model", identityJson(entry.model)},
            {"mmproj", identityJson(entry.mmproj)},
            {"context_size", entry.contextSize},
            {"max_sessions", entry.maxSessions},
            {"chat_template", entry.chatTemplate},
            {"image_max_pixels", entry.imageMaxPixels},
            {"image", image},
            {"host", entry.host},
            {"port", entry.port},
            {"api_key", entry.apiKey},
            {"model_name", entry.modelName}};
}

Result<EngineEntry> engineEntryFromJson(const Json& json, const std::string& where) {
    try {
        EngineEntry entry;
        entry.pid = json.at("pid").get<pid_t>();
        entry.processKind = json.at("process").get<std::string>();
        entry.model = identityFromJson(json.at("model"));
        entry.mmproj = identityFromJson(json.at("mmproj"));
        entry.contextSize = json.at("context_size").get<std::int64_t>();
        entry.maxSessions = json.at("max_sessions").get<int>();
        entry.chatTemplate = json.at("chat_template").get<std::string>();
        entry.imageMaxPixels = json.at("image_max_pixels").get<std::int64_t>();
        if (const Json& image = json.at("image"); !image.is_null()) {
            inference::ImagePreprocessOptions options;
            options.patchSize = image.at("patch_size").get<int>();
            options.mergeSize = image.at("merge_size").get<int>();
            options.minPixels = image.at("min_pixels").get<std::int64_t>();
            options.maxPixels = image.at("max_pixels").get<std::int64_t>();
            entry.image = options;
        }
        entry.host = json.at("host").get<std::string>();
        entry.port = json.at("port").get<int>();
        entry.apiKey = json.at("api_key").get<std::string>();
        entry.modelName = json.at("model_name").get<std::string>();
        if (entry.model.path.empty()) return Status::corrupt(where + ": model: missing");
        return entry;
    } catch (const Json::exception& e) {
        return Status::corrupt(where + ": " + e.what());
    }
}

Result<fs::path> writeEngineEntry(const fs::path& directory, const EngineEntry& entry) {
    std::error_code error;
    fs::create_directories(directory, error);
    if (error) return Status::ioError(directory.string() + ": " + error.message());
    // Only this user may list the engines (the files hold keys; 0600 guards them as well).
    fs::permissions(directory, fs::perms::owner_all, fs::perm_options::replace, error);
    if (error) return Status::ioError(directory.string() + ": " + error.message());
    const fs::path file =
        directory / (std::to_string(entry.pid) + "-" + std::to_string(entry.port) + ".json");
    IRIS_RETURN_IF_ERROR(writeJsonFileAtomically(file, engineEntryJson(entry), /*ownerOnly=*/true));
    return file;
}

std::vector<EngineEntry> liveEngineEntries(const fs::path& directory,
                                           const std::function<bool(const EngineEntry&)>& wanted) {
    std::vector<fs::path> files;
    std::error_code error;
    for (fs::directory_iterator it(directory, error), end; !error && it != end;
         it.increment(error)) {
        if (it->path().extension() == ".json") files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    std::vector<EngineEntry> live;
    for (const fs::path& file : files) {
        Result<Json> json = readJsonFile(file, "cannot read");
        if (!json && json.status().code() == StatusCode::NotFound) continue;  // removed meanwhile
        Result<EngineEntry> entry =
            json ? engineEntryFromJson(*json, file.string()) : Result<EngineEntry>(json.status());
        if (!entry || !processExists(entry->pid)) {
            removeQuietly(file);
            continue;
        }
        if (entry->pid == ::getpid()) continue;  // the process's own registry serves those
        if (wanted && !wanted(*entry)) continue;
        switch (health(*entry)) {
            case Health::Answers:
                live.push_back(std::move(*entry));
                break;
            case Health::Gone:
                removeQuietly(file);
                break;
            case Health::Slow:
                break;
        }
    }
    return live;
}

bool engineAnswers(const EngineEntry& entry) { return health(entry) == Health::Answers; }

bool entryServes(const EngineEntry& entry, const ModelChoice& choice, const FileIdentity& model,
                 const FileIdentity& mmproj) {
    const std::string chatTemplate =
        choice.chatTemplate ? std::string(inference::chatTemplateKindName(*choice.chatTemplate))
                            : std::string();
    return entry.model == model && entry.mmproj == mmproj &&
           entry.contextSize >= choice.contextSize && entry.maxSessions >= choice.parallel &&
           entry.chatTemplate == chatTemplate && entry.imageMaxPixels == choice.imageMaxPixels;
}

Result<EngineEntry> engineEntryFor(const inference::Engine& engine, const fs::path& model,
                                   const std::string& processKind) {
    const inference::EngineOptions& options = engine.options();
    EngineEntry entry;
    entry.pid = ::getpid();
    entry.processKind = processKind;
    Result<FileIdentity> modelId = fileIdentity(model);
    IRIS_RETURN_IF_ERROR(modelId.status());
    Result<FileIdentity> mmprojId = fileIdentity(options.mmprojPath);
    IRIS_RETURN_IF_ERROR(mmprojId.status());
    entry.model = std::move(*modelId);
    entry.mmproj = std::move(*mmprojId);
    entry.contextSize = options.contextSize;
    entry.maxSessions = options.maxSessions;
    if (options.chatTemplate)
        entry.chatTemplate = std::string(inference::chatTemplateKindName(*options.chatTemplate));
    entry.imageMaxPixels = options.imageMaxPixels;
    if (engine.hasVision()) entry.image = engine.imageOptions();
    entry.modelName = model.filename().string();
    return entry;
}

}  // namespace iris::app
