#pragma once
// KV cache tiers for MiniMax-M3's sparse attention: the K/V of the sparse layers live in a
// compute tier (on the CPU an arena of slots, device memory for a GPU backend) under a byte
// budget, spill to a host-memory tier under its own budget, and from there to a disk tier (one
// unlinked spill file). The indexer keys and the dense layers' K/V are never paged: a decode step scores
// every block from resident indexer keys, and only the K/V blocks its top-k selection names
// are brought in (require()).
//
// The unit moved is one pool page (KV block) of one paged layer: its K rows then its V rows.
// While a unit is resident it has a slot of the arena, and attention finds it through the
// layer's block-to-slot table (KvPlacement); the pool's own memory for those layers is never
// touched. A unit that comes in takes the lowest free slot, after the least recently required
// units left to make room, so the arena's memory is reused from unit to unit: giving pool pages
// back to the kernel and faulting them in again (TLB shootdowns, a fault per 4 KiB) cost more
// than the copies did. The compute tier holds the least recently required units that fit its
// budget; a unit that
// leaves it keeps a copy in the host or disk tier, and a unit brought back keeps that copy, so
// evicting it again moves nothing until it is written again (KvCache::extend() marks a page
// written). Host copies go to disk least recently used first.
//
// Pages come in while the model computes: requireAsync() does the bookkeeping at once and
// hands the copies to a transfer thread, and awaitRequired() (or any later call) waits for
// them, copying what the thread has not started yet itself. MiniMax-M3 asks for a layer's
// pages in waves of (token, KV group) items, so the copies of one wave overlap the indexer
// scoring the next and the attention of the one before. Evictions happen only while no copy
// is in flight, so a host slot is never reused under a copy that reads it.
//
// KvTiers implements KvCache's residency hooks (kv_cache.h); the memory operations on the
// compute tier are behind ComputeTier, so a device pool can reuse the policy. Not thread-safe:
// called on the thread that drives forward passes, between the compute threads' work.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "inference/kv_cache.h"
#include "inference/thread_pool.h"

