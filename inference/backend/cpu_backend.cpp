#include "inference/backend/cpu_backend.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "inference/backend/cpu_sparse_attention.h"
#include "inference/models/model_parts.h"
#include "inference/models/rope_tables.h"
#include "kernels/rms_norm.h"

namespace iris::inference {
namespace {

class CpuBackend final : public DecoderBackend {
public:
    std::string name() const override { return "cpu"; }

    // Weights stay in the file's mapping; products with a faster packed layout get a copy.
    Status adoptLinear(Linear& w) override {
        m_runner.pack(w);
        return {};
    }
    Status adoptVector(const float*&, std::int64_t) override { return {}; }
    Status adoptEmbedding(const GgufTensor& table, std::int64_t width) override {
        m_embedding = &table;
        m_width = width;
        return {};
    }
    // The router and the experts multiply from the file's mapping, as they always have.
    Status adoptExperts(ExpertLayer&) override { return {}; }
    Status bindCache(KvCache& cache) override {
        m_cache = &cache;
        return {};
    }

    Status begin(std::span<const TokenInput> batch, KvCache& cache, const ModelConfig& config,
                 ThreadPool& pool) override {
        m_batch = batch;
        m_cache = &cache;
        m_pool = &pool;
        m_config = &config;
        m_rope.build(batch, config);
        if (cache.residency() != nullptr) cache.residency()->beginForward();
        return {};
    }
    float* scratch(Activations which, std::int64_t count) override {
        return growScratch(m_buffers[std::size_t(which)], count);
    }
    void embed(float* x) override { embedTokens(m_batch, *m_embedding, m_width, x); }
    void rmsNorm(const float* x, const float* w, float* y, std::int64_t rows, std::int64_t width,
                 float eps) override {
        rmsNormRows(x, w, y, rows, width, eps, *m_pool);
    }
    void linear(std::initializer_list<LinearRunner::Target> targets, const float* x,
                std::int64_t rows) override {
        m_runner.run(targets, x, rows, *m_pool);
    }
    void rope(float* x, int heads, int headDim) override {
        m_rope.apply(x, heads, headDim, *m_pool);
    }
    void writeKv(int layer, const float* k, const float* v, const float* indexKeys) override {
        inference::writeKv(layer, m_batch, k, v, indexKeys, *m_cache, *m_pool);
    }
    void attend(int layer, const float* q, int heads, float* out) override {
        // With KV tiers the sparse-attention layers live in the tiers' arena (MiniMax-M3 with
        // --dense-attention): every page the batch reads comes in first.
        if (m_cache->residency() != nullptr && m_config->indexerDim > 0 &&
            layer >= m_config->indexerFirstLayer)
            m_sparse.requireAll(layer, m_batch, *m_cache);
        attendDense(layer, m_batch, q, heads, *m_cache, *m_pool, out);
    }
    void attendSparse(int layer, const float* q, const float* indexQ, int heads,
                      const SparseAttention& msa, float* out, BlockChoices* chosen) override {
        m_sparse.attend(layer, m_batch, q, indexQ, heads, msa, *m_cache, *m_pool, out, chosen);
    }
    void gatedActivation(GateActivation kind, float* gate, const float* up,
                         std::int64_t n) override {
        parallelItems(*m_pool, n, 1, [&](std::int64_t begin, std::int64_t end) {
            applyGate(kind, gate + begin, up + begin, end - begin);
        });
    }
    void addResidual(float* x, const float* y, std::int64_t n) override {
        inference::addResidual(x, y, n, *m_pool);
    }
    void zero(float* x, std::int64_t n) override { std::fill(x, x + n, 0.0f); }
    void mixtureOfExperts(const ExpertLayer& layer, const ExpertRouting& routing,
                          GateActivation activation, const float* x, std::int64_t rows, float* y,
                          int* experts, float* weights) override {
        if (experts == nullptr || weights == nullptr) {
            m_routed.resize(std::size_t(rows * routing.used));
            experts = m_routed.data();
            weights = growScratch(m_routingWeights, rows * routing.used);
        }
        m_experts.accumulate(layer, routing, activation, x, rows, y, experts, weights, m_runner,
                             *m_pool);
    }
    void download(const float* from, std::int64_t n, float* to) override {
        std::memcpy(to, from, std::size_t(n) * sizeof(float));
    }
    Status finish(const float* x, const float* norm, float eps, const Linear& output,
                  std::vector<float>& logits) override {
        // A page KV tiers could not bring in (its layer's attention read NaN): no logits.
        IRIS_RETURN_IF_ERROR(m_sparse.takeStatus());
        appendLogits(m_batch, x, norm, eps, output, m_runner, *m_pool, m_rows, logits);
        return {};
    }

private:
    LinearRunner m_runner;  // owns the packed copies of the weights
    RopeTables m_rope;
    const GgufTensor* m_embedding = nullptr;
    std::int64_t m_width = 0;
    std::array<std::vector<float>, std::size_t(Activations::Count)> m_buffers;
    std::vector<float> m_rows;
    CpuSparseAttention m_sparse;
    MixtureOfExperts m_experts;
    std::vector<int> m_routed;  // the routing when the caller does not keep it
    std::vector<float> m_routingWeights;
    // The pass in progress (begin() to finish()).
    std::span<const TokenInput> m_batch;
    KvCache* m_cache = nullptr;
    ThreadPool* m_pool = nullptr;
    const ModelConfig* m_config = nullptr;
};

}  // namespace

std::unique_ptr<DecoderBackend> makeCpuBackend() {
    return std::make_unique<CpuBackend>();
}

}  // namespace iris::inference
