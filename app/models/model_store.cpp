#include "app/models/model_store.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/file.h>
#include <unistd.h>

#include "base/strings.h"

namespace iris::app::models {
namespace fs = std::filesystem;
namespace {

bool isHexDigest(const std::string& text) {
    return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

nlohmann::json fileJson(const StoredFile& file) {
    return {{"file", file.file}, {"sha256", file.sha256}, {"size", file.size}};
}

Result<StoredFile> fileFromJson(const nlohmann::json& json, const std::string& where) {
    if (!json.is_object()) return Status::corrupt(where + ": expected an object");
    StoredFile file;
    const auto file_ = json.find("file");
    const auto sha = json.find("sha256");
    const auto size = json.find("size");
    if (file_ == json.end() || !file_->is_string())
        return Status::corrupt(where + ".file: expected a string");
    if (sha == json.end() || !sha->is_string() || !isHexDigest(sha->get<std::string>()))
        return Status::corrupt(where + ".sha256: expected 64 lowercase hex digits");
    if (size == json.end() || !size->is_number_unsigned())
        return Status::corrupt(where + ".size: expected a byte count");
    file.file = file_->get<std::string>();
    file.sha256 = sha->get<std::string>();
    file.size = size->get<std::uint64_t>();
    return file;
}

std::int64_t nowUnix() {
    return std::int64_t(std::time(nullptr));
}

}  // namespace

fs::path defaultModelsDirectory() {
    if (const char* dir = std::getenv("IRIS_MODELS_DIR"); dir && *dir) return dir;
    if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
        return fs::path(cache) / "iris" / "models";
    if (const char* home = std::getenv("HOME"); home && *home)
        return fs::path(home) / ".cache" / "iris" / "models";
    return fs::path("iris-models");
}

bool isValidModelName(std::string_view name) {
    if (name.empty() || name.size() > 200) return false;
    std::size_t start = 0;
    while (start <= name.size()) {
        std::size_t end = name.find('/', start);
        if (end == std::string_view::npos) end = name.size();
        const std::string_view segment = name.substr(start, end - start);
        if (segment.empty() || segment == "." || segment == "..") return false;
        for (char c : segment) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
            if (!ok) return false;
        }
        start = end + 1;
    }
    return true;
}

BlobLock::~BlobLock() {
    if (m_fd >= 0) ::close(m_fd);  // closing releases the flock
}

fs::path ModelStore::blobPath(const std::string& sha256) const {
    return m_root / "blobs" / ("sha256-" + sha256);
}

fs::path ModelStore::manifestPath(const std::string& name, const std::string& quant) const {
    return m_root / "manifests" / name / (quant + ".json");
}

Result<BlobLock> ModelStore::lockBlob(const std::string& sha256,
                                      const std::function<void()>& onWait) const {
    if (!isHexDigest(sha256)) return Status::invalidArgument("not a SHA-256: " + sha256);
    std::error_code error;
    fs::create_directories(m_root / "blobs", error);
    const fs::path path = blobPath(sha256).string() + ".lock";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status::ioError(path.string() + ": cannot open: " + std::strerror(errno));
    BlobLock lock(fd);
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return lock;
    if (errno != EWOULDBLOCK)
        return Status::ioError(path.string() + ": flock failed: " + std::strerror(errno));
    if (onWait) onWait();
    while (::flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR)
            return Status::ioError(path.string() + ": flock failed: " + std::strerror(errno));
    }
    return lock;
}

bool ModelStore::hasBlob(const std::string& sha256) const {
    std::error_code error;
    return fs::is_regular_file(blobPath(sha256), error);
}

std::string manifestToJson(const Manifest& manifest) {
    nlohmann::json json = {{"name", manifest.name},          {"quant", manifest.quant},
                           {"repo", manifest.repo},          {"model", fileJson(manifest.model)},
                           {"pulled_at", manifest.pulledAt}, {"last_used", manifest.lastUsed}};
    json["mmproj"] = manifest.mmproj ? fileJson(*manifest.mmproj) : nlohmann::json(nullptr);
    return json.dump(2) + "\n";
}

Result<Manifest> manifestFromJson(std::string_view text, const std::string& source) {
    const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
    if (json.is_discarded() || !json.is_object())
        return Status::corrupt(source + ": not a JSON object");
    Manifest manifest;
    for (const auto& [key, target] :
         {std::pair{"name", &manifest.name}, std::pair{"quant", &manifest.quant},
          std::pair{"repo", &manifest.repo}}) {
        const auto value = json.find(key);
        if (value == json.end() || !value->is_string())
            return Status::corrupt(source + ": field '" + key + "': expected a string");
        *target = value->get<std::string>();
    }
    if (!isValidModelName(manifest.name))
        return Status::corrupt(source + ": field 'name': not a model name");
    Result<StoredFile> model =
        fileFromJson(json.value("model", nlohmann::json()), source + ": model");
    IRIS_RETURN_IF_ERROR(model.status());
    manifest.model = *model;
    if (const auto mmproj = json.find("mmproj"); mmproj != json.end() && !mmproj->is_null()) {
        Result<StoredFile> file = fileFromJson(*mmproj, source + ": mmproj");
        IRIS_RETURN_IF_ERROR(file.status());
        manifest.mmproj = *file;
    }
    for (const auto& [key, target] :
         {std::pair{"pulled_at", &manifest.pulledAt}, std::pair{"last_used", &manifest.lastUsed}}) {
        const auto value = json.find(key);
        if (value != json.end() && value->is_number_integer()) *target = value->get<std::int64_t>();
    }
    return manifest;
}

