#include "inference/kv_tiers.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>

namespace iris::inference {

// ---- the CPU compute tier: an arena of slots ----

namespace {

class SlotComputeTier final : public ComputeTier {
public:
    SlotComputeTier(const KvCacheOptions& o, std::int64_t keepSlots, ReservedMemory keys,
                    ReservedMemory values, std::int64_t partBytes)
        : m_firstLayer(o.indexerFirstLayer),
          m_blocks(o.blocks),
          m_partBytes(partBytes),
          m_keep(keepSlots),
          m_keys(std::move(keys)),
          m_values(std::move(values)),
          m_slotOf(std::size_t((o.layers - o.indexerFirstLayer) * o.blocks), kAbsentSlot) {
        // What every block that is not resident reads as.
        std::memset(m_keys.data(), 0xFF, std::size_t(m_partBytes));
        std::memset(m_values.data(), 0xFF, std::size_t(m_partBytes));
    }

    std::int64_t partBytes() const override { return m_partBytes; }
    KvPlacement placement(int layer) override {
        return {m_keys.data(), m_values.data(), m_slotOf.data() + unit(layer, 0)};
    }
    std::pair<std::byte*, std::byte*> parts(int layer, std::int32_t block) override {
        const std::int64_t slot = m_slotOf[unit(layer, block)];
        assert(slot != kAbsentSlot && "a resident unit");
        return {m_keys.data() + slot * m_partBytes, m_values.data() + slot * m_partBytes};
    }
    void copyOut(int layer, std::int32_t block, std::byte* to) override {
        const auto [k, v] = parts(layer, block);
        std::memcpy(to, k, std::size_t(m_partBytes));
        std::memcpy(to + m_partBytes, v, std::size_t(m_partBytes));
    }
    void copyIn(int layer, std::int32_t block, const std::byte* from) override {
        const auto [k, v] = parts(layer, block);
        std::memcpy(k, from, std::size_t(m_partBytes));
        std::memcpy(v, from + m_partBytes, std::size_t(m_partBytes));
    }
    void acquire(int layer, std::int32_t block) override {
        std::int32_t& slot = m_slotOf[unit(layer, block)];
        assert(slot == kAbsentSlot);
        if (m_free.empty()) {
            slot = m_fresh++;
        } else {
            slot = m_free.top();
            m_free.pop();
        }
        if (slot > m_keep) ++m_inUseAboveKeep;
    }
    void release(int layer, std::int32_t block, bool poison) override {
        std::int32_t& slot = m_slotOf[unit(layer, block)];
        assert(slot != kAbsentSlot);
        const auto [k, v] = parts(layer, block);
        for (std::byte* part : {k, v}) {
            if (poison) {
                std::memset(part, 0xFF, std::size_t(m_partBytes));
            } else if (slot > m_keep) {
                giveBack(part);
            }
        }
        if (slot > m_keep) --m_inUseAboveKeep;
        m_free.push(slot);
        slot = kAbsentSlot;
    }
    std::int64_t bytesInUse() const override {
        const std::int64_t kept = std::min<std::int64_t>(m_fresh - 1, m_keep);
        return (1 + kept + m_inUseAboveKeep) * 2 * m_partBytes;
    }

private:
    std::size_t unit(int layer, std::int32_t block) const {
        return std::size_t((layer - m_firstLayer) * m_blocks + block);
    }
    // The whole OS pages inside the part go back to the kernel (a part smaller than a page
    // keeps its memory).
    void giveBack(std::byte* part) const {
        static const std::uintptr_t page = std::uintptr_t(::sysconf(_SC_PAGESIZE));
        const std::uintptr_t begin = (std::uintptr_t(part) + page - 1) / page * page;
        const std::uintptr_t end = (std::uintptr_t(part) + std::uintptr_t(m_partBytes)) / page * page;
        if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    }

