// Qwen3 dense text models: no q/k/v biases, RMSNorm over each head of q and k before RoPE, and
// head size from attention.key_length (not hidden / heads).
#include "inference/models/architectures.h"
#include "inference/models/decoder.h"

namespace iris::inference {

Result<std::unique_ptr<Model>> createQwen3(const GgufFile& file, const ModelBackend& backend) {
    Result<ModelConfig> config = readDecoderConfig(file, "qwen3");
    if (!config) return config.status();
    Result<DecoderWeights> weights =
        bindDecoderWeights(file, *config, {.qkvBias = false, .qkNorm = true});
    if (!weights) return weights.status();
    return makeDecoderModel(std::move(*config), std::move(*weights), backend);
}

}  // namespace iris::inference
