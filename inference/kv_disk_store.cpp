#include "inference/kv_disk_store.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <system_error>
#include <tuple>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/crc32c.h"
#include "inference/engine.h"

namespace iris::inference {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kHeaderBytes = 4096;  // one page: the payload starts aligned
constexpr std::size_t kFieldBytes = 128;    // the used part of the header
constexpr char kMagic[8] = {'I', 'R', 'I', 'S', 'K', 'V', 'B', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr const char* kSuffix = ".kv";
constexpr const char* kTempMarker = ".tmp.";
constexpr std::size_t kNameHexDigits = 64;
constexpr std::size_t kKeyHexDigits = 16;
// Temporary files older than this are leftovers of a crash, not another process's write.
constexpr auto kStaleTemporary = std::chrono::minutes(10);

void put32(std::byte* at, std::uint32_t v) {
    std::memcpy(at, &v, 4);
}  // little-endian hosts
void put64(std::byte* at, std::uint64_t v) {
    std::memcpy(at, &v, 8);
}

// Offsets of the header fields.
enum : std::size_t {
    kAtMagic = 0,
    kAtVersion = 8,
    kAtHeaderSize = 12,
    kAtModel = 16,
    kAtName = 48,
    kAtType = 80,
    kAtGeometry = 84,  // 6 x i32: block size, layers, KV heads, head size, indexer dim, first
    kAtPayloadSize = 112,
    kAtPayloadCrc = 120,
    kAtHeaderCrc = 124,
};

// The header with everything but the block's name and checksums: what the format key hashes.
void formatFields(const KvBlockFormat& f, std::byte* out) {
    std::memset(out, 0, kFieldBytes);
    std::memcpy(out + kAtMagic, kMagic, sizeof kMagic);
    put32(out + kAtVersion, kVersion);
    put32(out + kAtHeaderSize, std::uint32_t(kHeaderBytes));
    std::memcpy(out + kAtModel, f.model.data(), f.model.size());
    put32(out + kAtType, std::uint32_t(f.type));
    const int geometry[6] = {f.blockSize, f.layers,     f.kvHeads,
                             f.headDim,   f.indexerDim, f.indexerFirstLayer};
    for (int i = 0; i < 6; ++i)
        put32(out + kAtGeometry + 4 * std::size_t(i), std::uint32_t(geometry[i]));
    put64(out + kAtPayloadSize, std::uint64_t(f.payloadBytes));
}

bool isHex(std::string_view text) {
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// "<64 hex>.kv"
bool isBlockFile(const fs::path& path) {
    const std::string name = path.filename().string();
    return name.size() == kNameHexDigits + 3 && name.ends_with(kSuffix) &&
           isHex(std::string_view(name).substr(0, kNameHexDigits));
}

bool isFormatFolder(const fs::directory_entry& entry) {
    std::error_code error;
    const std::string name = entry.path().filename().string();
    return entry.is_directory(error) && name.size() == kKeyHexDigits && isHex(name);
}

std::int64_t nanoseconds(fs::file_time_type time) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

std::string errnoText(int error) {
    return std::strerror(error);
}

Status writeWholeFile(const fs::path& path, std::span<const std::byte> bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return Status::ioError(path.string() + ": " + errnoText(errno));
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int error = n < 0 ? errno : EIO;
            ::close(fd);
            return Status::ioError(path.string() + ": " + errnoText(error));
        }
        done += std::size_t(n);
    }
    if (::close(fd) != 0) return Status::ioError(path.string() + ": " + errnoText(errno));
    return {};
}

// Reads exactly `bytes.size()` bytes of the file `path` (which must be that long).
bool readWholeFile(const fs::path& path, std::span<std::byte> bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat info {};
    bool ok = ::fstat(fd, &info) == 0 && std::uint64_t(info.st_size) == bytes.size();
    for (std::size_t done = 0; ok && done < bytes.size();) {
        const ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done, off_t(done));
        if (n < 0 && errno == EINTR) continue;
        ok = n > 0;
        done += ok ? std::size_t(n) : 0;
    }
    ::close(fd);
    return ok;
}

}  // namespace