    int m_firstLayer;
    std::int64_t m_blocks;
    std::int64_t m_partBytes;
    std::int64_t m_keep;  // slots 1..m_keep keep their memory when freed
    ReservedMemory m_keys, m_values;  // slot s: K (V) part at s * m_partBytes
    std::vector<std::int32_t> m_slotOf;  // per unit
    // Freed slots, lowest first, so that the slots in use stay at the bottom of the arena.
    std::priority_queue<std::int32_t, std::vector<std::int32_t>, std::greater<>> m_free;
    std::int32_t m_fresh = 1;  // slots from here up were never used
    std::int64_t m_inUseAboveKeep = 0;
};

}  // namespace

Result<std::unique_ptr<ComputeTier>> slotComputeTier(const KvCacheOptions& o,
                                                     std::int64_t budgetBytes) {
    const std::int64_t partBytes = std::int64_t(o.blockSize) * o.kvHeads * o.headDim *
                                   (o.type == kernels::TensorType::F16 ? 2 : 4);
    const std::int64_t keepSlots = budgetBytes / (2 * partBytes);
    const std::int64_t slotCount = 1 + (o.layers - o.indexerFirstLayer) * o.blocks;
    Result<ReservedMemory> keys = ReservedMemory::reserve(slotCount * partBytes);
    if (!keys) return Status::outOfRange("KV tiers: compute tier: " + keys.status().message());
    Result<ReservedMemory> values = ReservedMemory::reserve(slotCount * partBytes);
    if (!values) return Status::outOfRange("KV tiers: compute tier: " + values.status().message());
    return std::unique_ptr<ComputeTier>(
        new SlotComputeTier(o, keepSlots, std::move(*keys), std::move(*values), partBytes));
}

// ---- the disk tier: fixed slots in one file, 4 KiB aligned ----

class KvSpillFile {
public:
    static Result<std::unique_ptr<KvSpillFile>> open(const KvTierOptions& o, std::int64_t unit) {
        std::string path = o.diskFile;
        int fd = -1;
        if (!path.empty()) {
            fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        } else {
            std::error_code ignored;  // a folder that cannot be made fails at mkostemp, named
            std::filesystem::create_directories(o.diskFolder, ignored);
            path = o.diskFolder + "/iris-kv-spill-XXXXXX";
            fd = ::mkostemp(path.data(), O_CLOEXEC);
            if (fd >= 0) ::unlink(path.c_str());  // nothing stays behind, even after a crash
        }
        if (fd < 0) {
            return Status::ioError("KV disk tier: cannot create a spill file at " + path + ": " +
                                   std::strerror(errno));
        }
        constexpr std::int64_t kAlign = 4096;
        const std::int64_t slotBytes = (unit + kAlign - 1) / kAlign * kAlign;
        return std::unique_ptr<KvSpillFile>(
            new KvSpillFile(fd, path, slotBytes, o.diskBytes / slotBytes));
    }
    ~KvSpillFile() { ::close(m_fd); }

    const std::string& path() const { return m_path; }
    std::int64_t usedBytes() const { return (m_next - std::int64_t(m_free.size())) * m_slotBytes; }

    // A free slot, or -1 when the budget is used up.
    std::int32_t take() {
        if (!m_free.empty()) {
            const std::int32_t slot = m_free.back();
            m_free.pop_back();
            return slot;
        }
        return m_next < m_slots ? std::int32_t(m_next++) : -1;
    }
    void give(std::int32_t slot) { m_free.push_back(slot); }

    Status write(std::int32_t slot, const std::byte* from, std::int64_t bytes) {
        const ssize_t n = ::pwrite(m_fd, from, std::size_t(bytes), slot * m_slotBytes);
        if (n == ssize_t(bytes)) return {};
        return Status::ioError("KV disk tier: writing " + m_path + ": " +
                               (n < 0 ? std::strerror(errno) : "short write"));
    }
    // Reads a unit straight into its two parts in the compute tier.
    Status read(std::int32_t slot, std::byte* k, std::byte* v, std::int64_t part) {
        iovec parts[2] = {{k, std::size_t(part)}, {v, std::size_t(part)}};
        const ssize_t n = ::preadv(m_fd, parts, 2, slot * m_slotBytes);
        if (n == ssize_t(2 * part)) return {};
        return Status::ioError("KV disk tier: reading " + m_path + ": " +
                               (n < 0 ? std::strerror(errno) : "short read"));
    }

private:
    KvSpillFile(int fd, std::string path, std::int64_t slotBytes, std::int64_t slots)
        : m_fd(fd), m_path(std::move(path)), m_slotBytes(slotBytes), m_slots(slots) {}

