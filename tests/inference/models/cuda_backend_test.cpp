// Whole models on the CUDA backend against the same models on the CPU backend: the tiny random
// qwen2, qwen3 and qwen2vl files (tiny_model.h), prefill chunks (tensor-core products, prefill
// attention), token-by-token decoding (decode products, decode attention) and greedy generation.
// Skip with the reason where no GPU can be used (cuda_test_support.h).
//
// Tolerances, relative to the largest |logit| of the CPU's logits:
//  - decode steps with f32 weights: the products take the f32 activations as they are (no
//    rounding), so only the order of f32 sums differs: 1e-4 (the CPU's own f32 vs float64
//    distance is 1e-6 in decoder_test.cpp, two layers of reordered sums stay far below 1e-4).
//  - prefill chunks: matmulPrefill rounds activations and weights to bf16 (8 significant bits,
//    relative error 2^-9 each); over two layers of four products plus the output projection the
//    logits move by about 1% of their range on these random models: 3e-2.
//  - q8_0 weights in decode: activations are quantised to 8 bits per 32 values on both backends
//    (the CPU's kernels do the same for quantised weights), so the error is the f32 sum order
//    plus differently rounded activation scales: 1e-2.
// Greedy tokens must be equal for f32 weights when every token goes through the decode path.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "inference/models/minimax_m3.h"
#include "inference/models/model.h"
#include "tests/inference/device_sampling.h"
#include "tests/inference/models/chunked_logits.h"
#include "tests/inference/models/loaded_model.h"
#include "tests/inference/models/minimax_m3_reference.h"
#include "tests/inference/models/tiny_model.h"
#include "tests/kernels/cuda_test_support.h"

