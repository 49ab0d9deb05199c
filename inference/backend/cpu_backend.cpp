#include "inference/backend/cpu_backend.h"

#include <array>

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
    Status bindCache(KvCache& cache) override {
        m_cache = &cache;
        return {};
    }

    Status begin(std::span<const TokenInput> batch, KvCache& cache, const ModelConfig& config,
                 ThreadPool& pool) override {
        m_batch = batch;
        m_cache = &cache;
        m_pool = &pool;
        m_rope.build(batch, config);
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
    void writeKv(int layer, const float* k, const float* v) override {
        inference::writeKv(layer, m_batch, k, v, nullptr, *m_cache, *m_pool);
    }
    void attend(int layer, const float* q, int heads, float* out) override {
        attendDense(layer, m_batch, q, heads, *m_cache, *m_pool, out);
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
    Status finish(const float* x, const float* norm, float eps, const Linear& output,
                  std::vector<float>& logits) override {
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
    // The pass in progress (begin() to finish()).
    std::span<const TokenInput> m_batch;
    KvCache* m_cache = nullptr;
    ThreadPool* m_pool = nullptr;
};

}  // namespace

std::unique_ptr<DecoderBackend> makeCpuBackend() {
    return std::make_unique<CpuBackend>();
}

}  // namespace iris::inference
