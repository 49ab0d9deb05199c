#include "inference/models/model_parts.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "kernels/rms_norm.h"

namespace iris::inference {

float* growScratch(std::vector<float>& buffer, std::int64_t size) {
    if (std::int64_t(buffer.size()) < size) buffer.resize(static_cast<std::size_t>(size));
    return buffer.data();
}

void parallelItems(ThreadPool& pool, std::int64_t items, std::int64_t width,
                   const std::function<void(std::int64_t, std::int64_t)>& fn) {
    // Below this many values a pass takes a few microseconds, about what waking the workers
    // costs; pieces of at least 4096 values (16 KiB of floats).
    constexpr std::int64_t kParallelValues = std::int64_t(1) << 16;
    constexpr std::int64_t kGrainValues = std::int64_t(1) << 12;
    if (items * width < kParallelValues || pool.threads() == 1) {
        fn(0, items);
        return;
    }
    pool.parallelFor(items, std::max<std::int64_t>(1, kGrainValues / width), fn);
}

void addResidual(float* x, const float* y, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
        x[i] += y[i];
}

void addResidual(float* x, const float* y, std::int64_t n, ThreadPool& pool) {
    parallelItems(pool, n, 1, [&](std::int64_t begin, std::int64_t end) {
        addResidual(x + begin, y + begin, end - begin);
    });
}

void rmsNormRows(const float* x, const float* w, float* y, std::int64_t rows, std::int64_t width,
                 float eps, ThreadPool& pool) {
    parallelItems(pool, rows, width, [&](std::int64_t begin, std::int64_t end) {
        kernels::rmsNorm(x + begin * width, width, w, y + begin * width, width, end - begin, width,
                         eps);
    });
}

Status checkBatch(std::span<const TokenInput> batch, const KvCache& cache,
                  const ModelConfig& config) {
    const KvCacheOptions& o = cache.options();
    if (o.layers != config.layers || o.kvHeads != config.kvHeads || o.headDim != config.headDim)
        return Status::invalidArgument("KV cache geometry does not match the model");
    if (config.indexerDim > 0 &&
        (o.indexerDim != config.indexerDim || o.indexerFirstLayer != config.indexerFirstLayer ||
         o.selectionBlock != config.selectionBlock)) {
        return Status::invalidArgument(
            "KV cache has no room for MiniMax-M3's indexer keys: make it with "
            "Model::kvCacheOptions()");
    }
    for (const TokenInput& in : batch) {
        if (in.embedding == nullptr && (in.token < 0 || in.token >= config.vocabSize)) {
            return Status::invalidArgument("token id " + std::to_string(in.token) +
                                           " is outside the vocabulary (" +
                                           std::to_string(config.vocabSize) + " tokens)");
        }
        if (!cache.exists(in.sequence) || in.slot < 0 || in.slot >= cache.length(in.sequence)) {
            return Status::invalidArgument("KV slot " + std::to_string(in.slot) + " of sequence " +
                                           std::to_string(in.sequence) + " was not reserved");
        }
    }
    return {};
}

void embedTokens(std::span<const TokenInput> batch, const GgufTensor& table, std::int64_t hidden,
                 float* x) {
    const std::int64_t rowBytes = kernels::rowBytes(table.type, hidden);
    for (std::size_t t = 0; t < batch.size(); ++t) {
        float* row = x + std::int64_t(t) * hidden;
        if (const float* injected = batch[t].embedding) {
            std::copy(injected, injected + hidden, row);
        } else {
            kernels::dequantizeRow(table.type, table.data.data() + batch[t].token * rowBytes, row,
                                   hidden);
        }
    }
}

void writeKv(int layer, std::span<const TokenInput> batch, const float* k, const float* v,
             const float* indexKeys, KvCache& cache) {
    const KvCacheOptions& o = cache.options();
    const std::int64_t width = std::int64_t(o.kvHeads) * o.headDim, indexDim = o.indexerDim;
    const bool f16 = o.type == kernels::TensorType::F16;
    for (std::size_t t = 0; t < batch.size(); ++t) {
        const float* kt = k + std::int64_t(t) * width;
        const float* vt = v + std::int64_t(t) * width;
        void* kSlot = cache.keySlot(layer, batch[t].sequence, batch[t].slot);
        void* vSlot = cache.valueSlot(layer, batch[t].sequence, batch[t].slot);
        if (f16) {
            auto* kd = static_cast<std::uint16_t*>(kSlot);
            auto* vd = static_cast<std::uint16_t*>(vSlot);
            for (std::int64_t i = 0; i < width; ++i) {
                kd[i] = kernels::fp32ToFp16(kt[i]);
                vd[i] = kernels::fp32ToFp16(vt[i]);
            }
        } else {
            std::copy(kt, kt + width, static_cast<float*>(kSlot));
            std::copy(vt, vt + width, static_cast<float*>(vSlot));
        }
        if (indexKeys != nullptr) {
            const float* ik = indexKeys + std::int64_t(t) * indexDim;
            std::copy(ik, ik + indexDim,
                      cache.indexKeySlot(layer, batch[t].sequence, batch[t].slot));
        }
    }
}

void writeKv(int layer, std::span<const TokenInput> batch, const float* k, const float* v,
             const float* indexKeys, KvCache& cache, ThreadPool& pool) {
    const KvCacheOptions& o = cache.options();
    const std::int64_t width = std::int64_t(o.kvHeads) * o.headDim, indexDim = o.indexerDim;
    parallelItems(pool, std::int64_t(batch.size()), 2 * width + indexDim,
                  [&](std::int64_t begin, std::int64_t end) {
                      writeKv(layer, batch.subspan(std::size_t(begin), std::size_t(end - begin)),
                              k + begin * width, v + begin * width,
                              indexKeys != nullptr ? indexKeys + begin * indexDim : nullptr, cache);
                  });
}

kernels::PagedKv pagedKv(const KvCache& cache, int layer, SequenceId sequence) {
    const KvCacheOptions& o = cache.options();
    return kernels::PagedKv{cache.keys(layer),
                            cache.values(layer),
                            cache.blockTable(sequence).data(),
                            o.blockSize,
                            int(o.kvHeads),
                            int(o.headDim),
                            o.type,
                            cache.slotTable(layer)};
}

void attendDense(int layer, std::span<const TokenInput> batch, const float* q, int heads,
                 const KvCache& cache, ThreadPool& pool, float* out) {
    const std::int64_t T = std::int64_t(batch.size()), G = cache.options().kvHeads,
                       hd = cache.options().headDim, group = heads / G;
    const float scale = 1.0f / std::sqrt(float(hd));
    // Tiles of kernels::attendRows: a KV group's query heads for one token, or for a run of
    // consecutive tokens of one sequence (a prefill chunk), sharing each K and V row's load.
    struct Tile {
        std::int64_t token, tokens;  // batch[token, token + tokens)
        int kvHead, headBegin, headEnd;
        std::int64_t cost;  // keys x rows, what the tile's time is about proportional to
    };
    const int tile = kernels::attendRowsTile();
    const std::int64_t tokensPerTile = std::max<std::int64_t>(1, tile / group);
    std::vector<Tile> tiles;
    std::int64_t longest = 0;
    for (std::int64_t t = 0; t < T;) {
        std::int64_t n = 1;
        while (t + n < T && n < tokensPerTile &&
               batch[std::size_t(t + n)].sequence == batch[std::size_t(t)].sequence)
            ++n;
        std::int64_t keys = 0;
        for (std::int64_t i = t; i < t + n; ++i)
            keys = std::max(keys, batch[std::size_t(i)].slot + 1);
        longest = std::max(longest, keys);
        for (int g = 0; g < G; ++g) {
            for (int h = int(g * group); h < int((g + 1) * group); h += tile) {
                const int end = int(std::min<std::int64_t>((g + 1) * group, h + tile));
                tiles.push_back({t, n, g, h, end, keys * n * (end - h)});
            }
        }
        t += n;
    }
    // Longest first, in many pieces that the threads claim as they finish: a prefill chunk's
    // last tokens see several times the keys of its first ones, and a thread that the OS
    // deschedules leaves its pieces to the others. Each tile's result is the same whoever runs
    // it, in whatever order.
    std::stable_sort(tiles.begin(), tiles.end(),
                     [](const Tile& a, const Tile& b) { return a.cost > b.cost; });
    constexpr int kPiecesPerThread = 8;
    const std::int64_t scratchFloats = kernels::attendRowsScratch(int(hd), longest);
    pool.parallelFor(
        std::int64_t(tiles.size()), 1,
        [&](std::int64_t begin, std::int64_t end) {
            // A piece's scratch is kAttendTile x longest floats and more: kept per thread between
            // calls up to 16 MiB (64k keys), rather than allocated and cleared for every piece;
            // a longer context's gets a buffer of its own that the piece returns.
            constexpr std::int64_t kKeptFloats = std::int64_t(4) << 20;
            thread_local std::vector<float> kept;
            std::unique_ptr<float[]> own;
            float* scratch = nullptr;
            if (scratchFloats <= kKeptFloats) {
                if (std::int64_t(kept.size()) < scratchFloats)
                    kept.resize(std::size_t(scratchFloats));
                scratch = kept.data();
            } else {
                own = std::make_unique_for_overwrite<float[]>(std::size_t(scratchFloats));
                scratch = own.get();
            }
            std::vector<kernels::AttentionRow> rows(static_cast<std::size_t>(tile));
            for (std::int64_t i = begin; i < end; ++i) {
                const Tile& part = tiles[std::size_t(i)];
                const TokenInput& first = batch[std::size_t(part.token)];
                int count = 0;
                for (std::int64_t t = part.token; t < part.token + part.tokens; ++t) {
                    for (int h = part.headBegin; h < part.headEnd; ++h) {
                        const std::int64_t at = (t * heads + h) * hd;
                        rows[count++] = {q + at, out + at, batch[std::size_t(t)].slot + 1};
                    }
                }
                kernels::attendRows(rows.data(), count, pagedKv(cache, layer, first.sequence),
                                    part.kvHead, scale, scratch);
            }
        },
        kPiecesPerThread);
}

void appendLogits(std::span<const TokenInput> batch, const float* x, const float* norm, float eps,
                  const Linear& output, LinearRunner& runner, ThreadPool& pool,
                  std::vector<float>& rows, std::vector<float>& logits) {
    const std::int64_t D = output.in;
    std::int64_t count = 0;
    for (const TokenInput& in : batch)
        count += in.wantLogits ? 1 : 0;
    if (count == 0) return;
    float* selected = growScratch(rows, count * D);
    std::int64_t r = 0;
    for (std::size_t t = 0; t < batch.size(); ++t) {
        if (!batch[t].wantLogits) continue;
        kernels::rmsNorm(x + std::int64_t(t) * D, D, norm, selected + r * D, D, 1, D, eps);
        ++r;
    }
    const std::size_t offset = logits.size();
    logits.resize(offset + std::size_t(count * output.out));
    runner.run(output, selected, count, logits.data() + offset, pool);
}

Result<std::int64_t> readVocabularySize(const GgufFile& file, std::int64_t hiddenSize) {
    const GgufTensor* embedding = file.findTensor("token_embd.weight");
    if (embedding == nullptr)
        return Status::notFound(file.name() + ": missing tensor 'token_embd.weight'");
    if (embedding->shape.size() != 2 || embedding->shape[0] != hiddenSize) {
        return Status::corrupt(file.name() + ": tensor 'token_embd.weight' has shape " +
                               shapeText(embedding->shape) + ", expected " +
                               std::to_string(hiddenSize) + " x vocabulary");
    }
    return embedding->shape[1];
}

}  // namespace iris::inference
