#include "inference/backend/cpu_sparse_attention.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "inference/models/model_parts.h"
#include "kernels/sparse_attention.h"

namespace iris::inference {

void CpuSparseAttention::attend(int li, std::span<const TokenInput> batch, const float* q,
                                const float* indexQ, int heads, const SparseAttention& msa,
                                const KvCache& cache, ThreadPool& pool, float* out,
                                BlockChoices* chosen) {
    if (chosen != nullptr)
        chosen->assign(batch.size(), std::vector<std::vector<std::int32_t>>(
                                         static_cast<std::size_t>(cache.options().kvHeads)));
    if (batch.size() > 1) {
        prefill(li, batch, q, indexQ, heads, msa, cache, pool, out, chosen);
    } else {
        decode(li, batch, q, indexQ, heads, msa, cache, pool, out, chosen);
    }
}

Status CpuSparseAttention::takeStatus() {
    return std::exchange(m_status, Status());
}

// Decode: per (token, KV group), the group's index query chooses blocks and the group's query
// heads attend to them. Choosing and attending are separate passes so that KV tiers can bring
// the chosen blocks in between (chooseFetchAttend).
void CpuSparseAttention::decode(int li, std::span<const TokenInput> batch, const float* q,
                                const float* indexQ, int heads, const SparseAttention& msa,
                                const KvCache& cache, ThreadPool& pool, float* out,
                                BlockChoices* traced) {
    const std::int64_t T = std::int64_t(batch.size()), H = heads, G = cache.options().kvHeads,
                       hd = cache.options().headDim, group = H / G;
    const int S = msa.blockSize, topK = std::max(msa.topK, 1), Di = msa.indexDim;
    const float scale = 1.0f / std::sqrt(float(hd));
    m_chosen.resize(std::size_t(T * G * topK));
    m_chosenCount.resize(std::size_t(T * G));
    const auto choose = [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> blockScores;
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t t = item / G;
            const int g = int(item % G);
            const TokenInput& in = batch[std::size_t(t)];
            const std::int64_t length = in.slot + 1;
            const std::int64_t blocks = kernels::selectionBlocks(length, S);
            blockScores.resize(static_cast<std::size_t>(blocks));
            const kernels::PagedIndexKeys keys{cache.indexKeys(li),
                                               cache.blockTable(in.sequence).data(),
                                               cache.options().blockSize, Di};
            kernels::indexerBlockScores(indexQ + (t * G + g) * Di, 1, keys, length, S,
                                        blockScores.data());
            m_chosenCount[std::size_t(item)] =
                kernels::selectTopBlocks(blockScores.data(), blocks, msa.topK, msa.localBlocks,
                                         m_chosen.data() + item * topK);
        }
    };
    const auto pages = [&](std::int64_t item) {
        const TokenInput& in = batch[std::size_t(item / G)];
        addChosenPages(cache, in, in.slot + 1, m_chosen.data() + item * topK,
                       m_chosenCount[std::size_t(item)], S);
    };
    const auto attend = [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> work;
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t t = item / G;
            const int g = int(item % G), count = m_chosenCount[std::size_t(item)];
            const TokenInput& in = batch[std::size_t(t)];
            const std::int32_t* chosen = m_chosen.data() + item * topK;
            work.resize(std::size_t(group * count * S));
            kernels::attendBlocks(q + t * H * hd, int(H), pagedKv(cache, li, in.sequence),
                                  in.slot + 1, scale, chosen, count, S, out + t * H * hd,
                                  work.data(), int(g * group), int((g + 1) * group));
            if (traced != nullptr)
                (*traced)[std::size_t(t)][std::size_t(g)].assign(chosen, chosen + count);
        }
    };
    chooseFetchAttend(li, cache, pool, T * G, choose, pages, attend);
}

