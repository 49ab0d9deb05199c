#pragma once
// Writing GGUF version 3 files in the layout llama.cpp writes (and reads): metadata in insertion
// order, tensor infos, then each tensor's data padded to the alignment. Tests and tools use it to
// make models; nothing here is on an inference path.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "inference/gguf/gguf_file.h"
#include "inference/gguf/gguf_value.h"
#include "base/status.h"
#include "kernels/tensor_type.h"

namespace iris::inference {

class GgufWriter {
public:
    // `alignment` (a power of two) is written as general.alignment when it is not the default.
    explicit GgufWriter(std::uint32_t alignment = kGgufDefaultAlignment);

    // Sets `key`, replacing an earlier value but keeping its position.
    void set(std::string key, GgufValue value);

    // Adds a tensor; `shape` in ggml order (shape[0] contiguous), `data` exactly its bytes
    // (kernels::rowBytes(type, shape[0]) * the other extents). InvalidArgument otherwise, or for a
    // duplicate name or more than 4 dimensions.
    Status addTensor(std::string name, kernels::TensorType type, std::vector<std::int64_t> shape,
                     std::span<const std::byte> data);

    // Convenience for f32 tensors.
    Status addTensor(std::string name, std::vector<std::int64_t> shape,
                     std::span<const float> values);

    // The complete file.
    std::vector<std::byte> serialize() const;

    // Writes the file through a temporary next to `path` and a rename, so a reader never sees half.
    Status writeFile(const std::filesystem::path& path) const;

private:
    struct Tensor {
        std::string name;
        kernels::TensorType type;
        std::vector<std::int64_t> shape;
        std::vector<std::byte> data;
    };

    std::uint32_t m_alignment;
    std::vector<std::pair<std::string, GgufValue>> m_metadata;
    std::vector<Tensor> m_tensors;
};

}  // namespace iris::inference
