#pragma once
// The local model cache: every file once, named by its content hash, and a small JSON manifest
// per pulled model that gives it a human-readable name.
//
//   <root>/blobs/sha256-<hex>                 a complete, verified file
//   <root>/blobs/sha256-<hex>.part[.ranges]   a download in progress (model_download.h)
//   <root>/blobs/sha256-<hex>.lock            flock()ed by the process fetching that blob
//   <root>/manifests/<name>/<QUANT>.json      name: a catalogue name or user/repo
//
// Two processes pulling one file at once: the second waits on the blob's lock and then finds the
// file complete. Everything here works offline.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace iris::app::models {

struct StoredFile {
    std::string file;    // the name in its repository
    std::string sha256;  // 64 lowercase hex digits: the blob's name
    std::uint64_t size = 0;
};

struct Manifest {
    std::string name;   // "ui-tars-1.5-7b" or "user/repo"
    std::string quant;  // "Q4_K_M", or the file's stem when it names no quantization
    std::string repo;   // the hub repository the files came from
    StoredFile model;
    std::optional<StoredFile> mmproj;
    std::int64_t pulledAt = 0;  // Unix seconds
    std::int64_t lastUsed = 0;  // Unix seconds, 0: never
};

// $IRIS_MODELS_DIR, else $XDG_CACHE_HOME/iris/models, else ~/.cache/iris/models.
std::filesystem::path defaultModelsDirectory();

// Whether `name` can name a model in the store: segments of [A-Za-z0-9._-] separated by '/',
// none of them "." or "..".
bool isValidModelName(std::string_view name);

// An exclusive flock() on a blob's lock file, released when destroyed. Move-only.
class BlobLock {
public:
    BlobLock(BlobLock&& other) noexcept : m_fd(other.m_fd) { other.m_fd = -1; }
    BlobLock& operator=(BlobLock&&) = delete;
    BlobLock(const BlobLock&) = delete;
    ~BlobLock();

private:
    friend class ModelStore;
    explicit BlobLock(int fd) : m_fd(fd) {}
    int m_fd;
};

class ModelStore {
public:
    explicit ModelStore(std::filesystem::path root) : m_root(std::move(root)) {}

    const std::filesystem::path& root() const { return m_root; }
    std::filesystem::path blobPath(const std::string& sha256) const;
    std::filesystem::path manifestPath(const std::string& name, const std::string& quant) const;

    // Takes the blob's lock, waiting for another process (or thread) that holds it; `onWait` is
    // called once before waiting.
    Result<BlobLock> lockBlob(const std::string& sha256,
                              const std::function<void()>& onWait = {}) const;
    bool hasBlob(const std::string& sha256) const;

    // Writes the manifest atomically (a temporary file renamed over the old one).
    Status writeManifest(const Manifest& manifest) const;
    // Every manifest, sorted by name and quantization. Unreadable manifests are errors naming
    // the file.
    Result<std::vector<Manifest>> list() const;
    // The model called `name`: with `quant` that one; without, the only one, else Q4_K_M, else
    // the one used last. NotFound names the name (and the quantizations there are).
    Result<Manifest> find(const std::string& name, const std::string& quant = {}) const;
    // Records that a model is used now (`lastUsed`).
    Status touch(Manifest& manifest) const;
    // Removes the manifests of `name` (one quantization, or all) and then every blob no
    // manifest references any more. Returns the bytes freed.
    Result<std::uint64_t> remove(const std::string& name, const std::string& quant = {}) const;

private:
    std::filesystem::path m_root;
};

// A manifest as JSON text, and back (errors name `source` and the field).
std::string manifestToJson(const Manifest& manifest);
Result<Manifest> manifestFromJson(std::string_view text, const std::string& source);

}  // namespace iris::app::models
