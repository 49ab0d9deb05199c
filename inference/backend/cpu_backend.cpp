#include "inference/backend/cpu_backend.h"

#include <algorithm>
#include <array>
#include <functional>

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
        inParallel(rows, width, [&](std::int64_t begin, std::int64_t end) {
            kernels::rmsNorm(x + begin * width, width, w, y + begin * width, width, end - begin,
                             width, eps);
        });
    }
    void linear(std::initializer_list<LinearRunner::Target> targets, const float* x,
                std::int64_t rows) override {
        m_runner.run(targets, x, rows, *m_pool);
    }
    void rope(float* x, int heads, int headDim) override {
        inParallel(std::int64_t(m_batch.size()), std::int64_t(heads) * headDim,
                   [&](std::int64_t begin, std::int64_t end) {
                       m_rope.apply(x, heads, headDim, begin, end);
                   });
    }
    void writeKv(int layer, const float* k, const float* v) override {
        const std::int64_t width =
            std::int64_t(m_cache->options().kvHeads) * m_cache->options().headDim;
        inParallel(
            std::int64_t(m_batch.size()), 2 * width, [&](std::int64_t begin, std::int64_t end) {
                inference::writeKv(layer,
                                   m_batch.subspan(std::size_t(begin), std::size_t(end - begin)),
                                   k + begin * width, v + begin * width, nullptr, *m_cache);
            });
    }
    void attend(int layer, const float* q, int heads, float* out) override {
        attendDense(layer, m_batch, q, heads, *m_cache, *m_pool, out);
    }
    void gatedActivation(GateActivation kind, float* gate, const float* up,
                         std::int64_t n) override {
        inParallel(n, 1, [&](std::int64_t begin, std::int64_t end) {
            applyGate(kind, gate + begin, up + begin, end - begin);
        });
    }
    void addResidual(float* x, const float* y, std::int64_t n) override {
        inParallel(n, 1, [&](std::int64_t begin, std::int64_t end) {
            inference::addResidual(x + begin, y + begin, end - begin);
        });
    }
    Status finish(const float* x, const float* norm, float eps, const Linear& output,
                  std::vector<float>& logits) override {
        appendLogits(m_batch, x, norm, eps, output, m_runner, *m_pool, m_rows, logits);
        return {};
    }

private:
    // Splits an element-wise pass over `items` (rows of `width` values each) between the pool's
    // threads when it is a prefill chunk's worth; a decode step's few rows stay on this thread,
    // where a parallelFor would cost more than the pass. Each item's values are computed alone,
    // so the bits are the same either way.
    void inParallel(std::int64_t items, std::int64_t width,
                    const std::function<void(std::int64_t, std::int64_t)>& fn) {
        constexpr std::int64_t kParallelValues = std::int64_t(1) << 16;
        constexpr std::int64_t kGrainValues = std::int64_t(1) << 12;
        if (items * width < kParallelValues || m_pool->threads() == 1) {
            fn(0, items);
            return;
        }
        m_pool->parallelFor(items, std::max<std::int64_t>(1, kGrainValues / width), fn);
    }

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
