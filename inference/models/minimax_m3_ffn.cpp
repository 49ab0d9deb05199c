// MiniMax-M3 feed-forward blocks: the dense swigluoai FFN of the leading layers, and the
// sigmoid-routed mixture of experts with its shared expert (docs/minimax-m3.md 3.7-3.9), on the
// shared GatedFfn and MixtureOfExperts.
#include <algorithm>

#include "inference/models/minimax_m3.h"
#include "inference/models/model_parts.h"

namespace iris::inference::m3 {

void FeedForward::dense(const Layer& layer, const float* x, std::int64_t rows, float* y,
                        LinearRunner& runner, ThreadPool& pool) {
    m_ffn.run(layer.gate, layer.up, layer.down, GateActivation::SwiGluOai, x, rows, y, runner,
              pool);
}

void FeedForward::moe(const Layer& layer, const Hyper& hyper, const float* x, std::int64_t rows,
                      float* y, int* experts, float* weights, LinearRunner& runner,
                      ThreadPool& pool) {
    // The shared expert (weight 1), when the file has one, starts the sum.
    if (layer.gate.data != nullptr) {
        dense(layer, x, rows, y, runner, pool);
    } else {
        std::fill(y, y + rows * layer.experts.router.in, 0.0f);
    }
    m_experts.accumulate(layer.experts, hyper.routing, GateActivation::SwiGluOai, x, rows, y,
                         experts, weights, runner, pool);
}

}  // namespace iris::inference::m3