KvBlockFormat KvBlockFormat::of(const KvCache& cache, const Sha256Digest& model) {
    const KvCacheOptions& o = cache.options();
    KvBlockFormat f;
    f.model = model;
    f.type = o.type;
    f.blockSize = o.blockSize;
    f.layers = o.layers;
    f.kvHeads = o.kvHeads;
    f.headDim = o.headDim;
    f.indexerDim = o.indexerDim;
    f.indexerFirstLayer = o.indexerDim > 0 ? o.indexerFirstLayer : 0;
    f.payloadBytes = cache.blockPayloadBytes();
    return f;
}

namespace {

// The bytes before the data section, and kIdentitySamples evenly spaced pages of the weights:
// fine-tunes of one base model, converted by one tool, can have equal headers and sizes.
void hashModelFile(const GgufFile& file, Sha256& hash) {
    constexpr std::size_t kIdentitySamples = 64, kSampleBytes = 4096;
    hash.update("size " + std::to_string(file.fileSize()) + "\n");
    const std::span<const std::byte> bytes = file.mappedBytes();
    auto add = [&](std::span<const std::byte> part) {
        hash.update(std::span(reinterpret_cast<const std::uint8_t*>(part.data()), part.size()));
    };
    const std::size_t data = std::min<std::size_t>(file.dataOffset(), bytes.size());
    add(bytes.first(data));
    const std::size_t weights = bytes.size() - data;
    for (std::size_t i = 0; i < kIdentitySamples && weights > 0; ++i) {
        const std::size_t at = data + weights / kIdentitySamples * i;
        add(bytes.subspan(at, std::min(kSampleBytes, bytes.size() - at)));
    }
}

}  // namespace

Sha256Digest modelIdentity(const Engine& engine) {
    Sha256 hash;
    auto addFile = [&](const GgufFile& file) { hashModelFile(file, hash); };
    addFile(engine.file());
    if (engine.projectorFile() != nullptr) {
        hash.update("projector\n");
        addFile(*engine.projectorFile());
    }
    const char* dense = std::getenv("IRIS_DENSE_ATTENTION");
    const bool forcedDense =
        engine.options().denseAttention || (dense != nullptr && std::string_view(dense) == "1");
    hash.update(forcedDense ? "dense\n" : "as built\n");
    return hash.finish();
}

std::unique_ptr<KvDiskStore> openKvDiskStore(Engine& engine, const KvDiskStoreOptions& options) {
    if (!options.enabled()) return nullptr;
    const KvBlockFormat format = KvBlockFormat::of(engine.cache(), modelIdentity(engine));
    const fs::path model(engine.file().name());
    Result<std::unique_ptr<KvDiskStore>> store = KvDiskStore::open(
        options, format,
        model.filename().string() + " (" + std::to_string(engine.file().fileSize()) + " bytes)");
    if (store) return std::move(*store);
    const std::string message = "the KV disk tier is off: " + store.status().message();
    if (options.onWarning)
        options.onWarning(message);
    else
        std::cerr << "warning: " << message << "\n";
    return nullptr;
}

KvDiskStore::KvDiskStore(KvDiskStoreOptions options, const KvBlockFormat& format)
    : m_options(std::move(options)), m_format(format) {
    std::byte fields[kFieldBytes];
    formatFields(format, fields);
    m_key =
        toHex(Sha256::hash(std::span(reinterpret_cast<const std::uint8_t*>(fields), kFieldBytes)))
            .substr(0, kKeyHexDigits);
    if (!m_options.writeFile) m_options.writeFile = writeWholeFile;
    if (!m_options.onWarning)
        m_options.onWarning = [](const std::string& m) { std::cerr << "warning: " << m << "\n"; };
}

Result<std::unique_ptr<KvDiskStore>> KvDiskStore::open(KvDiskStoreOptions options,
                                                       const KvBlockFormat& format,
                                                       const std::string& modelLabel) {
    if (!options.enabled()) return Status::invalidArgument("KV disk store: no folder or no budget");
    if (format.payloadBytes <= 0) return Status::invalidArgument("KV disk store: empty blocks");
    std::unique_ptr<KvDiskStore> store(new KvDiskStore(std::move(options), format));
    const fs::path own = store->m_options.folder / store->m_key;
    std::error_code error;
    fs::create_directories(own, error);
    if (error) return Status::ioError(own.string() + ": " + error.message());
    const fs::path about = own / "model.txt";
    if (!fs::exists(about, error)) std::ofstream(about) << modelLabel << "\n";
    const std::size_t buffer = kHeaderBytes + std::size_t(format.payloadBytes);
    const std::size_t rounded = (buffer + kHeaderBytes - 1) / kHeaderBytes * kHeaderBytes;
    store->m_buffer = static_cast<std::byte*>(std::aligned_alloc(kHeaderBytes, rounded));
    if (store->m_buffer == nullptr) return Status::outOfRange("KV disk store: no memory");
    store->m_bufferOwner = {store->m_buffer, std::free};
    store->index();
    store->trimToBudget();
    return store;
}

