// Qwen2 / Qwen2.5 text models (and plain-RoPE multimodal language models such as OpenCUA's):
// q/k/v projections with biases, NEOX RoPE over the whole head.
#include "inference/models/architectures.h"
#include "inference/models/decoder.h"

namespace iris::inference {

Result<std::unique_ptr<Model>> createQwen2(const GgufFile& file, const ModelBackend& backend) {
    Result<ModelConfig> config = readDecoderConfig(file, "qwen2");
    if (!config) return config.status();
    Result<DecoderWeights> weights =
        bindDecoderWeights(file, *config, {.qkvBias = true, .qkNorm = false});
    if (!weights) return weights.status();
    return makeDecoderModel(std::move(*config), std::move(*weights), backend);
}

}  // namespace iris::inference
