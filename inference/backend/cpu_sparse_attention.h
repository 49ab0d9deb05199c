#pragma once
// MiniMax sparse attention (MSA) on the CPU: the index queries choose each token's selection
// blocks, the query heads attend to them (kernels/sparse_attention.h), and with KV tiers the
// chosen blocks' pages are brought in between, overlapped with the work around them. The CPU
// backend's attendSparse (cpu_backend.cpp).
//
// Per token t at KV slot p and KV group g: the index query of g scores every cached index key
// j <= p, the scores are max-pooled into selection blocks anchored at slot 0, the query's own
// block (and localBlocks - 1 before it) is forced into the top-k, and the group's query heads
// attend to the chosen blocks only. Decode (one token) gathers the chosen blocks per (token,
// group); prefill turns the choices of a run of a chunk's tokens into a block mask and walks the
// selected blocks once for all of them (kernels::attendMaskedBlocks).

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/status.h"
#include "inference/backend/backend.h"
#include "inference/kv_cache.h"
#include "inference/models/model.h"
#include "inference/thread_pool.h"

namespace iris::inference {

// Not reentrant (one per backend): keeps its choices and the pages to bring in between calls.
class CpuSparseAttention {
public:
    // out (tokens x heads x headDim) = MSA of q (tokens x heads x headDim) over `layer`, chosen
    // by indexQ (tokens x kvHeads x msa.indexDim); `chosen` (may be null) receives the blocks.
    void attend(int layer, std::span<const TokenInput> batch, const float* q, const float* indexQ,
                int heads, const SparseAttention& msa, const KvCache& cache, ThreadPool& pool,
                float* out, BlockChoices* chosen);
    // With KV tiers, before dense attention over a tiered layer: brings in every page the
    // batch's tokens read.
    void requireAll(int layer, std::span<const TokenInput> batch, const KvCache& cache);
    // The first failure to bring a page in since the last call (ok when none), and forgets it.
    Status takeStatus();

private:
    void decode(int layer, std::span<const TokenInput> batch, const float* q, const float* indexQ,
                int heads, const SparseAttention& msa, const KvCache& cache, ThreadPool& pool,
                float* out, BlockChoices* chosen);
    void prefill(int layer, std::span<const TokenInput> batch, const float* q,
                 const float* indexQ, int heads, const SparseAttention& msa, const KvCache& cache,
                 ThreadPool& pool, float* out, BlockChoices* chosen);
    // Over `items` independent (token or run, KV group) items: choose(begin, end) picks the
    // blocks of items [begin, end), pages(item) adds the pool pages an item's choice reads to
    // m_pages, attend(begin, end) attends. Without KV tiers all items choose, then all attend.
    // With tiers the items go in waves, and the pages of wave w come in
    // (KvResidency::requireAsync) while wave w + 1 chooses and wave w - 1 attends.
    void chooseFetchAttend(int layer, const KvCache& cache, ThreadPool& pool, std::int64_t items,
                           const std::function<void(std::int64_t, std::int64_t)>& choose,
                           const std::function<void(std::int64_t)>& pages,
                           const std::function<void(std::int64_t, std::int64_t)>& attend);
    // Adds the pool pages of the chosen selection blocks (`chosen`, of a sequence's first
    // `length` slots) to m_pages.
    void addChosenPages(const KvCache& cache, const TokenInput& in, std::int64_t length,
                        const std::int32_t* chosen, int count, int blockSize);
    // The same for a prefill run's block mask (rows of `lengths.size()` queries).
    void addMaskedPages(const KvCache& cache, const TokenInput& head,
                        const std::vector<std::uint8_t>& mask,
                        const std::vector<std::int64_t>& lengths, int blockSize);
    // Brings m_pages in (async: KvResidency::requireAsync) and empties it.
    void requirePages(int layer, const KvCache& cache, bool async = false);

    // Decode: the chosen selection blocks per (token, group), topK apart, and how many.
    std::vector<std::int32_t> m_chosen;
    std::vector<int> m_chosenCount;
    std::vector<std::int32_t> m_pages;  // pool pages to bring in (KV tiers)
    Status m_status;                    // the first failure to bring a page in
};

}  // namespace iris::inference
