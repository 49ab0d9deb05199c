#pragma once
// The weight matrices every model multiplies by (language models, MiniMax-M3's experts, the
// vision towers) and the one runner that multiplies them on the CPU. A second backend plugs in
// under LinearRunner: models describe products as (Linear, x, y) and never call a matmul kernel.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "base/reserved_memory.h"
#include "inference/thread_pool.h"
#include "kernels/tensor_type.h"

namespace iris::inference {

// y = x W^T + b. W is `out` rows of `in` values of `type` (a PyTorch Linear [out, in], ggml
// shape {in, out}), usually in the GGUF file's mapping; bias is `out` floats or null. `packed`
// is the same matrix in the CPU's faster layout (kernels::packWeights) when a runner made one.
struct Linear {
    kernels::TensorType type = kernels::TensorType::F32;
    const void* data = nullptr;
    std::int64_t in = 0;
    std::int64_t out = 0;
    const float* bias = nullptr;
    const void* packed = nullptr;
    // What a backend holds of it: the rows and the bias.
    std::int64_t bytes() const {
        return kernels::rowBytes(type, in) * out +
               (bias != nullptr ? out * std::int64_t(sizeof(float)) : 0);
    }
};

// Whether `type` is a float type (f32, f16, bf16) rather than a quantised one.
inline bool isFloatType(kernels::TensorType type) {
    return type == kernels::TensorType::F32 || type == kernels::TensorType::F16 ||
           type == kernels::TensorType::BF16;
}

// A 3-D expert tensor {in, out, experts} (a mixture of experts' gate, up or down matrices):
// expert e is the `out` rows starting at row e * out.
struct ExpertStack {
    kernels::TensorType type = kernels::TensorType::F32;
    const void* data = nullptr;
    std::int64_t in = 0;
    std::int64_t out = 0;
    std::int64_t experts = 0;
    Linear expert(std::int64_t e) const;
    std::int64_t bytes() const { return kernels::rowBytes(type, in) * out * experts; }
};

// Products of activations with Linear weights. Not reentrant (one per model: it keeps the
// prepared activations and owns the packed copies); each run parallelises over output rows
// with the pool.
class LinearRunner {
public:
    struct Target {
        const Linear* weights;
        float* y;  // rows x weights->out, row-major
    };
    // y = x W^T + b for every target; all targets read the same x (rows x in, one `in`). x is
    // prepared once per activation format and one parallel pass covers all targets' outputs,
    // so projections that share an input (q, k, v; gate, up) cost one pass.
    void run(std::initializer_list<Target> targets, const float* x, std::int64_t rows,
             ThreadPool& pool);
    void run(const Linear& w, const float* x, std::int64_t rows, float* y, ThreadPool& pool) {
        run({{&w, y}}, x, rows, pool);
    }
    // Points w.packed at a copy of w in the CPU's faster layout when there is one for its type
    // and its rows split into whole groups; the copy lives as long as this runner.
    void pack(Linear& w);

private:
    // `bytes` of packing space, 64-byte aligned, for as long as this runner lives.
    std::byte* packingSpace(std::int64_t bytes);

    std::vector<std::byte> m_prepared[3];  // one per kernels::ActivationFormat
    // The packed copies, on huge pages (decode streams them every token): small matrices share
    // chunks, so that they too sit on whole 2 MiB pages rather than on the 4 KiB pages of a
    // buffer's partial last one (a quarter of a Q4_K_M Qwen2.5-0.5B's packed bytes were).
    std::vector<ReservedMemory> m_packed;
    std::int64_t m_chunkUsed = 0;  // of m_packed.back() when it is a shared chunk
    std::int64_t m_chunkSize = 0;
};

}  // namespace iris::inference