Status ModelStore::writeManifest(const Manifest& manifest) const {
    if (!isValidModelName(manifest.name) || !isValidModelName(manifest.quant) ||
        manifest.quant.find('/') != std::string::npos) {
        return Status::invalidArgument("'" + manifest.name + ":" + manifest.quant +
                                       "' is not a valid model name");
    }
    const fs::path path = manifestPath(manifest.name, manifest.quant);
    std::error_code error;
    fs::create_directories(path.parent_path(), error);
    const fs::path temporary = path.string() + "." + std::to_string(::getpid()) + ".tmp";
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << manifestToJson(manifest);
        if (!out.flush()) return Status::ioError(temporary.string() + ": cannot write");
    }
    fs::rename(temporary, path, error);
    if (error) return Status::ioError(path.string() + ": cannot write: " + error.message());
    return Status::ok();
}

Result<std::vector<Manifest>> ModelStore::list() const {
    std::vector<Manifest> manifests;
    const fs::path top = m_root / "manifests";
    std::error_code error;
    if (!fs::is_directory(top, error)) return manifests;
    for (auto it = fs::recursive_directory_iterator(top, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
        if (!it->is_regular_file() || it->path().extension() != ".json") continue;
        std::ifstream in(it->path());
        std::stringstream text;
        text << in.rdbuf();
        Result<Manifest> manifest = manifestFromJson(text.str(), it->path().string());
        IRIS_RETURN_IF_ERROR(manifest.status());
        manifests.push_back(*manifest);
    }
    if (error) return Status::ioError(top.string() + ": " + error.message());
    std::sort(manifests.begin(), manifests.end(), [](const Manifest& a, const Manifest& b) {
        return std::tie(a.name, a.quant) < std::tie(b.name, b.quant);
    });
    return manifests;
}

Result<Manifest> ModelStore::find(const std::string& name, const std::string& quant) const {
    Result<std::vector<Manifest>> all = list();
    IRIS_RETURN_IF_ERROR(all.status());
    std::vector<Manifest> matches;
    for (const Manifest& m : *all)
        if (m.name == name) matches.push_back(m);
    std::string quants;
    for (const Manifest& m : matches)
        quants += (quants.empty() ? "" : ", ") + m.quant;
    if (matches.empty()) {
        return Status::notFound("no model '" + name + "' in " + m_root.string() +
                                " (pull it with: iris models pull " + name + ")");
    }
    if (!quant.empty()) {
        for (const Manifest& m : matches)
            if (equalsIgnoringAsciiCase(m.quant, quant)) return m;
        return Status::notFound("model '" + name + "' has no quantization " + quant +
                                " in the store (there: " + quants + ")");
    }
    if (matches.size() == 1) return matches.front();
    for (const Manifest& m : matches)
        if (m.quant == "Q4_K_M") return m;
    return *std::max_element(
        matches.begin(), matches.end(),
        [](const Manifest& a, const Manifest& b) { return a.lastUsed < b.lastUsed; });
}

Status ModelStore::touch(Manifest& manifest) const {
    manifest.lastUsed = nowUnix();
    return writeManifest(manifest);
}

Result<std::uint64_t> ModelStore::remove(const std::string& name, const std::string& quant) const {
    Result<std::vector<Manifest>> all = list();
    IRIS_RETURN_IF_ERROR(all.status());
    bool removed = false;
    std::set<std::string> referenced;
    std::error_code error;
    for (const Manifest& m : *all) {
        if (m.name == name && (quant.empty() || equalsIgnoringAsciiCase(m.quant, quant))) {
            fs::remove(manifestPath(m.name, m.quant), error);
            if (error)
                return Status::ioError(manifestPath(m.name, m.quant).string() + ": " +
                                       error.message());
            removed = true;
            continue;
        }
        referenced.insert(m.model.sha256);
        if (m.mmproj) referenced.insert(m.mmproj->sha256);
    }
    if (!removed) {
        return Status::notFound("no model '" + name + (quant.empty() ? "" : ":" + quant) + "' in " +
                                m_root.string());
    }
    // Empty folders of the name go too, up to manifests/.
    for (fs::path dir = manifestPath(name, "x").parent_path();
         dir != m_root / "manifests" && fs::is_empty(dir, error) && !error;
         dir = dir.parent_path()) {
        fs::remove(dir, error);
    }
    std::uint64_t freed = 0;
    for (const auto& entry : fs::directory_iterator(m_root / "blobs", error)) {
        const std::string file = entry.path().filename().string();
        if (!file.starts_with("sha256-") || file.size() != 7 + 64) continue;
        const std::string sha = file.substr(7);
        if (referenced.contains(sha)) continue;
        // A pull holding the lock is about to reference it: leave it alone. The lock file
        // stays: removing it could give two processes two different locks.
        const std::string lockPath = entry.path().string() + ".lock";
        const int fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) continue;
        const BlobLock lock(fd);
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) continue;
        freed += entry.file_size(error);
        fs::remove(entry.path(), error);
    }
    return freed;
}

}  // namespace iris::app::models