// Prefill: the batch is cut into runs of up to kRun consecutive tokens of one sequence; per
// (run, KV group) each token's choice becomes a row of a block mask, and the masked kernel reads
// every block the run selected once for all of its queries.
void CpuSparseAttention::prefill(int li, std::span<const TokenInput> batch, const float* q,
                                 const float* indexQ, int heads, const SparseAttention& msa,
                                 const KvCache& cache, ThreadPool& pool, float* out,
                                 BlockChoices* traced) {
    constexpr std::int64_t kRun = 32;
    const std::int64_t T = std::int64_t(batch.size()), H = heads, G = cache.options().kvHeads,
                       hd = cache.options().headDim, group = H / G;
    const int S = msa.blockSize, topK = msa.topK, Di = msa.indexDim;
    const float scale = 1.0f / std::sqrt(float(hd));
    std::vector<std::int64_t> starts;
    for (std::int64_t t = 0; t < T; ++t) {
        if (t == 0 || batch[std::size_t(t)].sequence != batch[std::size_t(t - 1)].sequence ||
            t - starts.back() == kRun)
            starts.push_back(t);
    }
    starts.push_back(T);
    const std::int64_t runs = std::int64_t(starts.size()) - 1;
    // Per (run, group): the block mask and the query lengths, made before attending so that KV
    // tiers can bring the masked blocks in between (chooseFetchAttend).
    std::vector<std::vector<std::uint8_t>> masks(std::size_t(runs * G));
    std::vector<std::vector<std::int64_t>> runLengths(std::size_t(runs * G));
    const auto choose = [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> blockScores;
        std::vector<std::int32_t> chosen(static_cast<std::size_t>(std::max(topK, 1)));
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t first = starts[std::size_t(item / G)],
                               last = starts[std::size_t(item / G + 1)];
            const int g = int(item % G), n = int(last - first);
            const TokenInput& head = batch[std::size_t(first)];
            const std::span<const std::int32_t> table = cache.blockTable(head.sequence);
            std::vector<std::uint8_t>& mask = masks[std::size_t(item)];
            std::vector<std::int64_t>& lengths = runLengths[std::size_t(item)];
            std::int64_t longest = 0;
            lengths.resize(std::size_t(n));
            for (int i = 0; i < n; ++i) {
                lengths[std::size_t(i)] = batch[std::size_t(first + i)].slot + 1;
                longest = std::max(longest, lengths[std::size_t(i)]);
            }
            const std::int64_t blocks = kernels::selectionBlocks(longest, S);
            mask.assign(std::size_t(n * blocks), 0);
            const kernels::PagedIndexKeys keys{cache.indexKeys(li), table.data(),
                                               cache.options().blockSize, Di};
            for (int i = 0; i < n; ++i) {
                const std::int64_t t = first + i, length = lengths[std::size_t(i)];
                const std::int64_t own = kernels::selectionBlocks(length, S);
                blockScores.resize(std::size_t(own));
                kernels::indexerBlockScores(indexQ + (t * G + g) * Di, 1, keys, length, S,
                                            blockScores.data());
                const int count = kernels::selectTopBlocks(blockScores.data(), own, topK,
                                                           msa.localBlocks, chosen.data());
                for (int j = 0; j < count; ++j)
                    mask[std::size_t(i * blocks + chosen[std::size_t(j)])] = 1;
                if (traced != nullptr)
                    (*traced)[std::size_t(t)][std::size_t(g)].assign(chosen.begin(),
                                                                     chosen.begin() + count);
            }
        }
    };
    const auto pages = [&](std::int64_t item) {
        addMaskedPages(cache, batch[std::size_t(starts[std::size_t(item / G)])],
                       masks[std::size_t(item)], runLengths[std::size_t(item)], S);
    };
    const auto attend = [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> work;
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t first = starts[std::size_t(item / G)];
            const int g = int(item % G);
            const TokenInput& head = batch[std::size_t(first)];
            const std::vector<std::uint8_t>& mask = masks[std::size_t(item)];
            const std::vector<std::int64_t>& lengths = runLengths[std::size_t(item)];
            const int n = int(lengths.size());
            const std::int64_t blocks = std::int64_t(mask.size()) / n;
            work.resize(std::size_t(n * group * (hd + 2) + S));
            kernels::attendMaskedBlocks(q + first * H * hd, H * hd, n, lengths.data(), int(H),
                                        pagedKv(cache, li, head.sequence), scale, mask.data(),
                                        blocks, S, out + first * H * hd, H * hd, work.data(),
                                        int(g * group), int((g + 1) * group));
        }
    };
    chooseFetchAttend(li, cache, pool, runs * G, choose, pages, attend);
}

