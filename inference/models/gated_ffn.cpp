#include "inference/models/gated_ffn.h"

#include <algorithm>
#include <cmath>

#include "inference/models/model_parts.h"
#include "kernels/activation.h"

namespace iris::inference {

void swigluOai(const float* gate, const float* up, float* out, std::int64_t n) {
    constexpr float kAlpha = 1.702f, kLimit = 7.0f;
    for (std::int64_t i = 0; i < n; ++i) {
        const float g = std::min(gate[i], kLimit);
        const float u = std::clamp(up[i], -kLimit, kLimit);
        out[i] = g / (1.0f + std::exp(-kAlpha * g)) * (u + 1.0f);
    }
}

void applyGate(GateActivation activation, float* gate, const float* up, std::int64_t n) {
    switch (activation) {
        case GateActivation::SwiGlu:
            kernels::swiglu(gate, up, gate, n);
            break;
        case GateActivation::SwiGluOai:
            swigluOai(gate, up, gate, n);
            break;
    }
}

void GatedFfn::run(const Linear& gate, const Linear& up, const Linear& down,
                   GateActivation activation, const float* x, std::int64_t rows, float* y,
                   LinearRunner& runner, ThreadPool& pool) {
    const std::int64_t n = rows * gate.out;
    float* g = growScratch(m_gate, n);
    float* u = growScratch(m_up, n);
    runner.run({{&gate, g}, {&up, u}}, x, rows, pool);
    applyGate(activation, g, u, n);
    runner.run(down, g, rows, y, pool);
}

}  // namespace iris::inference
