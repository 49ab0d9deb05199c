#pragma once
// The disk tier of the KV cache: full KV blocks saved as files under their prefix-cache names
// (Scheduler: a SHA-256 chain over the parent block's name and the block's tokens, image hashes
// and rotary positions), so that a prompt whose blocks are on disk is read back instead of
// recomputed — after the block left the memory pool, and after Iris restarted (saved
// sessions). Sessions that share a prefix share its files: each block is stored once.
//
// Layout: <folder>/<format key>/<block name in hex>.kv, where the format key (16 hex digits)
// hashes everything a block must match to be usable: the model (modelIdentity()), the KV type,
// block size, layers, KV heads, head size and MiniMax-M3's indexer key layout. So two models,
// or one model at f16 and at f32 KV, never collide on a name. <format key>/model.txt names the
// model for `iris kv du`.
//
// A file: a 4096-byte header (magic, format version, the format fields, the block's name, the
// payload size, a CRC-32C of the payload and one of the header), then the payload: the block's
// K and V of each layer, then its indexer keys (KvCache::copyBlockOut). Every field is checked
// against what the engine expects before use; a file that does not match, or whose checksum
// fails, is counted as rejected, deleted, and its tokens are recomputed. The header is one page
// long so that the payload starts page-aligned: a block is read with one read() of the whole
// file into a page-aligned buffer.
//
// Why one file per block, not one large file: deduplication, eviction and crash safety come
// from the file system. A block is written to a temporary name and renamed into place, so a
// valid name never holds half a block (a crash at worst leaves a temporary file, removed at the
// next open once old); evicting a block is unlink(), with no free-space map to keep; several
// Iris processes can share the folder. The cost, one open() per block, is small next to the
// block: 192 KiB for a 0.5B model (24 layers, 2 KV heads of 64, f16, 16 tokens), 896 KiB for a
// 7B one. No fsync: after a power loss a file may be short or zeroed, which its checksum catches.
//
// Budget: files are evicted least recently used first (their modification time is the last use:
// set when written and when read back) once their total passes the budget. The index of files
// is built when the store opens and kept in memory; files other processes add meanwhile are
// found at the next open (`iris kv gc` scans afresh).
//
// A write that fails (a full disk: ENOSPC; any I/O error) is reported once as a warning; the
// block is not stored and generation goes on from memory.
//
// Not thread-safe: the scheduler thread owns it.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/sha256.h"
#include "base/status.h"
#include "inference/kv_cache.h"

namespace iris::inference {

class Engine;

// What a saved block must match to be used.
struct KvBlockFormat {
    Sha256Digest model{};  // modelIdentity()
    kernels::TensorType type = kernels::TensorType::F16;
    int blockSize = 0;
    int layers = 0;
    int kvHeads = 0;
    int headDim = 0;
    int indexerDim = 0;  // 0: no indexer keys
    int indexerFirstLayer = 0;
    std::int64_t payloadBytes = 0;  // KvCache::blockPayloadBytes()

    static KvBlockFormat of(const KvCache& cache, const Sha256Digest& model);
    bool operator==(const KvBlockFormat&) const = default;
};

// Names the computation that produced a block's K/V, cheaply (reading 256 KiB of weights):
// SHA-256 over the model file's size, its bytes before the data section (header, metadata,
// tensor table) and 64 evenly spaced 4 KiB samples of its weights (fine-tunes of one base model
// converted by one tool can share header and size); the same of the vision projector if one is
// loaded (image embeddings enter the KV); and whether attention is forced dense
// (EngineOptions::denseAttention, IRIS_DENSE_ATTENTION=1), which changes MiniMax-M3's hidden
// states. Weights changed only between the samples would go unnoticed.
Sha256Digest modelIdentity(const Engine& engine);

struct KvDiskStoreOptions {
    std::filesystem::path folder;  // empty: no disk tier
    std::int64_t budgetBytes = 0;  // 0: no disk tier
    // Writes `bytes` to the new file `path`. Empty: POSIX open/write/close. Tests inject failures.
    std::function<Status(const std::filesystem::path& path, std::span<const std::byte> bytes)>
        writeFile;
    // Receives warnings (a failed write, once; a folder that cannot be made). Empty: stderr.
    std::function<void(const std::string& message)> onWarning;
    // Read found blocks back whatever the measured rates say (tests, and the benchmark).
    bool alwaysRead = false;