void CpuSparseAttention::chooseFetchAttend(
    int li, const KvCache& cache, ThreadPool& pool, std::int64_t items,
    const std::function<void(std::int64_t, std::int64_t)>& choose,
    const std::function<void(std::int64_t)>& pages,
    const std::function<void(std::int64_t, std::int64_t)>& attend) {
    KvResidency* tiers = cache.residency();
    if (tiers == nullptr) {
        pool.parallelFor(items, 1, choose);
        pool.parallelFor(items, 1, attend);
        return;
    }
    // A wave keeps every thread busy, and there are at least two when there are two items (the
    // copies of one overlap the other's work), at most about eight (each costs a wait).
    const std::int64_t wave = std::min(std::max<std::int64_t>(pool.threads(), (items + 7) / 8),
                                       std::max<std::int64_t>(1, (items + 1) / 2));
    const auto inRange = [&pool](std::int64_t begin, std::int64_t end,
                                 const std::function<void(std::int64_t, std::int64_t)>& fn) {
        pool.parallelFor(end - begin, 1, [&](std::int64_t b, std::int64_t e) {
            fn(begin + b, begin + e);
        });
    };
    const auto fetch = [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t item = begin; item < end; ++item)
            pages(item);
        requirePages(li, cache, /*async=*/true);
    };
    inRange(0, std::min(wave, items), choose);
    fetch(0, std::min(wave, items));
    for (std::int64_t begin = 0; begin < items; begin += wave) {
        const std::int64_t end = std::min(begin + wave, items);
        if (end < items) {
            const std::int64_t next = std::min(end + wave, items);
            inRange(end, next, choose);  // while this wave's pages come in
            fetch(end, next);            // waits for them, then starts the next wave's
        } else {
            Status arrived = tiers->awaitRequired();
            if (m_status.isOk()) m_status = std::move(arrived);
        }
        inRange(begin, end, attend);  // while the next wave's pages come in
    }
}

void CpuSparseAttention::addChosenPages(const KvCache& cache, const TokenInput& in,
                                        std::int64_t length, const std::int32_t* chosen,
                                        int count, int blockSize) {
    const std::span<const std::int32_t> table = cache.blockTable(in.sequence);
    const std::int64_t page = cache.options().blockSize, S = blockSize;
    for (int j = 0; j < count; ++j) {
        const std::int64_t first = chosen[j] * S, last = std::min((chosen[j] + 1) * S, length);
        for (std::int64_t p = first / page; p * page < last; ++p)
            m_pages.push_back(table[std::size_t(p)]);
    }
}

void CpuSparseAttention::addMaskedPages(const KvCache& cache, const TokenInput& head,
                                        const std::vector<std::uint8_t>& mask,
                                        const std::vector<std::int64_t>& lengths, int blockSize) {
    const std::int64_t longest = *std::max_element(lengths.begin(), lengths.end());
    const std::int64_t blocks = kernels::selectionBlocks(longest, blockSize),
                       n = std::int64_t(lengths.size());
    for (std::int32_t b = 0; b < blocks; ++b) {
        bool any = false;
        for (std::int64_t i = 0; i < n && !any; ++i)
            any = mask[std::size_t(i * blocks + b)] != 0;
        if (any) addChosenPages(cache, head, longest, &b, 1, blockSize);
    }
}

void CpuSparseAttention::requireAll(int li, std::span<const TokenInput> batch,
                                    const KvCache& cache) {
    for (const TokenInput& in : batch) {
        const std::span<const std::int32_t> table = cache.blockTable(in.sequence);
        const std::int64_t pages =
            (in.slot + cache.options().blockSize) / cache.options().blockSize;
        m_pages.insert(m_pages.end(), table.begin(), table.begin() + pages);
    }
    requirePages(li, cache);
}

void CpuSparseAttention::requirePages(int li, const KvCache& cache, bool async) {
    std::sort(m_pages.begin(), m_pages.end());
    m_pages.erase(std::unique(m_pages.begin(), m_pages.end()), m_pages.end());
    KvResidency& tiers = *cache.residency();
    Status required = async ? tiers.requireAsync(li, m_pages) : tiers.require(li, m_pages);
    if (m_status.isOk()) m_status = std::move(required);
    m_pages.clear();
}

}  // namespace iris::inference
