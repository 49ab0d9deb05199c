// The language model of Qwen2-VL / Qwen2.5-VL (and UI-TARS-1.5): Qwen2 with multimodal RoPE.
// Each token has four position components (t, h, w, e); frequency pair i takes its position from
// the component whose section holds i (rope.dimension_sections, e.g. [16, 24, 24, 0] for a
// 128-wide head). For text all components are equal and this is ordinary NEOX RoPE.
#include <numeric>

#include "inference/models/architectures.h"
#include "inference/models/decoder.h"

namespace iris::inference {

Result<std::unique_ptr<Model>> createQwen2Vl(const GgufFile& file, const ModelBackend& backend) {
    Result<ModelConfig> config = readDecoderConfig(file, "qwen2vl");
    if (!config) return config.status();
    const std::string key = "qwen2vl.rope.dimension_sections";
    Result<const GgufArray*> sections = file.getArray(key);
    if (!sections) return sections.status();
    std::array<int, 4> values{};
    const bool fourInts = (*sections)->size() == 4 &&
                          std::visit(
                              [&](const auto& elements) {
                                  using E = typename std::decay_t<decltype(elements)>::value_type;
                                  if constexpr (std::is_integral_v<E> && !std::is_same_v<E, char>) {
                                      for (std::size_t i = 0; i < 4; ++i) {
                                          if (elements[i] < 0) return false;
                                          values[i] = int(elements[i]);
                                      }
                                      return true;
                                  } else {
                                      return false;
                                  }
                              },
                              (*sections)->elements);
    if (!fourInts)
        return Status::corrupt(file.name() + ": metadata '" + key +
                               "' must be 4 non-negative integers");
    const int pairs = std::accumulate(values.begin(), values.end(), 0);
    if (pairs != config->ropeDims / 2) {
        return Status::corrupt(file.name() + ": metadata '" + key + "' covers " +
                               std::to_string(pairs) + " frequency pairs, but the head has " +
                               std::to_string(config->ropeDims / 2));
    }
    config->ropeSections = values;
    config->multimodalRope = true;
    Result<DecoderWeights> weights =
        bindDecoderWeights(file, *config, {.qkvBias = true, .qkNorm = false});
    if (!weights) return weights.status();
    return makeDecoderModel(std::move(*config), std::move(*weights), backend);
}

}  // namespace iris::inference