// Every block file under the folder, of every format (they share the budget); leftover
// temporary files are removed.
void KvDiskStore::index() {
    std::error_code error;
    const auto staleBefore = fs::file_time_type::clock::now() - kStaleTemporary;
    for (const fs::directory_entry& group : fs::directory_iterator(m_options.folder, error)) {
        if (!isFormatFolder(group)) continue;
        std::error_code inner;
        for (const fs::directory_entry& file : fs::directory_iterator(group.path(), inner)) {
            std::error_code e;
            const fs::file_time_type time = file.last_write_time(e);
            if (e) continue;
            if (file.path().filename().string().find(kTempMarker) != std::string::npos) {
                if (time < staleBefore) fs::remove(file.path(), e);
                continue;
            }
            if (!isBlockFile(file.path())) continue;
            const std::uintmax_t bytes = file.file_size(e);
            if (e) continue;
            addFile(group.path().filename().string() + "/" + file.path().filename().string(),
                    std::int64_t(bytes), nanoseconds(time));
            m_lastUse = std::max(m_lastUse, nanoseconds(time));
        }
    }
}

void KvDiskStore::addFile(const std::string& relative, std::int64_t bytes, std::int64_t lastUse) {
    removeFile(relative);
    m_files[relative] = {bytes, lastUse};
    m_lru.emplace(lastUse, relative);
    m_totalBytes += bytes;
}

// Forgets `relative` (the caller deletes the file, if it still exists).
void KvDiskStore::removeFile(const std::string& relative) {
    const auto found = m_files.find(relative);
    if (found == m_files.end()) return;
    m_lru.erase({found->second.lastUse, relative});
    m_totalBytes -= found->second.bytes;
    m_files.erase(found);
}

// A strictly increasing time, so that the LRU order within a process is exact.
std::int64_t KvDiskStore::nextUse() {
    const std::int64_t now = nanoseconds(fs::file_time_type::clock::now());
    m_lastUse = std::max(now, m_lastUse + 1);
    return m_lastUse;
}

void KvDiskStore::touch(const std::string& relative) {
    const auto found = m_files.find(relative);
    if (found == m_files.end()) return;
    const std::int64_t use = nextUse();
    addFile(relative, found->second.bytes, use);
    std::error_code error;  // another process may have removed it: nothing to keep then
    fs::last_write_time(m_options.folder / relative,
                        fs::file_time_type(std::chrono::nanoseconds(use)), error);
}

void KvDiskStore::trimToBudget() {
    while (m_totalBytes > m_options.budgetBytes && !m_lru.empty()) {
        const std::string oldest = m_lru.begin()->second;
        removeFile(oldest);
        std::error_code error;
        fs::remove(m_options.folder / oldest, error);
        if (error)
            warnOnce(m_warnedRemove, (m_options.folder / oldest).string() + ": " + error.message() +
                                         " (KV disk store budget)");
        ++m_stats.evicted;
    }
}

std::string KvDiskStore::relativeOf(const Sha256Digest& name) const {
    return m_key + "/" + toHex(name) + kSuffix;
}

fs::path KvDiskStore::pathOf(const Sha256Digest& name) const {
    return m_options.folder / relativeOf(name);
}

void KvDiskStore::header(const Sha256Digest& name, std::uint32_t payloadCrc, std::byte* out) const {
    std::memset(out, 0, kHeaderBytes);
    formatFields(m_format, out);
    std::memcpy(out + kAtName, name.data(), name.size());
    put32(out + kAtPayloadCrc, payloadCrc);
    put32(out + kAtHeaderCrc, crc32c(std::span<const std::byte>(out, kAtHeaderCrc)));
}

void KvDiskStore::warnOnce(bool& warned, const std::string& message) {
    if (warned) return;
    warned = true;
    m_options.onWarning(message);
}