    int m_fd;
    std::string m_path;
    std::int64_t m_slotBytes;
    std::int64_t m_slots;
    std::int64_t m_next = 0;
    std::vector<std::int32_t> m_free;
};

// ---- the transfer thread: one batch of copies at a time ----

// Copies the items of a batch on its own thread, claiming them one at a time; finish() claims
// what is left on the calling thread, then waits for the items under way, so that waiting for
// a batch never takes longer than copying it there would.
class KvTransferThread {
public:
    using Copy = std::function<Status(std::size_t item)>;

    KvTransferThread() : m_thread([this] { run(); }) {}
    ~KvTransferThread() {
        {
            std::lock_guard lock(m_mutex);
            m_stopping = true;
        }
        m_wake.notify_one();
        m_thread.join();
    }

    bool active() const { return m_active; }

    // Starts copying items [0, count) with `copy`; no batch may be active.
    void start(std::size_t count, Copy copy) {
        assert(!m_active && count > 0);
        {
            std::lock_guard lock(m_mutex);
            m_copy = std::move(copy);
            m_count = count;
            m_next.store(0, std::memory_order_relaxed);
            m_done = 0;
            m_byThread = 0;
            m_failure = Status::ok();
            m_active = true;
            ++m_batch;
        }
        m_wake.notify_one();
    }

    // Ends the active batch: the first failure, and in `behind` how many items the thread had
    // copied before this call.
    Status finish(std::int64_t& behind) {
        assert(m_active);
        {
            std::lock_guard lock(m_mutex);
            behind = m_byThread;
        }
        copyItems(false);
        std::unique_lock lock(m_mutex);
        m_finished.wait(lock, [this] { return m_done == m_count && !m_threadInBatch; });
        m_active = false;
        m_copy = nullptr;
        return std::move(m_failure);
    }

private:
    void run() {
        std::uint64_t seen = 0;
        std::unique_lock lock(m_mutex);
        for (;;) {
            m_wake.wait(lock, [&] { return m_stopping || (m_active && m_batch != seen); });
            if (m_stopping) return;
            seen = m_batch;
            m_threadInBatch = true;  // finish() waits for this: the batch's fields stay put
            lock.unlock();
            copyItems(true);
            lock.lock();
            m_threadInBatch = false;
            m_finished.notify_all();
        }
    }

    void copyItems(bool onThread) {
        for (;;) {
            const std::size_t item = m_next.fetch_add(1, std::memory_order_relaxed);
            if (item >= m_count) return;
            Status copied = m_copy(item);
            std::lock_guard lock(m_mutex);
            if (!copied.isOk() && m_failure.isOk()) m_failure = std::move(copied);
            if (onThread) ++m_byThread;
            if (++m_done == m_count) m_finished.notify_all();
        }
    }

