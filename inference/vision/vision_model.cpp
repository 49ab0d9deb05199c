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
    return Status::unsupported(file.name() + ": clip.projector_type '" + *projector +
                               "' is not supported (Iris knows: qwen2.5vl_merger)");
}

}  // namespace iris::inference
