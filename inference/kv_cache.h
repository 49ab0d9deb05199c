#pragma once
// Paged key/value cache. One pool of fixed-size blocks (pages) is allocated up front; each
// sequence owns a block table mapping its token positions to blocks. Blocks are reference
// counted so sequences can share a prefix (fork), and a shared block is copied before it is
// written (copy on write). Positions enter attention only through RoPE, so K is stored rotated.
//
// Layout per layer: K and V each [block][row in block][kv head][head dim], in f16 or f32.
// Models with MiniMax sparse attention also keep one f32 indexer key per token on their sparse
// layers ([block][row][indexerDim], same block ids), so forks, copy on write and truncation
// treat it like K and V; the selection blocks must line up with the pages.
//
// Prefix cache: a full block can be given a content name (Scheduler: a hash chain over the
// tokens, images and positions it holds after its prefix). A named block that no sequence holds
// any more is not freed but kept, least recently released first out, until the pool needs the
// room; findBlock() and appendCached() let a new sequence take it by name. A named block is
// never written again: a sequence that writes into it (after a truncate) copies or unnames it.
//
// Not thread-safe: the engine's scheduler thread owns it; forward passes read and write
// reserved slots from the compute threads.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/reserved_memory.h"
#include "base/sha256.h"
#include "base/status.h"
#include "kernels/tensor_type.h"

namespace iris::inference {

using SequenceId = std::int32_t;

// Where a layer's K/V blocks are stored: block b's K at keys + page * (one block of K), V
// likewise, with page = slotOf ? slotOf[b] : b. Without KV tiers a layer is stored in the pool
// (slotOf null); with them a paged layer's blocks live in the slots of the tiers' arena, and
// every block that is not resident maps to kAbsentSlot, which reads as NaN.
struct KvPlacement {
    std::byte* keys = nullptr;
    std::byte* values = nullptr;
    const std::int32_t* slotOf = nullptr;
};
inline constexpr std::int32_t kAbsentSlot = 0;

// Hooks for KV tiers (inference/kv_tiers.h), which move the K/V of the sparse-attention layers
// out of the compute tier and back. `block` is a pool block; `layer` a layer >= indexerFirstLayer.
// Without tiers attached (the default) every block is always in the pool.
class KvResidency {
public:
    virtual ~KvResidency() = default;
    // Where `layer` is stored (asked once per layer when the tiers are attached; the pointers
    // stay valid while they are); {} for a layer kept in the pool.
    virtual KvPlacement placement(int layer) = 0;
    // A forward pass starts: what it requires or writes stays until the next one.
    virtual void beginForward() = 0;
    // Attention of `layer` is about to read these blocks (IoError when one cannot be read back).
    virtual Status require(int layer, std::span<const std::int32_t> blocks) = 0;
    // As require(), but the copies may still be running when it returns, so that the caller
    // can compute meanwhile: the blocks may be read only after awaitRequired() (which each
    // later call waits for, too). Calls for one layer add to the blocks it keeps.
    virtual Status requireAsync(int layer, std::span<const std::int32_t> blocks) {
        return require(layer, blocks);
    }
    // Waits until every block requireAsync() named is in (IoError when one cannot be read).
    virtual Status awaitRequired() { return {}; }
    // The block is about to be written (all layers): it is brought in and its copies dropped.
    virtual Status writable(std::int32_t block) = 0;
    // All layers of the block are about to be read (copied out, copied on write).
    virtual Status requireWhole(std::int32_t block) = 0;
    // The block gets new contents (taken from the free list or the prefix cache) or none (freed).
    virtual void forget(std::int32_t block, bool inUse) = 0;
};

// A second copy of the pool's data kept elsewhere (the CUDA backend's device pool,
// inference/backend/cuda_backend.h): the block tables stay here, the mirror keeps its copy of
// each block's contents in step with what the cache itself does to them.
class KvPoolMirror {
public:
    virtual ~KvPoolMirror() = default;
    // Copy on write copied block `from` to `to` (all layers).
    virtual void copyBlock(std::int32_t from, std::int32_t to) = 0;
    // copyBlockIn() filled `block` in the host pool (the disk tier).
    virtual void blockFilled(std::int32_t block) = 0;
};

struct KvCacheOptions {
    int layers = 0;
    int kvHeads = 0;
    int headDim = 0;                                      // of K and V
    int blockSize = 16;                                   // tokens per block
    std::int64_t blocks = 0;                              // pool size
    kernels::TensorType type = kernels::TensorType::F16;  // F16 or F32
    // MiniMax sparse attention (0 = none): layers [indexerFirstLayer, layers) keep an f32
    // indexer key of indexerDim values per token. selectionBlock (tokens) must be a multiple of
    // blockSize or divide it; `selectionBlockKey` names where that number came from, for the
    // error message (read by create() only, so it need not outlive that call).
    int indexerDim = 0;
    int indexerFirstLayer = 0;
    int selectionBlock = 0;
    const char* selectionBlockKey = "selection block";
};

class KvCache {
public:
    // Allocates the pool. InvalidArgument for a non-positive size, an unsupported type, or pages
    // that do not line up with the sparse-attention selection blocks.
    static Result<KvCache> create(const KvCacheOptions& options);