namespace iris::inference {

struct KvTierOptions {
    // Bytes of paged K/V (sparse layers) the compute tier keeps; 0 = everything (no tiers).
    std::int64_t computeBytes = 0;
    // Bytes of spilled units kept in host memory before they go to disk.
    std::int64_t hostBytes = 64ll << 20;
    // Bytes of the disk tier's spill file; 0 = no disk tier (the host tier then grows past its
    // budget instead of losing data).
    std::int64_t diskBytes = 0;
    // A folder for the spill file (created there and unlinked at once: nothing stays behind),
    // or `diskFile`, a file to use as it is (tests: /dev/full). One of them when diskBytes > 0.
    std::string diskFolder{};
    std::string diskFile{};
    // Tests: fill the slot of a unit that leaves the compute tier with NaN (all bits set), so
    // that attention reading a slot before the copy into it is done cannot go unnoticed. (A
    // block that is not resident reads as NaN anyway: kAbsentSlot.)
    bool poisonEvicted = false;
    // Copy pages in on a transfer thread while the model computes (requireAsync); false: every
    // copy is done before requireAsync returns, on the compute threads (as require()).
    bool overlap = true;
    // Tests: each copy into the compute tier first sleeps this long, so that attention reading
    // a page before its copy is done finds it poisoned.
    std::chrono::microseconds copyDelay{0};
};

struct KvTierStats {
    std::int64_t required = 0;       // units asked for by require()
    std::int64_t fetched = 0;        // of those, brought into the compute tier
    std::int64_t fetchedFromDisk = 0;
    std::int64_t evicted = 0;        // units that left the compute tier
    std::int64_t spilled = 0;        // of those, copied out (no copy existed)
    std::int64_t bytesIn = 0;        // host or disk -> compute tier
    std::int64_t bytesOut = 0;       // compute tier -> host tier
    std::int64_t diskBytesWritten = 0;  // host tier -> disk tier
    std::int64_t diskBytesRead = 0;     // disk tier -> compute tier
    std::int64_t diskWriteFailures = 0;
    std::int64_t residentBytes = 0;  // paged K/V in the compute tier now
    std::int64_t computeTierBytes = 0;  // memory the compute tier's slots hold now
    std::int64_t hostBytes = 0;      // host tier in use now
    std::int64_t diskBytes = 0;      // disk tier in use now
    std::int64_t overBudget = 0;     // evictions that found only units the current step needs
    std::int64_t fetchedBehind = 0;  // units the transfer thread copied while the model computed
    std::int64_t waitNanos = 0;      // time spent waiting for copies (or doing them) before use
    // Bytes moved between tiers in both directions (in, out, host <-> disk).
    std::int64_t bytesMoved() const { return bytesIn + bytesOut + diskBytesWritten; }
};

// The compute tier's memory: where a unit (paged layer `layer`, pool block `block`) is while it
// is resident. The CPU version is slotComputeTier(); a device tier would copy through pinned
// host memory instead.
class ComputeTier {
public:
    virtual ~ComputeTier() = default;
    // Bytes of one unit: K part then V part, partBytes() each.
    virtual std::int64_t partBytes() const = 0;
    // Where a paged layer's units are (KvCache asks once per layer).
    virtual KvPlacement placement(int layer) = 0;
    // The unit comes in: it gets room (its contents come by copyIn or by writes).
    virtual void acquire(int layer, std::int32_t block) = 0;
    // Copies the unit out to `to` (2 * partBytes()).
    virtual void copyOut(int layer, std::int32_t block, std::byte* to) = 0;
    virtual void copyIn(int layer, std::int32_t block, const std::byte* from) = 0;
    // The unit's two parts in the tier, for reads from disk straight into them.
    virtual std::pair<std::byte*, std::byte*> parts(int layer, std::int32_t block) = 0;
    // The unit leaves: its room is free for another (poisoned first when asked).
    virtual void release(int layer, std::int32_t block, bool poison) = 0;
    // Memory the tier holds now.
    virtual std::int64_t bytesInUse() const = 0;
};

// The CPU engine's compute tier for the paged layers of `options`: an arena with a slot for
// every unit (reserved address space) of which the lowest free slot is taken first; the slots
// within `budgetBytes` keep their memory when freed, slots above them (units past the budget)
// give it back. OutOfRange when the address space is refused.
Result<std::unique_ptr<ComputeTier>> slotComputeTier(const KvCacheOptions& options,
                                                     std::int64_t budgetBytes);

class KvSpillFile;
class KvTransferThread;

class KvTiers final : public KvResidency {
public:
    // Tiers for `cache` (which must have MiniMax-M3 indexer keys) and attaches them to it
    // (cache.setResidency). With `pool` (the engine's compute threads, which must outlive the
    // tiers) the pages a step brings in are copied by all its threads. InvalidArgument for a
    // cache without paged layers or a disk tier without a place; IoError when the spill file
    // cannot be created.
    static Result<std::unique_ptr<KvTiers>> attach(KvCache& cache, const KvTierOptions& options,
                                                   ThreadPool* pool = nullptr);
    ~KvTiers() override;

    // ---- KvResidency (called by the model and by KvCache) ----
    KvPlacement placement(int layer) override;
    void beginForward() override;
    Status require(int layer, std::span<const std::int32_t> blocks) override;
    Status requireAsync(int layer, std::span<const std::int32_t> blocks) override;
    Status awaitRequired() override;
    Status writable(std::int32_t block) override;
    Status requireWhole(std::int32_t block) override;
    void forget(std::int32_t block, bool inUse) override;

    // Gives a unit these contents, put straight into the host tier (and from there to disk)
    // rather than the compute tier: a long context built or restored without passing through
    // the pool (tests, benchmarks). The block must be held by a sequence.
    void adopt(int layer, std::int32_t block, std::span<const std::byte> unit);
    // Moves units out of the compute tier until it is within budget: first those not required
    // in the current forward pass, then (with activeLayer) those it required for other layers;
    // never those of activeLayer it required nor those it writes.
    void trim(int activeLayer = -1);

