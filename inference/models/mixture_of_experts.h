#pragma once
// The routed mixture-of-experts block: a router Linear scores every expert per token, the k best
// are chosen, and only those experts' gated FFNs run, each on the rows routed to it; their outputs
// are added to y with the routing weights. A model's shared expert (if any) is its own GatedFfn
// call before this one. Part of the model parts (model_parts.h): a second backend runs it on its
// device with grouped expert products.

#include <cstdint>
#include <vector>

#include "inference/models/gated_ffn.h"
#include "inference/models/linear.h"
#include "inference/thread_pool.h"

namespace iris::inference {

// How router logits become k experts and their weights. Sigmoid routing with a selection bias
// (MiniMax-M3, DeepSeek-V3 style; docs/minimax-m3.md section 3.9): experts are chosen by
// sigmoid(logit) + bias, weighed by the unbiased sigmoid, optionally normalised to sum 1 (the
// sum clamped at 6.1035e-5) and scaled.
struct ExpertRouting {
    std::int64_t experts = 0;
    std::int64_t used = 0;  // k
    bool normaliseWeights = true;
    float scale = 1.0f;
};

// The routing of one token: writes `routing.used` expert ids in choice order (descending biased
// score, ties to the lower id) and their weights. `bias` may be null (no selection bias).
void routeSigmoid(const float* logits, const float* bias, const ExpertRouting& routing,
                  int* experts, float* weights);

// A layer's routed experts: the router (hidden -> experts), its selection bias, and the three
// expert stacks of the gated FFNs.
struct ExpertLayer {
    Linear router;
    const float* routerBias = nullptr;
    ExpertStack gate, up, down;
};

// Not reentrant (one per model): keeps its routing and per-expert intermediates between calls.
class MixtureOfExperts {
public:
    // y (rows x hidden) += the routed experts' outputs for x (rows x hidden). experts/weights:
    // rows x routing.used, filled with each token's routing (for tracing and tests).
    void accumulate(const ExpertLayer& layer, const ExpertRouting& routing,
                    GateActivation activation, const float* x, std::int64_t rows, float* y,
                    int* experts, float* weights, LinearRunner& runner, ThreadPool& pool);

private:
    GatedFfn m_ffn;
    std::vector<float> m_logits, m_rows, m_out;
    std::vector<std::int64_t> m_members;
};

}  // namespace iris::inference