    std::mutex m_mutex;
    std::condition_variable m_wake, m_finished;
    // The batch: written by start() under the mutex while no thread works on a batch.
    Copy m_copy;
    std::size_t m_count = 0;
    std::atomic<std::size_t> m_next{0};
    std::size_t m_done = 0;        // under the mutex, as the fields below
    std::int64_t m_byThread = 0;
    Status m_failure;
    std::uint64_t m_batch = 0;
    bool m_active = false;         // also read without the mutex by the owner (its own writes)
    bool m_threadInBatch = false;
    bool m_stopping = false;
    std::thread m_thread;  // last: starts after the fields above exist
};

// ---- the policy ----

Result<std::unique_ptr<KvTiers>> KvTiers::attach(KvCache& cache, const KvTierOptions& options,
                                                 ThreadPool* pool) {
    const KvCacheOptions& o = cache.options();
    if (o.indexerDim <= 0) {
        return Status::invalidArgument(
            "KV tiers: the model has no sparse-attention layers (indexer keys) to page");
    }
    if (options.computeBytes < 0 || options.hostBytes < 0 || options.diskBytes < 0) {
        return Status::invalidArgument("KV tiers: budgets must not be negative");
    }
    Result<std::unique_ptr<ComputeTier>> compute = slotComputeTier(o, options.computeBytes);
    if (!compute) return compute.status();
    std::unique_ptr<KvTiers> tiers(new KvTiers(cache, options, std::move(*compute)));
    if (options.diskBytes > 0) {
        if (options.diskFolder.empty() && options.diskFile.empty()) {
            return Status::invalidArgument("KV tiers: a disk budget needs a folder for its file");
        }
        Result<std::unique_ptr<KvSpillFile>> file = KvSpillFile::open(options, tiers->m_unitBytes);
        if (!file) return file.status();
        tiers->m_disk = std::move(*file);
    }
    tiers->m_pool = pool;
    if (options.overlap) tiers->m_transferThread = std::make_unique<KvTransferThread>();
    cache.setResidency(tiers.get());
    return tiers;
}

KvTiers::KvTiers(KvCache& cache, const KvTierOptions& options,
                 std::unique_ptr<ComputeTier> compute)
    : m_cache(cache), m_options(options), m_compute(std::move(compute)) {
    const KvCacheOptions& o = cache.options();
    m_firstLayer = o.indexerFirstLayer;
    m_blocks = o.blocks;
    m_unitBytes = 2 * m_compute->partBytes();
    m_units.resize(std::size_t((o.layers - m_firstLayer) * m_blocks));
}

KvTiers::~KvTiers() {
    settle();  // no copy may outlive the tiers
    if (m_cache.residency() == this) m_cache.setResidency(nullptr);
}

KvPlacement KvTiers::placement(int layer) {
    return layer >= m_firstLayer ? m_compute->placement(layer) : KvPlacement{};
}

std::size_t KvTiers::unitIndex(int layer, std::int32_t block) const {
    assert(layer >= m_firstLayer && block >= 0 && block < m_blocks);
    return std::size_t((layer - m_firstLayer) * m_blocks + block);
}
int KvTiers::layerOf(std::size_t unit) const {
    return m_firstLayer + int(std::int64_t(unit) / m_blocks);
}
std::int32_t KvTiers::blockOf(std::size_t unit) const {
    return std::int32_t(std::int64_t(unit) % m_blocks);
}

bool KvTiers::resident(int layer, std::int32_t block) const {
    return m_units[unitIndex(layer, block)].resident;
}

// Marks a resident unit as used at forward pass `when` (its place in the eviction order).
void KvTiers::touch(std::size_t unit, std::uint64_t when) {
    Unit& u = m_units[unit];
    assert(u.resident);
    m_residentOrder.erase({u.used, std::uint32_t(unit)});
    u.used = std::max(u.used, when);
    m_residentOrder.emplace(u.used, std::uint32_t(unit));
}

void KvTiers::beginForward() {
    finishRequired();
    ++m_forward;
}

Status KvTiers::require(int layer, std::span<const std::int32_t> blocks) {
    IRIS_RETURN_IF_ERROR(plan(layer, blocks));
    IRIS_RETURN_IF_ERROR(runTransfers());
    return awaitRequired();
}

Status KvTiers::requireAsync(int layer, std::span<const std::int32_t> blocks) {
    IRIS_RETURN_IF_ERROR(plan(layer, blocks));
    if (m_transferThread == nullptr || m_transfers.empty()) return runTransfers();
    m_transferThread->start(m_transfers.size(),
                            [this](std::size_t i) { return copyIn(m_transfers[i]); });
    return {};
}

Status KvTiers::awaitRequired() {
    finishRequired();
    return takeFailure();
}

// The bookkeeping of require(): the units become resident now, their copies are planned in
// m_transfers. Units the same layer required before (earlier waves) are kept: the layer is
// trimmed once its copies are awaited.
Status KvTiers::plan(int layer, std::span<const std::int32_t> blocks) {
    if (m_awaitedLayer != layer) {
        finishRequired();
    } else {
        settle();
    }
    IRIS_RETURN_IF_ERROR(takeFailure());
    m_transfers.clear();
    // Those in already are marked first, so that making room for the others keeps them.
    std::int64_t missing = 0;
    for (const std::int32_t block : blocks) {
        const std::size_t unit = unitIndex(layer, block);
        ++m_stats.required;
        if (m_units[unit].resident) {
            touch(unit, requiredTick());
        } else {
            ++missing;
        }
    }
    makeRoom(layer, missing);
    for (const std::int32_t block : blocks) {
        const std::size_t unit = unitIndex(layer, block);
        if (m_units[unit].resident) continue;
        planBringIn(unit);
        touch(unit, requiredTick());
    }
    m_awaitedLayer = layer;
    return {};
}

void KvTiers::settle() {
    if (m_transferThread == nullptr || !m_transferThread->active()) return;
    const auto start = std::chrono::steady_clock::now();
    std::int64_t behind = 0;
    Status copied = m_transferThread->finish(behind);
    m_stats.fetchedBehind += behind;
    m_stats.waitNanos += std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count();
    if (!copied.isOk() && m_failure.isOk()) m_failure = std::move(copied);
}

// Waits for the copies, then trims: a planned unit holds its data only once they are done,
// and no host slot may be reused while a copy reads it.
void KvTiers::finishRequired() {
    settle();
    if (m_awaitedLayer >= 0) {
        const int layer = std::exchange(m_awaitedLayer, -1);
        trim(layer);
    }
}

Status KvTiers::takeFailure() {
    return std::exchange(m_failure, Status::ok());
}

Status KvTiers::writable(std::int32_t block) {
    finishRequired();
    for (int layer = m_firstLayer; layer < m_cache.options().layers; ++layer) {
        const std::size_t unit = unitIndex(layer, block);
        if (!m_units[unit].resident) IRIS_RETURN_IF_ERROR(bringIn(unit));
        dropCopies(unit);
        touch(unit, pinnedTick());  // written by the next forward pass: kept through it
    }
    return {};
}

Status KvTiers::requireWhole(std::int32_t block) {
    finishRequired();
    for (int layer = m_firstLayer; layer < m_cache.options().layers; ++layer) {
        const std::size_t unit = unitIndex(layer, block);
        if (!m_units[unit].resident) IRIS_RETURN_IF_ERROR(bringIn(unit));
        touch(unit, pinnedTick());
    }
    return {};
}

void KvTiers::forget(std::int32_t block, bool inUse) {
    finishRequired();
    for (int layer = m_firstLayer; layer < m_cache.options().layers; ++layer) {
        const std::size_t unit = unitIndex(layer, block);
        Unit& u = m_units[unit];
        dropCopies(unit);
        if (inUse && !u.resident) {
            u.resident = true;
            ++m_resident;
            u.used = 0;
            m_residentOrder.emplace(0, std::uint32_t(unit));
            m_compute->acquire(layer, block);
        } else if (!inUse && u.resident) {
            m_residentOrder.erase({u.used, std::uint32_t(unit)});
            u.resident = false;
            --m_resident;
            m_compute->release(layer, block, false);
        }
        if (inUse) touch(unit, pinnedTick());
    }
}

void KvTiers::adopt(int layer, std::int32_t block, std::span<const std::byte> unitBytes) {
    assert(std::int64_t(unitBytes.size()) == m_unitBytes);
    finishRequired();
    const std::size_t unit = unitIndex(layer, block);
    Unit& u = m_units[unit];
    dropCopies(unit);
    if (u.resident) {
        m_residentOrder.erase({u.used, std::uint32_t(unit)});
        u.resident = false;
        --m_resident;
        m_compute->release(layer, block, m_options.poisonEvicted);
    }
    const std::int32_t slot = takeHostSlot();
    std::memcpy(m_hostSlots[std::size_t(slot)].get(), unitBytes.data(), unitBytes.size());
    m_hostOwner[std::size_t(slot)] = std::int32_t(unit);
    m_hostStored[std::size_t(slot)] = ++m_hostClock;
    m_hostOrder.emplace(m_hostClock, std::uint32_t(slot));
    m_units[unit].host = slot;
}

// Brings one unit in at once (the caller has finished what was required before).
Status KvTiers::bringIn(std::size_t unit) {
    m_transfers.clear();
    planBringIn(unit);
    return runTransfers();
}

// The bookkeeping of bringing `unit` in (resident from now on); its bytes move in
// runTransfers(), which must run before anything can evict it.
void KvTiers::planBringIn(std::size_t unit) {
    Unit& u = m_units[unit];
    assert((u.host >= 0 || u.disk >= 0) && "a unit that is not resident has a copy");
    m_transfers.push_back({unit, u.host, u.host >= 0 ? -1 : u.disk});
    if (u.host < 0) {
        m_stats.diskBytesRead += m_unitBytes;
        ++m_stats.fetchedFromDisk;
    }
    m_stats.bytesIn += m_unitBytes;
    ++m_stats.fetched;
    u.resident = true;
    ++m_resident;
    u.used = 0;
    m_residentOrder.emplace(0, std::uint32_t(unit));
    m_compute->acquire(layerOf(unit), blockOf(unit));
}

Status KvTiers::copyIn(const Transfer& t) {
    if (m_options.copyDelay.count() > 0) std::this_thread::sleep_for(m_options.copyDelay);
    const int layer = layerOf(t.unit);
    const std::int32_t block = blockOf(t.unit);
    if (t.host >= 0) {
        m_compute->copyIn(layer, block, m_hostSlots[std::size_t(t.host)].get());
        return {};
    }
    const auto [k, v] = m_compute->parts(layer, block);
    return m_disk->read(t.disk, k, v, m_compute->partBytes());
}

// Copies the planned units in now, spread over the compute threads when there are several
// (host copies are memcpy, disk copies preadv: both safe side by side).
Status KvTiers::runTransfers() {
    const auto n = std::int64_t(m_transfers.size());
    if (m_pool == nullptr || n < 2) {
        for (const Transfer& t : m_transfers)
            IRIS_RETURN_IF_ERROR(copyIn(t));
        return {};
    }
    std::vector<Status> results(m_transfers.size());
    m_pool->parallelFor(n, 1, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i)
            results[std::size_t(i)] = copyIn(m_transfers[std::size_t(i)]);
    });
    for (const Status& status : results)
        IRIS_RETURN_IF_ERROR(status);
    return {};
}