    bool enabled() const { return !folder.empty() && budgetBytes > 0; }
};

// Counters since the store opened, and its size now.
struct KvDiskStats {
    std::int64_t hitBlocks = 0;      // blocks read back into the pool
    std::int64_t hitTokens = 0;      // their tokens (not recomputed)
    std::int64_t skippedBlocks = 0;  // found, but recomputing was expected to be faster
    std::int64_t writes = 0;         // blocks saved
    std::int64_t bytesRead = 0;
    std::int64_t bytesWritten = 0;
    std::int64_t rejected = 0;          // files that did not match or failed their checksum
    std::int64_t writeFailures = 0;     // blocks not saved (full disk, I/O error)
    std::int64_t evicted = 0;           // files removed for the budget
    double readBytesPerSecond = 0;      // measured on reads back (open, read, check, copy)
    double computeTokensPerSecond = 0;  // measured on the forward passes of prefill steps
    std::int64_t files = 0;             // in the folder now (all models)
    std::int64_t bytes = 0;
};

// One format key's files, for `iris kv du`.
struct KvDiskGroup {
    std::string key;    // the folder name
    std::string model;  // from its model.txt ("unknown" without one)
    std::int64_t blocks = 0;
    std::int64_t bytes = 0;
    std::filesystem::file_time_type oldest{};
    std::filesystem::file_time_type newest{};
};

class KvDiskStore {
public:
    // Opens (creating) options.folder and indexes the files in it; trims it to the budget.
    // `modelLabel` goes into model.txt. IoError naming the folder when it cannot be made.
    static Result<std::unique_ptr<KvDiskStore>> open(KvDiskStoreOptions options,
                                                     const KvBlockFormat& format,
                                                     const std::string& modelLabel);

    // Saves `block` of `cache` under `name` unless a file has it already.
    void save(const Sha256Digest& name, const KvCache& cache, std::int32_t block);
    // Reads back the leading run of `names` found on disk into new blocks appended to
    // `sequence` (whose length must be a whole number of blocks), names them in the cache, and
    // returns how many. Nothing when reading the run is expected to be slower than computing it
    // (readIsFaster); stops early at a rejected file or when the pool has no free block.
    std::size_t restore(KvCache& cache, SequenceId sequence, std::span<const Sha256Digest> names);
    // A forward pass of `tokens` tokens took `seconds`: feeds the recompute rate.
    void noteCompute(std::int64_t tokens, double seconds);

    // Where block `name` is (or would be) stored.
    std::filesystem::path pathOf(const Sha256Digest& name) const;
    const KvBlockFormat& format() const { return m_format; }
    KvDiskStats stats() const;

    // The files under `folder` by format key, for `iris kv du`. An absent folder is empty.
    static Result<std::vector<KvDiskGroup>> survey(const std::filesystem::path& folder);
    // Removes the least recently used files under `folder` until at most `maxBytes` remain
    // (0: all, with the folders of the format keys); the bytes removed.
    static Result<std::int64_t> trim(const std::filesystem::path& folder, std::int64_t maxBytes);

private:
    KvDiskStore(KvDiskStoreOptions options, const KvBlockFormat& format);
    struct FileEntry {
        std::int64_t bytes = 0;
        std::int64_t lastUse = 0;  // the file's time: ns since the file clock's epoch
    };
    void index();
    void addFile(const std::string& relative, std::int64_t bytes, std::int64_t lastUse);
    void removeFile(const std::string& relative);
    void touch(const std::string& relative);
    void trimToBudget();
    std::int64_t nextUse();
    std::string relativeOf(const Sha256Digest& name) const;
    bool readIsFaster(std::size_t blocks) const;
    // The payload of block `name` read into m_buffer, or false (absent; rejected and removed).
    bool readBlock(const Sha256Digest& name);
    void header(const Sha256Digest& name, std::uint32_t payloadCrc, std::byte* out) const;
    void warnOnce(bool& warned, const std::string& message);

    KvDiskStoreOptions m_options;
    KvBlockFormat m_format;
    std::string m_key;                                     // format key: this store's subfolder
    std::map<std::string, FileEntry> m_files;              // by path relative to the folder
    std::set<std::pair<std::int64_t, std::string>> m_lru;  // (lastUse, relative path)
    std::int64_t m_totalBytes = 0;
    // The file clock's epoch is in 2174: times now are negative.
    std::int64_t m_lastUse = std::numeric_limits<std::int64_t>::min();
    std::uint64_t m_tempCounter = 0;
    std::byte* m_buffer = nullptr;  // page-aligned, header plus payload
    std::unique_ptr<std::byte, void (*)(void*)> m_bufferOwner{nullptr, nullptr};
    KvDiskStats m_stats;
    double m_readSeconds = 0;
    double m_computeSeconds = 0;
    std::int64_t m_computeTokens = 0;
    bool m_warnedWrite = false;
    bool m_warnedRemove = false;
};

// The store for `engine`'s KV cache and model under `options` (the Scheduler's); null when the
// options leave the tier off, or, after a warning through options.onWarning, when the folder
// cannot be made: a cache that cannot be kept must not stop the engine.
std::unique_ptr<KvDiskStore> openKvDiskStore(Engine& engine, const KvDiskStoreOptions& options);

}  // namespace iris::inference