void KvDiskStore::save(const Sha256Digest& name, const KvCache& cache, std::int32_t block) {
    const std::string relative = relativeOf(name);
    if (m_files.contains(relative)) return;
    const std::size_t payload = std::size_t(m_format.payloadBytes);
    const std::span<std::byte> body(m_buffer + kHeaderBytes, payload);
    // With KV tiers the block's K/V may be in host memory or on disk: bring it in first.
    if (KvResidency* tiers = cache.residency(); tiers != nullptr && !tiers->requireWhole(block).isOk())
        return;
    cache.copyBlockOut(block, body);
    header(name, crc32c(body), m_buffer);
    const fs::path final = m_options.folder / relative;
    fs::path temporary = final;
    temporary += kTempMarker + std::to_string(::getpid()) + "." + std::to_string(++m_tempCounter);
    Status written = m_options.writeFile(temporary, {m_buffer, kHeaderBytes + payload});
    std::error_code error;
    // The file's time is its last use, exactly: the kernel's own stamp is coarser (a few ms)
    // and would put blocks written in one burst out of order.
    const std::int64_t use = nextUse();
    if (written.isOk())
        fs::last_write_time(temporary, fs::file_time_type(std::chrono::nanoseconds(use)), error);
    if (written.isOk()) {
        fs::rename(temporary, final, error);
        if (error) written = Status::ioError(final.string() + ": " + error.message());
    }
    if (!written.isOk()) {
        fs::remove(temporary, error);
        ++m_stats.writeFailures;
        warnOnce(m_warnedWrite, "KV blocks are not saved to disk (" + written.message() +
                                    "); generation goes on from memory");
        return;
    }
    addFile(relative, std::int64_t(kHeaderBytes + payload), use);
    ++m_stats.writes;
    m_stats.bytesWritten += std::int64_t(kHeaderBytes + payload);
    trimToBudget();
}

bool KvDiskStore::readBlock(const Sha256Digest& name) {
    const std::string relative = relativeOf(name);
    const std::size_t payload = std::size_t(m_format.payloadBytes);
    const fs::path path = m_options.folder / relative;
    std::error_code error;
    if (!fs::exists(path, error)) {  // removed by another process or by hand
        removeFile(relative);
        return false;
    }
    bool good = readWholeFile(path, {m_buffer, kHeaderBytes + payload});
    if (good) {
        // The expected header follows from the format, the name and the payload's checksum:
        // one comparison checks every field, and the payload.
        alignas(8) std::byte expected[kHeaderBytes];
        header(name, crc32c(std::span<const std::byte>(m_buffer + kHeaderBytes, payload)),
               expected);
        good = std::memcmp(expected, m_buffer, kHeaderBytes) == 0;
    }
    if (!good) {
        ++m_stats.rejected;
        removeFile(relative);
        fs::remove(path, error);
    }
    return good;
}

bool KvDiskStore::readIsFaster(std::size_t blocks) const {
    if (m_options.alwaysRead) return true;
    // Until both rates are measured, read: the first read measures its rate.
    if (m_readSeconds <= 0 || m_stats.bytesRead == 0 || m_computeSeconds <= 0) return true;
    const double readRate = double(m_stats.bytesRead) / m_readSeconds;
    const double computeRate = double(m_computeTokens) / m_computeSeconds;
    const double bytes = double(blocks) * double(kHeaderBytes + std::size_t(m_format.payloadBytes));
    const double tokens = double(blocks) * m_format.blockSize;
    return bytes / readRate < tokens / computeRate;
}

std::size_t KvDiskStore::restore(KvCache& cache, SequenceId sequence,
                                 std::span<const Sha256Digest> names) {
    std::size_t run = 0;
    while (run < names.size() && m_files.contains(relativeOf(names[run])))
        ++run;
    if (run == 0) return 0;
    if (!readIsFaster(run)) {
        m_stats.skippedBlocks += std::int64_t(run);
        return 0;
    }
    const std::int64_t blockSize = m_format.blockSize;
    const std::size_t fileBytes = kHeaderBytes + std::size_t(m_format.payloadBytes);
    std::size_t done = 0;
    for (; done < run && cache.freeBlocks() > 0; ++done) {
        const auto start = Clock::now();
        if (!readBlock(names[done])) break;  // the rest is recomputed
        if (!cache.extend(sequence, cache.length(sequence) + blockSize).isOk()) break;
        const std::span<const std::int32_t> table = cache.blockTable(sequence);
        cache.copyBlockIn(table.back(), {m_buffer + kHeaderBytes, fileBytes - kHeaderBytes});
        cache.nameBlock(sequence, table.size() - 1, names[done]);
        m_readSeconds += secondsSince(start);
        m_stats.bytesRead += std::int64_t(fileBytes);
        ++m_stats.hitBlocks;
        m_stats.hitTokens += blockSize;
        touch(relativeOf(names[done]));
    }
    return done;
}