void KvTiers::trim(int activeLayer) {
    settle();
    makeRoom(activeLayer, 0);
    if (m_resident > m_options.computeBytes / m_unitBytes) ++m_stats.overBudget;
}

void KvTiers::makeRoom(int activeLayer, std::int64_t room) {
    const std::int64_t budget = m_options.computeBytes / m_unitBytes - room;
    const std::uint64_t now = requiredTick();
    // Units last required before this forward pass go first, least recently required first.
    while (m_resident > budget && !m_residentOrder.empty() && m_residentOrder.begin()->first < now)
        evict(m_residentOrder.begin()->second);
    // Then those this pass required for other layers (their attention is done), never those of
    // the layer at work nor those this pass writes (pinnedTick, after `now`).
    if (m_resident > budget && activeLayer >= 0) {
        const auto first = std::uint32_t(unitIndex(activeLayer, 0)),
                   last = first + std::uint32_t(m_blocks);
        auto it = m_residentOrder.lower_bound({now, 0});
        while (m_resident > budget && it != m_residentOrder.end() && it->first == now) {
            if (it->second >= first && it->second < last) {
                it = m_residentOrder.lower_bound({now, last});
                continue;
            }
            const std::uint32_t unit = (it++)->second;
            evict(unit);
        }
    }
}