namespace iris::inference {
namespace {

using kernels::TensorType;
using testing::TinyModelSpec;

struct TwoModels {
    std::unique_ptr<testing::LoadedModel> cpu;  // holds the file both models read
    std::unique_ptr<Model> cuda;
};

TwoModels loadBoth(const TinyModelSpec& spec) {
    TwoModels m;
    m.cpu = testing::loadModelBytes(testing::makeTinyModel(spec), "tiny.gguf");
    if (!m.cpu->model) return m;
    Result<std::unique_ptr<Model>> cuda = createModel(*m.cpu->file, ModelBackend{true, 0, 64});
    EXPECT_TRUE(cuda) << cuda.status().message();
    if (cuda) m.cuda = std::move(*cuda);
    return m;
}

TinyModelSpec cudaShapedSpec(const std::string& arch, TensorType weights) {
    TinyModelSpec spec;
    spec.arch = arch;
    spec.weightType = weights;
    spec.hidden = 128;
    spec.heads = 4;
    spec.kvHeads = 2;
    spec.headDim = 32;  // the CUDA attention takes multiples of 32
    spec.ffn = 256;
    spec.sections = {4, 6, 6, 0};  // qwen2vl: 16 frequency pairs
    return spec;
}

// Logits of every token fed in chunks of `chunk`, on an f16 cache as the engine's default;
// `images` (may be empty) injects embeddings.
std::vector<float> runChunks(Model& model, const std::vector<std::int32_t>& tokens,
                             const std::vector<std::array<std::int32_t, 4>>& positions,
                             const std::vector<const float*>& images, std::size_t chunk) {
    return testing::chunkedLogits(model, tokens, positions,
                                  {chunk, TensorType::F16, 2, images, {}});
}

using testing::relativeError;

struct CudaCase {
    std::string arch;
    TensorType weights;
    double decodeTolerance;
};

class CudaBackendMatchesCpu : public kernels::cuda_test::CudaTest,
                              public ::testing::WithParamInterface<CudaCase> {};

TEST_P(CudaBackendMatchesCpu, PrefillAndDecodeLogits) {
    const CudaCase& c = GetParam();
    const TinyModelSpec spec = cudaShapedSpec(c.arch, c.weights);
    TwoModels m = loadBoth(spec);
    ASSERT_TRUE(m.cpu->model && m.cuda);
    std::vector<std::int32_t> tokens(23);
    for (std::size_t i = 0; i < tokens.size(); ++i)
        tokens[i] = std::int32_t((i * 37 + 11) % std::size_t(spec.vocab));
    auto positions = testing::textPositions(tokens.size());
    // qwen2vl: tokens 5..16 are a 3 x 4 image, with their own (t, h, w) positions and input
    // vectors (as the CPU vision tower would hand them over), uploaded by the CUDA backend.
    std::vector<float> imageRows;
    std::vector<const float*> images;
    if (c.arch == "qwen2vl") {
        imageRows.resize(std::size_t(12 * spec.hidden));
        for (std::size_t i = 0; i < imageRows.size(); ++i)
            imageRows[i] = 0.5f * std::sin(0.37f * float(i));
        images.assign(tokens.size(), nullptr);
        for (std::size_t i = 5; i < 17; ++i) {
            positions[i] = {5, std::int32_t(5 + (i - 5) / 4), std::int32_t(5 + (i - 5) % 4), 0};
            images[i] = imageRows.data() + (i - 5) * std::size_t(spec.hidden);
        }
        for (std::size_t i = 17; i < tokens.size(); ++i)
            positions[i].fill(std::int32_t(9 + i - 17));
    }
    const auto cpuPrefill = runChunks(*m.cpu->model, tokens, positions, images, 16);
    const auto gpuPrefill = runChunks(*m.cuda, tokens, positions, images, 16);
    ASSERT_EQ(cpuPrefill.size(), gpuPrefill.size());
    EXPECT_LT(relativeError(gpuPrefill, cpuPrefill), 3e-2) << "prefill chunks of 16";
    const auto cpuDecode = runChunks(*m.cpu->model, tokens, positions, images, 1);
    const auto gpuDecode = runChunks(*m.cuda, tokens, positions, images, 1);
    EXPECT_LT(relativeError(gpuDecode, cpuDecode), c.decodeTolerance) << "token by token";
}

INSTANTIATE_TEST_SUITE_P(Tiny, CudaBackendMatchesCpu,
                         ::testing::Values(CudaCase{"qwen2", TensorType::F32, 1e-4},
                                           CudaCase{"qwen3", TensorType::F32, 1e-4},
                                           CudaCase{"qwen2vl", TensorType::F32, 1e-4},
                                           CudaCase{"qwen2", TensorType::Q8_0, 1e-2},
                                           CudaCase{"qwen3", TensorType::Q4_0, 1e-2}),
                         [](const auto& p) {
                             return p.param.arch + "_" +
                                    std::string(kernels::tensorTypeInfo(p.param.weights).name);
                         });

class CudaBackendGreedy : public kernels::cuda_test::CudaTest {};

// Greedy generation, one token per step on both backends: the same tokens.
TEST_F(CudaBackendGreedy, SameTokensAsTheCpuForF32Weights) {
    for (const char* arch : {"qwen2", "qwen3"}) {
        const TinyModelSpec spec = cudaShapedSpec(arch, TensorType::F32);
        TwoModels m = loadBoth(spec);
        ASSERT_TRUE(m.cpu->model && m.cuda);
        std::vector<std::int32_t> generated[2];
        Model* models[2] = {m.cpu->model.get(), m.cuda.get()};
        for (int b = 0; b < 2; ++b) {
            ThreadPool pool(2);
            Result<KvCache> cache =
                KvCache::create(models[b]->kvCacheOptions(16, 16, TensorType::F16));
            ASSERT_TRUE(cache);
            const SequenceId seq = cache->newSequence();
            std::int32_t token = 7;
            for (std::int64_t i = 0; i < 40; ++i) {
                ASSERT_TRUE(cache->extend(seq, i + 1).isOk());
                const TokenInput in{
                    token,
                    seq,
                    i,
                    {std::int32_t(i), std::int32_t(i), std::int32_t(i), std::int32_t(i)},
                    true};
                std::vector<float> logits;
                ASSERT_TRUE(models[b]->forward({&in, 1}, *cache, pool, logits).isOk());
                token =
                    std::int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
                generated[b].push_back(token);
            }
        }
        EXPECT_EQ(generated[0], generated[1]) << arch;
    }
}

// Copy on write of a shared partial block must happen in the device pool too (KvPoolMirror):
// a fork that extends a shared block and writes into it reads its own copy afterwards.
TEST_F(CudaBackendGreedy, ForkedSequencesKeepTheirOwnKv) {
    const TinyModelSpec spec = cudaShapedSpec("qwen2", TensorType::F32);
    TwoModels m = loadBoth(spec);
    ASSERT_TRUE(m.cpu->model && m.cuda);
    std::vector<float> results[2];
    Model* models[2] = {m.cpu->model.get(), m.cuda.get()};
    for (int b = 0; b < 2; ++b) {
        ThreadPool pool(2);
        Result<KvCache> cache = KvCache::create(models[b]->kvCacheOptions(16, 16, TensorType::F16));
        ASSERT_TRUE(cache);
        const SequenceId a = cache->newSequence();
        ASSERT_TRUE(cache->extend(a, 10).isOk());
        std::vector<TokenInput> batch;
        for (std::int32_t i = 0; i < 10; ++i)
            batch.push_back({i + 3, a, i, {i, i, i, i}, false});
        ASSERT_TRUE(models[b]->forward(batch, *cache, pool, results[b]).isOk());
        const SequenceId fork = cache->fork(a, 6);  // shares the partial first block
        ASSERT_TRUE(cache->extend(fork, 7).isOk());
        ASSERT_TRUE(cache->extend(a, 11).isOk());
        const TokenInput two[2] = {{50, fork, 6, {6, 6, 6, 6}, true},
                                   {60, a, 10, {10, 10, 10, 10}, true}};
        ASSERT_TRUE(models[b]->forward(two, *cache, pool, results[b]).isOk());
    }
    EXPECT_LT(relativeError(results[1], results[0]), 1e-4);
}

// Sampling's device half (penalties, then the k best) on the CUDA backend against the same on
// the CPU's logits (tests/inference/device_sampling.h), in a decode step of two sequences: the
// same best tokens in the same order, their logits within the decode tolerance.
TEST_F(CudaBackendGreedy, CandidatesOnTheDeviceAreTheBestOfTheCpuLogits) {
    const TinyModelSpec spec = cudaShapedSpec("qwen2", TensorType::F32);
    TwoModels m = loadBoth(spec);
    ASSERT_TRUE(m.cpu->model && m.cuda);
    ASSERT_TRUE(m.cuda->samplesOnDevice());
    std::vector<CandidateRequest> requests(2);
    requests[0] = {8, 1.0f, 0.0f, 0.0f, {}};
    requests[1] = {40, 1.3f, 0.5f, 0.25f, {{3, 2}, {17, 1}, {60, 4}}};
    std::vector<float> logits;
    Candidates got;
    Model* models[2] = {m.cpu->model.get(), m.cuda.get()};
    for (int b = 0; b < 2; ++b) {
        ThreadPool pool(2);
        Result<KvCache> cache = KvCache::create(models[b]->kvCacheOptions(16, 16, TensorType::F16));
        ASSERT_TRUE(cache);
        std::vector<TokenInput> batch;
        for (SequenceId s : {cache->newSequence(), cache->newSequence()}) {
            ASSERT_TRUE(cache->extend(s, 1).isOk());
            batch.push_back({std::int32_t(5 + 40 * s), s, 0, {0, 0, 0, 0}, true});
        }
        const Status status =
            b == 0 ? models[b]->forward(batch, *cache, pool, logits)
                   : models[b]->forwardCandidates(batch, *cache, pool, requests, got);
        ASSERT_TRUE(status.isOk()) << status.message();
    }
    Candidates want;
    const auto vocabulary = std::ptrdiff_t(spec.vocab);
    for (std::size_t r = 0; r < requests.size(); ++r) {
        const auto row = logits.begin() + std::ptrdiff_t(r) * vocabulary;
        testing::appendCandidates({row, row + vocabulary}, requests[r], want);
    }
    ASSERT_EQ(got.ids.size(), want.ids.size());
    EXPECT_EQ(std::vector<std::int32_t>(got.ids.begin(), got.ids.begin() + 4),
              std::vector<std::int32_t>(want.ids.begin(), want.ids.begin() + 4));
    EXPECT_LT(relativeError(got.logits, want.logits), 1e-4);
}

// MiniMax-M3: a dense leading layer, then MSA and the shared plus routed experts (top-2 of 4),
// 150 tokens so that block selection matters from token 32 on. Per run: the logits and every
// token's experts and selection blocks.
struct M3Run {
    std::vector<float> logits;
    std::vector<std::vector<int>> experts;          // [layer * tokens + t]
    std::vector<std::vector<std::int32_t>> blocks;  // [(layer * tokens + t) * G + g]
};

M3Run runM3(Model& model, const std::vector<std::int32_t>& tokens, std::size_t chunk) {
    M3Run run;
    ThreadPool pool(2);
    Result<KvCache> cache = KvCache::create(
        model.kvCacheOptions(std::int64_t(tokens.size()) / 16 + 2, 16, TensorType::F16));
    EXPECT_TRUE(cache) << cache.status().message();
    if (!cache) return run;
    const SequenceId seq = cache->newSequence();
    MiniMaxM3Trace trace;
    traceMiniMaxM3(model, &trace);
    for (std::size_t begin = 0; begin < tokens.size(); begin += chunk) {
        const std::size_t end = std::min(tokens.size(), begin + chunk);
        EXPECT_TRUE(cache->extend(seq, std::int64_t(end)).isOk());
        std::vector<TokenInput> batch;
        for (std::size_t i = begin; i < end; ++i) {
            const auto p = std::int32_t(i);
            batch.push_back({tokens[i], seq, std::int64_t(i), {p, p, p, 0}, true});
        }
        const Status status = model.forward(batch, *cache, pool, run.logits);
        EXPECT_TRUE(status.isOk()) << status.message();
        for (const auto& layer : trace.experts)
            run.experts.insert(run.experts.end(), layer.begin(), layer.end());
        for (const auto& layer : trace.blocks)
            for (const auto& token : layer)
                run.blocks.insert(run.blocks.end(), token.begin(), token.end());
    }
    traceMiniMaxM3(model, nullptr);
    return run;
}

class CudaBackendMiniMaxM3 : public kernels::cuda_test::CudaTest {};

// Decode: f32 weights and activations on both sides, so the routing and the block choices are
// the same and the logits within the f32 sum order's reach (1e-4, as the dense models). Prefill
// chunks round products to bf16, which can flip a near tie of the index scores or the router:
// nearly all choices agree and the logits within the bf16 bound of the dense models (3e-2).
TEST_F(CudaBackendMiniMaxM3, MatchesTheCpuInDecodeAndPrefillChunks) {
    const testing::M3Spec spec;
    auto cpu = testing::loadModelBytes(testing::makeM3Model(spec), "m3.gguf");
    ASSERT_TRUE(cpu->model);
    Result<std::unique_ptr<Model>> cuda = createModel(*cpu->file, ModelBackend{true, 0, 64});
    ASSERT_TRUE(cuda) << cuda.status().message();
    std::vector<std::int32_t> tokens(150);
    for (std::size_t i = 0; i < tokens.size(); ++i)
        tokens[i] = std::int32_t((i * 29 + 3) % std::size_t(spec.vocab));
    const M3Run cpuDecode = runM3(*cpu->model, tokens, 1), gpuDecode = runM3(**cuda, tokens, 1);
    EXPECT_EQ(gpuDecode.experts, cpuDecode.experts);
    EXPECT_EQ(gpuDecode.blocks, cpuDecode.blocks);
    EXPECT_LT(relativeError(gpuDecode.logits, cpuDecode.logits), 1e-4);
    const M3Run cpuPrefill = runM3(*cpu->model, tokens, 48), gpuPrefill = runM3(**cuda, tokens, 48);
    ASSERT_EQ(gpuPrefill.blocks.size(), cpuPrefill.blocks.size());
    std::size_t same = 0;
    for (std::size_t i = 0; i < cpuPrefill.blocks.size(); ++i)
        same += gpuPrefill.blocks[i] == cpuPrefill.blocks[i] ? 1 : 0;
    EXPECT_GE(double(same), 0.95 * double(cpuPrefill.blocks.size()));
    EXPECT_LT(relativeError(gpuPrefill.logits, cpuPrefill.logits), 3e-2);
}

}  // namespace
}  // namespace iris::inference