void KvDiskStore::noteCompute(std::int64_t tokens, double seconds) {
    // Decode steps (a token per sequence) say little about the prefill rate.
    if (tokens < m_format.blockSize || seconds <= 0) return;
    m_computeTokens += tokens;
    m_computeSeconds += seconds;
}

KvDiskStats KvDiskStore::stats() const {
    KvDiskStats s = m_stats;
    if (m_readSeconds > 0) s.readBytesPerSecond = double(m_stats.bytesRead) / m_readSeconds;
    if (m_computeSeconds > 0) s.computeTokensPerSecond = double(m_computeTokens) / m_computeSeconds;
    s.files = std::int64_t(m_files.size());
    s.bytes = m_totalBytes;
    return s;
}

// ---- iris kv du / gc ----------------------------------------------------------------------------

Result<std::vector<KvDiskGroup>> KvDiskStore::survey(const fs::path& folder) {
    std::vector<KvDiskGroup> groups;
    std::error_code error;
    if (!fs::exists(folder, error)) return groups;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
        if (!isFormatFolder(entry)) continue;
        KvDiskGroup group;
        group.key = entry.path().filename().string();
        std::ifstream about(entry.path() / "model.txt");
        if (!std::getline(about, group.model) || group.model.empty()) group.model = "unknown";
        std::error_code inner;
        for (const fs::directory_entry& file : fs::directory_iterator(entry.path(), inner)) {
            std::error_code e;
            if (!isBlockFile(file.path())) continue;
            const std::uintmax_t bytes = file.file_size(e);
            const fs::file_time_type time = file.last_write_time(e);
            if (e) continue;
            group.oldest = group.blocks == 0 ? time : std::min(group.oldest, time);
            group.newest = group.blocks == 0 ? time : std::max(group.newest, time);
            ++group.blocks;
            group.bytes += std::int64_t(bytes);
        }
        groups.push_back(std::move(group));
    }
    if (error) return Status::ioError(folder.string() + ": " + error.message());
    std::sort(groups.begin(), groups.end(),
              [](const KvDiskGroup& a, const KvDiskGroup& b) { return a.key < b.key; });
    return groups;
}

Result<std::int64_t> KvDiskStore::trim(const fs::path& folder, std::int64_t maxBytes) {
    std::vector<std::tuple<fs::file_time_type, fs::path, std::int64_t>> files;
    std::vector<fs::path> groups;
    std::int64_t total = 0;
    std::error_code error;
    if (!fs::exists(folder, error)) return std::int64_t(0);
    for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
        if (!isFormatFolder(entry)) continue;
        groups.push_back(entry.path());
        std::error_code inner;
        for (const fs::directory_entry& file : fs::directory_iterator(entry.path(), inner)) {
            std::error_code e;
            if (!isBlockFile(file.path())) continue;
            const auto bytes = std::int64_t(file.file_size(e));
            const fs::file_time_type time = file.last_write_time(e);
            if (e) continue;
            files.emplace_back(time, file.path(), bytes);
            total += bytes;
        }
    }
    if (error) return Status::ioError(folder.string() + ": " + error.message());
    std::sort(files.begin(), files.end());
    std::int64_t removed = 0;
    for (const auto& [time, path, bytes] : files) {
        if (total - removed <= maxBytes) break;
        if (!fs::remove(path, error) && error)
            return Status::ioError(path.string() + ": " + error.message());
        removed += bytes;
    }
    if (maxBytes == 0) {
        for (const fs::path& group : groups)
            fs::remove_all(group, error);
        if (error) return Status::ioError(folder.string() + ": " + error.message());
    }
    return removed;
}

}  // namespace iris::inference