    const KvCacheOptions& options() const { return m_options; }
    // Blocks a sequence can get now: free ones plus cached ones no sequence holds (evicted on
    // demand).
    std::int64_t freeBlocks() const { return std::int64_t(m_freeList.size() + m_idle.size()); }
    // Named blocks that no sequence holds: kept for their content.
    std::int64_t cachedBlocks() const { return std::int64_t(m_idle.size()); }
    // Blocks some sequence holds.
    std::int64_t usedBlocks() const { return m_options.blocks - freeBlocks(); }
    // Cached blocks given to other content since create().
    std::int64_t evictions() const { return m_evictions; }
    std::size_t bytes() const { return std::size_t(m_storage.size()); }

    SequenceId newSequence();
    // A new sequence sharing the first `length` tokens of `source` (blocks shared, not copied).
    SequenceId fork(SequenceId source, std::int64_t length);
    void release(SequenceId sequence);  // frees its blocks (those no other sequence shares)
    bool exists(SequenceId sequence) const;

    std::int64_t length(SequenceId sequence) const;
    // Makes room for positions [length, newLength) and sets the length to newLength; the blocks
    // holding those positions are private to the sequence afterwards (a shared partial block is
    // copied). OutOfRange (nothing changed) when the pool has too few free blocks; with KV tiers,
    // IoError when a page to be written cannot be read back.
    Status extend(SequenceId sequence, std::int64_t newLength);
    // Forgets positions >= length (freeing whole blocks past it).
    void truncate(SequenceId sequence, std::int64_t length);

    std::span<const std::int32_t> blockTable(SequenceId sequence) const;

    // KV tiers (not owned; nullptr = none). Attach before the first sequence; the cache must not
    // move while they are attached (they keep a reference to it). Detaching loses what the
    // tiers held.
    void setResidency(KvResidency* residency);
    KvResidency* residency() const { return m_residency; }
    // The pool's mirror (not owned; nullptr = none): it must outlive every later call.
    void setMirror(KvPoolMirror* mirror) { m_mirror = mirror; }
    KvPoolMirror* mirror() const { return m_mirror; }

    // ---- whole blocks, for the disk tier (inference/kv_disk_store.h) ----
    // Bytes of one block over all layers: K and V of each layer, then its indexer keys.
    std::int64_t blockPayloadBytes() const;
    // Copies `block` to `out` (blockPayloadBytes() bytes) in that order.
    void copyBlockOut(std::int32_t block, std::span<std::byte> out) const;
    // Fills `block` from such bytes; it must be held by one sequence only (extend() made it).
    void copyBlockIn(std::int32_t block, std::span<const std::byte> in);

