#pragma once
// Test support: a model's logits for a token sequence fed in chunks (a whole prefill, token by
// token decoding, or anything between) on a fresh paged cache, and the relative distance of two
// logit vectors, as the model tests compare backends and references.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "inference/models/model.h"

namespace iris::inference::testing {

// What runs one batch: Model::forward by default, or a stand-in (a reference composed by hand).
using ForwardFn =
    std::function<Status(std::span<const TokenInput>, KvCache&, ThreadPool&, std::vector<float>&)>;

struct ChunkedRun {
    std::size_t chunk = 1;  // tokens per forward pass
    kernels::TensorType kvType = kernels::TensorType::F32;
    int threads = 2;
    std::vector<const float*> images;  // per token, or empty: injected embeddings (image tokens)
    ForwardFn forward;                 // empty: model.forward
};

// Every token's logits, row after row; the cache (64 blocks of 16) is the model's geometry.
inline std::vector<float> chunkedLogits(Model& model, const std::vector<std::int32_t>& tokens,
                                        const std::vector<std::array<std::int32_t, 4>>& positions,
                                        const ChunkedRun& run) {
    ThreadPool pool(run.threads);
    Result<KvCache> cache = KvCache::create(model.kvCacheOptions(64, 16, run.kvType));
    EXPECT_TRUE(cache) << cache.status().message();
    if (!cache) return {};
    const SequenceId seq = cache->newSequence();
    std::vector<float> logits;
    for (std::size_t begin = 0; begin < tokens.size(); begin += run.chunk) {
        const std::size_t end = std::min(tokens.size(), begin + run.chunk);
        EXPECT_TRUE(cache->extend(seq, std::int64_t(end)).isOk());
        std::vector<TokenInput> batch;
        for (std::size_t i = begin; i < end; ++i) {
            batch.push_back({tokens[i], seq, std::int64_t(i), positions[i], true});
            if (!run.images.empty()) batch.back().embedding = run.images[i];
        }
        const Status status = run.forward ? run.forward(batch, *cache, pool, logits)
                                          : model.forward(batch, *cache, pool, logits);
        EXPECT_TRUE(status.isOk()) << status.message();
    }
    return logits;
}

// max |got - want| / max |want|.
template <class T>
double relativeError(const std::vector<float>& got, const std::vector<T>& want) {
    double maxDiff = 0, maxRef = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        maxDiff = std::max(maxDiff, std::fabs(double(got[i]) - double(want[i])));
        maxRef = std::max(maxRef, std::fabs(double(want[i])));
    }
    return maxDiff / maxRef;
}

}  // namespace iris::inference::testing
