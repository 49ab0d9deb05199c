#pragma once
// The gated feed-forward block of the language models, y = down(act(gate(x), up(x))): the
// Qwen2 family's SwiGLU FFN, MiniMax-M3's dense FFN, shared expert and each routed expert. Part
// of the model parts (model_parts.h): a second backend runs it on its device.

#include <cstdint>
#include <vector>

#include "inference/models/linear.h"
#include "inference/thread_pool.h"

namespace iris::inference {

enum class GateActivation {
    SwiGlu,     // silu(g) * u
    SwiGluOai,  // MiniMax-M3's swigluoai (docs/minimax-m3.md 3.7): see swigluOai
};

// swigluoai, element-wise: g' = min(g, 7), u' = clamp(u, -7, 7),
// out = g' * sigmoid(1.702 g') * (u' + 1). out may alias gate or up.
void swigluOai(const float* gate, const float* up, float* out, std::int64_t n);

// gate[i] = act(gate[i], up[i]) for i < n.
void applyGate(GateActivation activation, float* gate, const float* up, std::int64_t n);

// Not reentrant: keeps its (rows x width) intermediates between calls.
class GatedFfn {
public:
    // y (rows x down.out) = down(act(x gate^T, x up^T)) for x (rows x gate.in); gate and up have
    // the same shape. y may be x (x is read before y is written).
    void run(const Linear& gate, const Linear& up, const Linear& down, GateActivation activation,
             const float* x, std::int64_t rows, float* y, LinearRunner& runner, ThreadPool& pool);

private:
    std::vector<float> m_gate, m_up;
};

}  // namespace iris::inference
