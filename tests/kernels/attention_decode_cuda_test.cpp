#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/attention_decode.cuh"
#include "kernels/fp16.h"
#include "tests/kernels/cuda_test_support.h"

namespace iris::kernels {
namespace {

using cuda_test::DeviceBuffer;

struct Case {
    int kvHeads, group, headDim, blockSize;
    TensorType type;
    std::vector<std::int32_t> lengths;
};

// A shared pool of blocks, each sequence with its own shuffled block table, random queries;
// the GPU's result against a float64 softmax over the same (rounded) keys and values.
void checkCase(const Case& c) {
    SCOPED_TRACE(::testing::Message()
                 << "kvHeads=" << c.kvHeads << " group=" << c.group << " headDim=" << c.headDim
                 << " blockSize=" << c.blockSize << " type=" << tensorTypeInfo(c.type).name);
    const int seqs = int(c.lengths.size());
    const int heads = c.kvHeads * c.group;
    const std::int32_t maxLength = *std::max_element(c.lengths.begin(), c.lengths.end());
    const int tableStride = (maxLength + c.blockSize - 1) / c.blockSize + 1;
    const int poolBlocks = tableStride * 2;
    const std::size_t rowValues = std::size_t(c.kvHeads) * c.headDim;
    const std::size_t poolValues = std::size_t(poolBlocks) * c.blockSize * rowValues;

    std::mt19937 rng(std::uint32_t(heads * 131 + c.headDim + maxLength));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> k(poolValues), v(poolValues), q(std::size_t(seqs) * heads * c.headDim);
    for (std::vector<float>* values : {&k, &v, &q})
        for (float& x : *values)
            x = normal(rng);
    if (c.type == TensorType::F16) {  // the reference sees the values the GPU sees
        for (std::vector<float>* values : {&k, &v})
            for (float& x : *values)
                x = fp16ToFp32(fp32ToFp16(x));
    }
    std::vector<std::int32_t> tables(std::size_t(seqs) * tableStride);
    for (int s = 0; s < seqs; ++s) {
        std::vector<std::int32_t> blocks(static_cast<std::size_t>(poolBlocks));
        std::iota(blocks.begin(), blocks.end(), 0);
        std::shuffle(blocks.begin(), blocks.end(), rng);
        std::copy_n(blocks.begin(), tableStride, tables.begin() + std::ptrdiff_t(s) * tableStride);
    }

    const bool half = c.type == TensorType::F16;
    const std::size_t elementBytes = half ? 2 : 4;
    std::vector<std::uint8_t> kBytes(poolValues * elementBytes), vBytes(kBytes.size());
    for (std::size_t i = 0; i < poolValues; ++i) {
        if (half) {
            const std::uint16_t kh = fp32ToFp16(k[i]), vh = fp32ToFp16(v[i]);
            std::memcpy(&kBytes[2 * i], &kh, 2);
            std::memcpy(&vBytes[2 * i], &vh, 2);
        } else {
            std::memcpy(&kBytes[4 * i], &k[i], 4);
            std::memcpy(&vBytes[4 * i], &v[i], 4);
        }
    }
    DeviceBuffer dk(kBytes.size()), dv(vBytes.size()), dq(q.size() * 4), dout(q.size() * 4),
        dtables(tables.size() * 4), dlengths(c.lengths.size() * 4),
        scratch(std::size_t(cuda::attendDecodeScratchBytes(seqs, heads, c.headDim, maxLength)));
    ASSERT_NE(scratch.get(), nullptr);
    ASSERT_EQ(cuda_test::upload(kBytes, dk), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(vBytes, dv), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(q, dq), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(tables, dtables), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(c.lengths, dlengths), cudaSuccess);
    const PagedKv kv{.keys = dk.get(),
                     .values = dv.get(),
                     .blockTable = static_cast<const std::int32_t*>(dtables.get()),
                     .blockSize = c.blockSize,
                     .kvHeads = c.kvHeads,
                     .headDim = c.headDim,
                     .type = c.type};
    const float scale = 1.0f / std::sqrt(float(c.headDim));
    ASSERT_EQ(cuda::attendDecode(dq.floats(), seqs, heads, kv, tableStride,
                                 static_cast<const std::int32_t*>(dlengths.get()), maxLength, scale,
                                 dout.floats(), scratch.get(), nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got(q.size());
    ASSERT_EQ(cuda_test::download(dout, got), cudaSuccess);

    for (int s = 0; s < seqs; ++s) {
        for (int h = 0; h < heads; ++h) {
            const int g = h / c.group;
            const float* qh = &q[(std::size_t(s) * heads + h) * c.headDim];
            const std::int32_t length = c.lengths[std::size_t(s)];
            std::vector<double> scores(static_cast<std::size_t>(length));
            std::vector<std::size_t> rows(static_cast<std::size_t>(length));
            double best = -INFINITY;
            for (std::int32_t t = 0; t < length; ++t) {
                const std::int32_t block = tables[std::size_t(s) * tableStride + t / c.blockSize];
                rows[std::size_t(t)] =
                    ((std::size_t(block) * c.blockSize + t % c.blockSize) * c.kvHeads + g) *
                    c.headDim;
                double dot = 0.0;
                for (int d = 0; d < c.headDim; ++d)
                    dot += double(qh[d]) * double(k[rows[std::size_t(t)] + d]);
                scores[std::size_t(t)] = dot * double(scale);
                best = std::max(best, scores[std::size_t(t)]);
            }
            double total = 0.0;
            for (double& x : scores)
                total += (x = std::exp(x - best));
            for (int d = 0; d < c.headDim; ++d) {
                double want = 0.0;
                for (std::int32_t t = 0; t < length; ++t)
                    want += scores[std::size_t(t)] * double(v[rows[std::size_t(t)] + d]);
                want = length > 0 ? want / total : 0.0;
                ASSERT_NEAR(got[(std::size_t(s) * heads + h) * c.headDim + d], want, 2e-5)
                    << "sequence " << s << " (length " << length << ") head " << h << " dim " << d;
            }
        }
    }
}

class AttentionDecodeCuda : public cuda_test::CudaTest {};

TEST_F(AttentionDecodeCuda, MatchesFloat64SoftmaxOverShuffledBlocks) {
    // Lengths around the 256-token chunks: empty, inside one chunk, exactly one, several.
    const std::vector<std::int32_t> lengths = {1, 0, 17, 256, 257, 1000, 2600};
    checkCase({2, 7, 128, 16, TensorType::F16, lengths});    // Qwen2.5-VL-7B's GQA group
    checkCase({4, 1, 64, 32, TensorType::F32, lengths});     // no grouping
    checkCase({1, 16, 256, 16, TensorType::F16, {3, 700}});  // the largest group and head
    checkCase({3, 4, 32, 1, TensorType::F32, {5, 40}});      // one token per block
}

// A prefill chunk of 300 tokens at positions 200..499 of one sequence, each attending causally
// through the same block table: against a float64 causal softmax.
TEST_F(AttentionDecodeCuda, PrefillChunkIsCausalOverOneBlockTable) {
    const int kvHeads = 2, group = 4, heads = kvHeads * group, headDim = 64, blockSize = 16;
    const int first = 200, tokens = 300, length = first + tokens;
    const int tableBlocks = length / blockSize + 1;
    std::mt19937 rng(21);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const std::size_t rowValues = std::size_t(kvHeads) * headDim;
    std::vector<float> k(std::size_t(tableBlocks) * blockSize * rowValues), v(k.size()),
        q(std::size_t(tokens) * heads * headDim);
    for (std::vector<float>* values : {&k, &v, &q})
        for (float& x : *values)
            x = normal(rng);
    std::vector<std::int32_t> table(static_cast<std::size_t>(tableBlocks));
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), rng);
    std::vector<std::int32_t> lengths(static_cast<std::size_t>(tokens));
    for (int i = 0; i < tokens; ++i)
        lengths[std::size_t(i)] = first + i + 1;
    DeviceBuffer dk(k.size() * 4), dv(v.size() * 4), dq(q.size() * 4), dout(q.size() * 4),
        dtable(table.size() * 4), dlengths(lengths.size() * 4),
        scratch(std::size_t(cuda::attendDecodeScratchBytes(tokens, heads, headDim, length)));
    ASSERT_EQ(cuda_test::upload(k, dk), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(v, dv), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(q, dq), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(table, dtable), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(lengths, dlengths), cudaSuccess);
    const PagedKv kv{.keys = dk.get(),
                     .values = dv.get(),
                     .blockTable = static_cast<const std::int32_t*>(dtable.get()),
                     .blockSize = blockSize,
                     .kvHeads = kvHeads,
                     .headDim = headDim,
                     .type = TensorType::F32};
    const float scale = 0.125f;
    ASSERT_EQ(cuda::attendPrefill(dq.floats(), tokens, heads, kv,
                                  static_cast<const std::int32_t*>(dlengths.get()), length, scale,
                                  dout.floats(), scratch.get(), nullptr),
              cudaSuccess);
    std::vector<float> got(q.size());
    ASSERT_EQ(cuda_test::download(dout, got), cudaSuccess);
    for (int i = 0; i < tokens; i += 7) {  // every 7th token keeps the float64 loop short
        for (int h = 0; h < heads; ++h) {
            const float* qh = &q[(std::size_t(i) * heads + h) * headDim];
            const int g = h / group;
            std::vector<double> p(static_cast<std::size_t>(lengths[std::size_t(i)]));
            double best = -INFINITY, total = 0.0;
            const auto row = [&](int t) {
                return ((std::size_t(table[std::size_t(t / blockSize)]) * blockSize +
                         std::size_t(t % blockSize)) *
                            kvHeads +
                        std::size_t(g)) *
                       headDim;
            };
            for (std::size_t t = 0; t < p.size(); ++t) {
                double dot = 0.0;
                for (int d = 0; d < headDim; ++d)
                    dot += double(qh[d]) * double(k[row(int(t)) + std::size_t(d)]);
                best = std::max(best, p[t] = dot * double(scale));
            }
            for (double& x : p)
                total += (x = std::exp(x - best));
            for (int d = 0; d < headDim; ++d) {
                double want = 0.0;
                for (std::size_t t = 0; t < p.size(); ++t)
                    want += p[t] * double(v[row(int(t)) + std::size_t(d)]);
                ASSERT_NEAR(got[(std::size_t(i) * heads + h) * headDim + d], want / total, 2e-5)
                    << "token " << i << " head " << h << " dim " << d;
            }
        }
    }
}

TEST(AttentionDecodeCudaArguments, RejectsShapesTheKernelDoesNotCover) {
    PagedKv kv;
    kv.kvHeads = 2;
    kv.headDim = 128;
    kv.blockSize = 16;
    float dummy[4] = {};
    const std::int32_t length = 0;
    const auto call = [&](int heads) {
        return cuda::attendDecode(dummy, 1, heads, kv, 1, &length, 0, 1.0f, dummy, dummy, nullptr);
    };
    EXPECT_EQ(call(3), cudaErrorInvalidValue);   // not a multiple of the KV heads
    EXPECT_EQ(call(34), cudaErrorInvalidValue);  // 17 query heads per KV head
    kv.headDim = 80;
    EXPECT_EQ(call(4), cudaErrorInvalidValue);  // not a multiple of 32
    kv.headDim = 128;
    kv.type = TensorType::Q8_0;
    EXPECT_EQ(call(4), cudaErrorInvalidValue);
    EXPECT_EQ(cuda::attendDecodeScratchBytes(2, 4, 128, 300), 2 * 4 * 2 * 130 * 4);
}

}  // namespace
}  // namespace iris::kernels