// Out of the compute tier: copied to the host tier unless a copy exists already.
void KvTiers::evict(std::size_t unit) {
    Unit& u = m_units[unit];
    const int layer = layerOf(unit);
    const std::int32_t block = blockOf(unit);
    if (u.host < 0 && u.disk < 0) {
        const std::int32_t slot = takeHostSlot();
        m_compute->copyOut(layer, block, m_hostSlots[std::size_t(slot)].get());
        m_hostOwner[std::size_t(slot)] = std::int32_t(unit);
        m_hostStored[std::size_t(slot)] = ++m_hostClock;
        m_hostOrder.emplace(m_hostClock, std::uint32_t(slot));
        u.host = slot;
        m_stats.bytesOut += m_unitBytes;
        ++m_stats.spilled;
    }
    m_residentOrder.erase({u.used, std::uint32_t(unit)});
    u.resident = false;
    --m_resident;
    ++m_stats.evicted;
    m_compute->release(layer, block, m_options.poisonEvicted);
}

void KvTiers::dropCopies(std::size_t unit) {
    Unit& u = m_units[unit];
    if (u.host >= 0) {
        const auto slot = std::size_t(u.host);
        m_hostOrder.erase({m_hostStored[slot], std::uint32_t(slot)});
        m_hostOwner[slot] = -1;
        m_freeHostSlots.push_back(u.host);
        u.host = -1;
    }
    if (u.disk >= 0) {
        m_disk->give(u.disk);
        u.disk = -1;
    }
}

