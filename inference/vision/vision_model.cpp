#include "inference/vision/vision_model.h"

#include <variant>

#include "inference/vision/vision_towers.h"

namespace iris::inference {

Result<std::unique_ptr<VisionModel>> VisionModel::load(const GgufFile& file) {
    // A language-model GGUF passed where the projector belongs is the likely mistake: say so.
    if (const GgufValue* arch = file.find("general.architecture")) {
        const auto* name = std::get_if<std::string>(arch);
        if (name == nullptr || *name != "clip") {
            return Status::invalidArgument(file.name() +
                                           ": not a vision projector (general.architecture is " +
                                           ggufToString(*arch) + ", expected \"clip\")");
        }
    }
    if (const GgufValue* hasVision = file.find("clip.has_vision_encoder")) {
        const auto* flag = std::get_if<bool>(hasVision);
        if (flag == nullptr)
            return Status::corrupt(file.name() + ": metadata 'clip.has_vision_encoder' is " +
                                   std::string(ggufTypeName(ggufTypeOf(*hasVision))) +
                                   ", expected bool");
        if (!*flag)
            return Status::unsupported(file.name() +
                                       ": clip.has_vision_encoder is false (an audio-only "
                                       "projector); Iris needs a vision tower");
    }
    Result<std::string> projector = file.getString("clip.projector_type");
    if (!projector) return projector.status();
    if (*projector == "qwen2.5vl_merger") return createQwen25VlVision(file);
    if (*projector == "minimax_m3") return createMiniMaxM3Vision(file);
    return Status::unsupported(file.name() + ": clip.projector_type '" + *projector +
                               "' is not supported (Iris knows: qwen2.5vl_merger, minimax_m3)");
}

Status VisionModel::encode(const ImagePatches& image, ThreadPool& pool,
                           std::vector<float>& embeddings) const {
    Result<std::unique_ptr<VisionEncoding>> encoding = beginEncode(image);
    if (!encoding) return encoding.status();
    while (!(*encoding)->done())
        (*encoding)->advance(pool);
    embeddings = (*encoding)->takeEmbeddings();
    return {};
}

kernels::GemmPrecision resolveVisionPrecision(VisionPrecision precision) {
    switch (precision) {
        case VisionPrecision::F32:
            return kernels::GemmPrecision::F32;
        case VisionPrecision::Bf16:
            return kernels::GemmPrecision::Bf16;
        case VisionPrecision::Auto:
            break;
    }
    return kernels::gemmBf16Faster() ? kernels::GemmPrecision::Bf16 : kernels::GemmPrecision::F32;
}

std::string_view visionPrecisionName(VisionPrecision precision) {
    switch (precision) {
        case VisionPrecision::Auto:
            return "auto";
        case VisionPrecision::F32:
            return "f32";
        case VisionPrecision::Bf16:
            return "bf16";
    }
    return "?";
}

std::optional<VisionPrecision> parseVisionPrecision(std::string_view name) {
    for (VisionPrecision p : {VisionPrecision::Auto, VisionPrecision::F32, VisionPrecision::Bf16})
        if (name == visionPrecisionName(p)) return p;
    return std::nullopt;
}

}  // namespace iris::inference