    bool resident(int layer, std::int32_t block) const;
    std::int64_t unitBytes() const { return m_unitBytes; }
    const KvTierOptions& options() const { return m_options; }
    KvTierStats stats() const;
    // The first disk-tier failure ("" when none), reported once.
    const std::string& diskWarning() const { return m_diskWarning; }

private:
    KvTiers(KvCache& cache, const KvTierOptions& options, std::unique_ptr<ComputeTier> compute);
    struct Unit {
        std::uint64_t used = 0;    // last require/write: requiredTick() or pinnedTick()
        std::int32_t host = -1;    // host-tier slot holding a copy
        std::int32_t disk = -1;    // disk-tier slot holding a copy
        bool resident = false;
    };
    std::size_t unitIndex(int layer, std::int32_t block) const;
    int layerOf(std::size_t unit) const;
    std::int32_t blockOf(std::size_t unit) const;
    void touch(std::size_t unit, std::uint64_t when);
    // Eviction-order stamps: a unit required in forward pass f gets 2f; one written in pass f
    // (made writable just before it) 2f + 1, which keeps it through that pass.
    std::uint64_t requiredTick() const { return 2 * m_forward; }
    std::uint64_t pinnedTick() const { return 2 * (m_forward + 1) + 1; }
    Status bringIn(std::size_t unit);
    void planBringIn(std::size_t unit);
    Status runTransfers();
    Status plan(int layer, std::span<const std::int32_t> blocks);
    // Waits for the copies in flight; a failure is kept for the next call that returns a Status.
    void settle();
    // settle(), then trims for the layer requireAsync() brought in.
    void finishRequired();
    Status takeFailure();
    // Evicts as trim() does until `room` more units fit the budget (no count of overBudget).
    void makeRoom(int activeLayer, std::int64_t room);
    void evict(std::size_t unit);
    void dropCopies(std::size_t unit);
    std::int32_t takeHostSlot();
    bool moveHostToDisk(std::size_t unit);
    void noteDiskFailure(const std::string& what);

    KvCache& m_cache;
    ThreadPool* m_pool = nullptr;
    KvTierOptions m_options;
    std::unique_ptr<ComputeTier> m_compute;
    std::unique_ptr<KvSpillFile> m_disk;
    int m_firstLayer = 0;
    std::int64_t m_blocks = 0;
    std::int64_t m_unitBytes = 0;
    std::vector<Unit> m_units;
    std::set<std::pair<std::uint64_t, std::uint32_t>> m_residentOrder;  // (used, unit)
    std::int64_t m_resident = 0;                                         // units
    // Host tier: slots of m_unitBytes, the unit in each slot, and copies by last use.
    std::vector<std::unique_ptr<std::byte[]>> m_hostSlots;
    std::vector<std::int32_t> m_hostOwner;
    std::vector<std::int32_t> m_freeHostSlots;
    std::set<std::pair<std::uint64_t, std::uint32_t>> m_hostOrder;  // (stored, slot)
    std::vector<std::uint64_t> m_hostStored;  // per slot: when its copy was stored
    // Units planned to come in and where from (host slot, else disk slot).
    struct Transfer {
        std::size_t unit;
        std::int32_t host;
        std::int32_t disk;
    };
    std::vector<Transfer> m_transfers;
    Status copyIn(const Transfer& t);  // one planned copy into the compute tier
    std::unique_ptr<KvTransferThread> m_transferThread;  // with options.overlap
    int m_awaitedLayer = -1;  // the layer requireAsync() brings in, trimmed for once awaited
    Status m_failure;         // a copy that failed in flight, not reported yet
    std::uint64_t m_forward = 1;
    std::uint64_t m_hostClock = 0;
    KvTierStats m_stats;
    std::string m_diskWarning;
};

}  // namespace iris::inference