// A host slot: a free one, a new one within the budget, else the least recently stored copy's,
// which moves to disk first when it is the unit's only copy. When the disk cannot take it the
// host tier grows past its budget: the session goes on in memory.
std::int32_t KvTiers::takeHostSlot() {
    const std::int64_t budget = m_options.hostBytes / m_unitBytes;
    while (m_freeHostSlots.empty() && std::int64_t(m_hostSlots.size()) >= budget &&
           !m_hostOrder.empty()) {
        const std::uint32_t slot = m_hostOrder.begin()->second;
        const auto unit = std::size_t(m_hostOwner[slot]);
        Unit& u = m_units[unit];
        if (!u.resident && u.disk < 0 && !moveHostToDisk(unit)) break;
        m_hostOrder.erase(m_hostOrder.begin());
        m_hostOwner[slot] = -1;
        u.host = -1;
        m_freeHostSlots.push_back(std::int32_t(slot));
    }
    if (!m_freeHostSlots.empty()) {
        const std::int32_t slot = m_freeHostSlots.back();
        m_freeHostSlots.pop_back();
        return slot;
    }
    m_hostSlots.push_back(std::make_unique<std::byte[]>(std::size_t(m_unitBytes)));
    m_hostOwner.push_back(-1);
    m_hostStored.push_back(0);
    return std::int32_t(m_hostSlots.size() - 1);
}

bool KvTiers::moveHostToDisk(std::size_t unit) {
    if (m_disk == nullptr || !m_diskWarning.empty()) return false;
    Unit& u = m_units[unit];
    const std::int32_t slot = m_disk->take();
    if (slot < 0) return false;  // the disk budget is used up: keep it in memory
    const Status written =
        m_disk->write(slot, m_hostSlots[std::size_t(u.host)].get(), m_unitBytes);
    if (!written.isOk()) {
        m_disk->give(slot);
        noteDiskFailure(written.message());
        return false;
    }
    u.disk = slot;
    m_stats.diskBytesWritten += m_unitBytes;
    return true;
}

// After the first failed write the disk tier takes nothing more (what it holds is still read).
void KvTiers::noteDiskFailure(const std::string& what) {
    ++m_stats.diskWriteFailures;
    if (m_diskWarning.empty())
        m_diskWarning = what + "; spilled KV stays in host memory past --kv-host-mb";
}

KvTierStats KvTiers::stats() const {
    KvTierStats s = m_stats;
    s.residentBytes = m_resident * m_unitBytes;
    s.computeTierBytes = m_compute->bytesInUse();
    s.hostBytes = (std::int64_t(m_hostSlots.size()) - std::int64_t(m_freeHostSlots.size())) *
                  m_unitBytes;
    s.diskBytes = m_disk != nullptr ? m_disk->usedBytes() : 0;
    return s;
}

}  // namespace iris::inference