    // ---- prefix cache ----
    // Names block `index` of `sequence`, which must be full and written. Nothing happens when
    // another block has the name already (the first keeps it) or the block has a name.
    void nameBlock(SequenceId sequence, std::size_t index, const Sha256Digest& name);
    // The block with `name`, or -1.
    std::int32_t findBlock(const Sha256Digest& name) const;
    // Appends the named `block` (from findBlock) to `sequence`, whose length must be a whole
    // number of blocks, and grows its length by a block; the block is shared, read-only.
    void appendCached(SequenceId sequence, std::int32_t block);

    // Where token `position` of `sequence` keeps its K (or V) for `layer`: kvHeads * headDim
    // elements. Only positions made room for by the last extend() may be written. Pure
    // addressing: safe to call from compute threads.
    void* keySlot(int layer, SequenceId sequence, std::int64_t position);
    void* valueSlot(int layer, SequenceId sequence, std::int64_t position);

    // Where a layer's K or V is stored, for attention: block b row r at
    // base + ((page * blockSize + r) * kvHeads * headDim) elements, page = slotTable(layer)[b], or b
    // when slotTable(layer) is null (KvPlacement).
    const void* keys(int layer) const;
    const void* values(int layer) const;
    const std::int32_t* slotTable(int layer) const;

    // The indexer key of token `position` (indexerDim floats); layer >= indexerFirstLayer. Same
    // rules as keySlot().
    float* indexKeySlot(int layer, SequenceId sequence, std::int64_t position);
    // Base of a layer's indexer key pool: block b row r at base + (b * blockSize + r) * indexerDim.
    const float* indexKeys(int layer) const;

private:
    struct Sequence {
        bool live = false;
        std::int64_t length = 0;
        std::vector<std::int32_t> blocks;
    };

    KvCache() = default;
    std::int64_t elementBytes() const;
    std::int64_t blockBytes() const;       // one block of K (or V) of one layer
    std::int64_t indexBlockBytes() const;  // one block of indexer keys of one layer
    std::byte* layerBase(int layer, bool value);  // the layer in the pool
    // Where K (or V) of `block` of `layer` is stored now (KvPlacement).
    std::byte* part(int layer, bool value, std::int32_t block) const;
    std::byte* indexBase(int layer);
    std::int32_t takeBlock();
    void dropBlock(std::int32_t block);
    void makePrivate(Sequence& sequence, std::size_t index);  // copy a shared block
    void* slot(int layer, bool value, SequenceId sequence, std::int64_t position);

    void unname(std::int32_t block);
    struct NameHash {
        std::size_t operator()(const Sha256Digest& name) const {
            std::size_t h;
            std::memcpy(&h, name.data(), sizeof h);  // already uniformly distributed
            return h;
        }
    };

    KvCacheOptions m_options;
    // Reserved, not allocated: a block's pages are committed when it is first written, so a
    // long context costs memory only as far as it is filled.
    ReservedMemory m_storage;
    std::vector<std::int32_t> m_refCount;
    std::vector<std::int32_t> m_freeList;
    std::vector<Sequence> m_sequences;
    // Prefix cache: each block's name (when m_named), the block of each name, and the named
    // blocks no sequence holds by release time (m_released[block]), oldest first.
    std::vector<Sha256Digest> m_name;
    std::vector<bool> m_named;
    std::unordered_map<Sha256Digest, std::int32_t, NameHash> m_byName;
    std::vector<std::uint64_t> m_released;
    std::set<std::pair<std::uint64_t, std::int32_t>> m_idle;
    std::uint64_t m_clock = 0;
    std::int64_t m_evictions = 0;
    KvResidency* m_residency = nullptr;
    std::vector<KvPlacement> m_placement;  // per layer: the pool, or the tiers' arena
    KvPoolMirror* m_mirror = nullptr;
};

}  // namespace iris::inference
