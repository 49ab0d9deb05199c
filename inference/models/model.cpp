#include "inference/models/model.h"

#include <array>
#include <string_view>

#include "inference/models/architectures.h"

namespace iris::inference {
namespace {

struct Architecture {
    std::string_view name;  // general.architecture
    Result<std::unique_ptr<Model>> (*create)(const GgufFile&, const ModelBackend&);
};

constexpr std::array kArchitectures = {
    Architecture{"qwen2", createQwen2},
    Architecture{"qwen2vl", createQwen2Vl},
    Architecture{"qwen3", createQwen3},
    Architecture{"minimax-m3", createMiniMaxM3},
};

}  // namespace

std::vector<std::string> supportedArchitectures() {
    std::vector<std::string> names;
    for (const Architecture& a : kArchitectures)
        names.emplace_back(a.name);
    return names;
}

Result<std::unique_ptr<Model>> createModel(const GgufFile& file, const ModelBackend& backend) {
    Result<std::string> arch = file.getString("general.architecture");
    if (!arch) return arch.status();
    for (const Architecture& a : kArchitectures) {
        if (a.name == *arch) return a.create(file, backend);
    }
    std::string known;
    for (const Architecture& a : kArchitectures)
        known += (known.empty() ? "" : ", ") + std::string(a.name);
    return Status::unsupported(file.name() + ": architecture '" + *arch +
                               "' is not supported (Iris runs " + known + ")");
}

KvCacheOptions Model::kvCacheOptions(std::int64_t blocks, int blockSize,
                                     kernels::TensorType type) const {
    const ModelConfig& c = config();
    KvCacheOptions options{int(c.layers), int(c.kvHeads), int(c.headDim), blockSize, blocks, type};
    options.indexerDim = c.indexerDim;
    options.indexerFirstLayer = c.indexerFirstLayer;
    options.selectionBlock = c.selectionBlock;
    // The key string lives in the model's config, which outlives the cache options.
    options.selectionBlockKey = c.selectionBlockKey.c_str();
    return options;
}

}  // namespace iris::inference
