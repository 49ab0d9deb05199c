// The decoder's backend seam (inference/backend/backend.h) on the CPU: the model running through
// DecoderBackend must give bit for bit the logits of the CPU kernels composed by hand in the
// order the decoder used before the seam existed (model_parts.h, linear.h, rope_tables.h). A
// seam that reordered, fused or skipped a step would change the last bits and fail here, where
// the float64 comparisons of decoder_test.cpp (tolerance 1e-4) would not notice.
#include <cstring>

#include <gtest/gtest.h>

#include "inference/models/decoder.h"
#include "inference/models/model_parts.h"
#include "inference/models/rope_tables.h"
#include "kernels/activation.h"
#include "kernels/rms_norm.h"
#include "tests/inference/models/chunked_logits.h"
#include "tests/inference/models/loaded_model.h"
#include "tests/inference/models/tiny_model.h"

namespace iris::inference {
namespace {

using kernels::TensorType;
using testing::TinyModelSpec;

// The pre-seam DecoderModel::forward, written out with the CPU parts.
class HandComposedDecoder {
public:
    HandComposedDecoder(const ModelConfig& config, DecoderWeights weights)
        : m_config(config), m_weights(std::move(weights)) {
        m_runner.pack(m_weights.output);
        for (DecoderLayer& layer : m_weights.layers)
            for (Linear* w :
                 {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down})
                m_runner.pack(*w);
    }

    void forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                 std::vector<float>& logits) {
        const ModelConfig& c = m_config;
        const std::int64_t T = std::int64_t(batch.size()), D = c.hiddenSize, H = c.heads,
                           G = c.kvHeads, hd = c.headDim, F = c.ffnSize;
        std::vector<float> x(std::size_t(T * D)), norm(x.size()), q(std::size_t(T * H * hd)),
            k(std::size_t(T * G * hd)), v(k.size()), attn(q.size()), gate(std::size_t(T * F)),
            up(gate.size()), rows;
        embedTokens(batch, *m_weights.tokenEmbedding, D, x.data());
        RopeTables rope;
        rope.build(batch, c);
        for (std::size_t l = 0; l < m_weights.layers.size(); ++l) {
            const DecoderLayer& layer = m_weights.layers[l];
            kernels::rmsNorm(x.data(), D, layer.attnNorm, norm.data(), D, T, D, c.rmsEps);
            m_runner.run({{&layer.q, q.data()}, {&layer.k, k.data()}, {&layer.v, v.data()}},
                         norm.data(), T, pool);
            if (layer.qNorm != nullptr)
                kernels::rmsNorm(q.data(), hd, layer.qNorm, q.data(), hd, T * H, hd, c.rmsEps);
            if (layer.kNorm != nullptr)
                kernels::rmsNorm(k.data(), hd, layer.kNorm, k.data(), hd, T * G, hd, c.rmsEps);
            rope.apply(q.data(), int(H), int(hd));
            rope.apply(k.data(), int(G), int(hd));
            writeKv(int(l), batch, k.data(), v.data(), nullptr, cache);
            attendDense(int(l), batch, q.data(), int(H), cache, pool, attn.data());
            m_runner.run(layer.o, attn.data(), T, norm.data(), pool);
            addResidual(x.data(), norm.data(), T * D);
            kernels::rmsNorm(x.data(), D, layer.ffnNorm, norm.data(), D, T, D, c.rmsEps);
            m_runner.run({{&layer.gate, gate.data()}, {&layer.up, up.data()}}, norm.data(), T,
                         pool);
            kernels::swiglu(gate.data(), up.data(), gate.data(), T * F);
            m_runner.run(layer.down, gate.data(), T, norm.data(), pool);
            addResidual(x.data(), norm.data(), T * D);
        }
        appendLogits(batch, x.data(), m_weights.outputNorm, c.rmsEps, m_weights.output, m_runner,
                     pool, rows, logits);
    }

private:
    ModelConfig m_config;
    DecoderWeights m_weights;
    LinearRunner m_runner;
};

struct SeamCase {
    std::string arch;
    TensorType weights;
};

class CpuBackendSeam : public ::testing::TestWithParam<SeamCase> {};

TEST_P(CpuBackendSeam, LogitsAreBitIdenticalToTheHandComposedParts) {
    TinyModelSpec spec;
    spec.arch = GetParam().arch;
    spec.weightType = GetParam().weights;
    spec.headDim = 32;
    spec.hidden = 128;
    spec.ffn = 256;
    spec.sections = {4, 6, 6, 0};  // qwen2vl: the head's 16 frequency pairs
    const auto loaded = testing::loadModelBytes(testing::makeTinyModel(spec), "tiny.gguf");
    ASSERT_TRUE(loaded->model);
    Model& model = *loaded->model;
    const ModelConfig& config = model.config();
    Result<DecoderWeights> weights = bindDecoderWeights(
        *loaded->file, config, {.qkvBias = spec.arch != "qwen3", .qkNorm = spec.arch == "qwen3"});
    ASSERT_TRUE(weights) << weights.status().message();
    HandComposedDecoder reference(config, std::move(*weights));

    std::vector<std::int32_t> tokens(19);
    for (std::size_t i = 0; i < tokens.size(); ++i)
        tokens[i] = std::int32_t((i * 29 + 3) % std::size_t(spec.vocab));
    auto positions = testing::textPositions(tokens.size());
    if (spec.arch == "qwen2vl") {  // an image's (t, h, w) positions in the middle
        for (std::size_t i = 4; i < 10; ++i)
            positions[i] = {4, std::int32_t(4 + (i - 4) / 3), std::int32_t(4 + (i - 4) % 3), 0};
    }
    // A prefill chunk (tensor paths, tiles of several tokens) and then token-by-token decoding.
    for (std::size_t chunk : {tokens.size(), std::size_t(1), std::size_t(7)}) {
        const auto viaModel =
            testing::chunkedLogits(model, tokens, positions, {chunk, TensorType::F16, 2, {}, {}});
        const auto byHand =
            testing::chunkedLogits(model, tokens, positions,
                                   {chunk,
                                    TensorType::F16,
                                    2,
                                    {},
                                    [&](std::span<const TokenInput> batch, KvCache& cache,
                                        ThreadPool& pool, std::vector<float>& logits) {
                                        reference.forward(batch, cache, pool, logits);
                                        return Status();
                                    }});
        ASSERT_EQ(viaModel.size(), byHand.size());
        EXPECT_EQ(0, std::memcmp(viaModel.data(), byHand.data(), viaModel.size() * sizeof(float)))
            << "chunk " << chunk;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Tiny, CpuBackendSeam,
    ::testing::Values(SeamCase{"qwen2", TensorType::F32}, SeamCase{"qwen2", TensorType::Q8_0},
                      SeamCase{"qwen3", TensorType::F16}, SeamCase{"qwen2vl", TensorType::Q4_0}),
    [](const auto& p) {
        return p.param.arch + "_" + std::string(kernels::tensorTypeInfo(p.param.weights).name);
    });

}  // namespace
}  // namespace iris::inference
