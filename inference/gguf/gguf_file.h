#pragma once
// Reading GGUF files (versions 2 and 3) as llama.cpp writes them. Layout:
//   "GGUF" | version u32 | tensor count u64 | metadata count u64
//   metadata: key (u64 length + bytes) | type u32 | value        (arrays: type u32, count u64,
//   values) tensor infos: name | n_dims u32 | dims u64[n_dims] | ggml type u32 | offset u64 padding
//   to general.alignment (default 32) | tensor data (offsets relative to here)
// All numbers little-endian. Every count, length, size and offset is checked against the file
// before use; a malformed file gives a Corrupt (or Unsupported) Status naming the field and its
// byte offset, never a crash or an out-of-bounds read.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inference/gguf/gguf_value.h"
#include "inference/mapped_file.h"
#include "base/status.h"
#include "kernels/tensor_type.h"

namespace iris::inference {

inline constexpr std::uint32_t kGgufDefaultAlignment = 32;
inline constexpr int kGgufMaxDims = 4;           // ggml's GGML_MAX_DIMS
inline constexpr int kGgufMaxArrayNesting = 16;  // arrays of arrays deeper than this are refused

struct GgufTensor {
    std::string name;
    kernels::TensorType type;
    std::vector<std::int64_t> shape;  // ggml order: shape[0] is the contiguous (innermost) axis
    std::uint64_t offset = 0;         // from the start of the data section
    std::uint64_t bytes = 0;
    std::span<const std::byte> data;  // the tensor's bytes, inside the file's mapping
    std::uint64_t infoOffset = 0;     // byte offset of its entry in the tensor table (for messages)

    std::int64_t elements() const;
};

// A parsed GGUF file. Immutable; safe to share between threads. Tensor data points into the
// mapping (or the caller's buffer, for parse()), which lives as long as the GgufFile.
// "896 x 151936": a tensor shape as error messages write it (ggml order).
std::string shapeText(const std::vector<std::int64_t>& shape);

class GgufFile {
public:
    // Maps `path` and parses it. Errors start with the path.
    static Result<GgufFile> open(const std::filesystem::path& path);

    // Parses `bytes`, which the caller keeps alive for as long as the result. `name` prefixes
    // error messages.
    static Result<GgufFile> parse(std::span<const std::byte> bytes, std::string_view name);

    const std::string& name() const { return m_name; }
    std::uint32_t version() const { return m_version; }
    std::uint32_t alignment() const { return m_alignment; }
    std::uint64_t dataOffset() const { return m_dataOffset; }  // start of the data section
    std::uint64_t fileSize() const { return m_fileSize; }
    // The whole file as open() mapped it; empty for parse(). What the KV disk store hashes
    // (the part before dataOffset() and samples of the weights) to tell models apart.
    std::span<const std::byte> mappedBytes() const;

    // Metadata in file order.
    const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return m_metadata; }
    const GgufValue* find(std::string_view key) const;

    // Typed access; errors (NotFound, Corrupt) name the file and the key.
    Result<std::int64_t> getInteger(std::string_view key) const;  // any integer type
    Result<double> getFloat(std::string_view key) const;          // float32 or float64
    Result<std::string> getString(std::string_view key) const;
    Result<const GgufArray*> getArray(std::string_view key) const;

    // Tensors in file order.
    const std::vector<GgufTensor>& tensors() const { return m_tensors; }
    const GgufTensor* findTensor(std::string_view name) const;
    // The tensor `name`, which must have exactly `shape` (ggml order): NotFound or Corrupt
    // naming the file, the tensor and both shapes. What a model checks when it binds weights.
    Result<const GgufTensor*> requireTensor(std::string_view name,
                                            const std::vector<std::int64_t>& shape) const;

private:
    friend class GgufParser;
    GgufFile() = default;

    Result<const GgufValue*> require(std::string_view key) const;
    Status wrongType(std::string_view key, const GgufValue& value, std::string_view wanted) const;

    std::shared_ptr<const MappedFile> m_mapping;  // null for parse()
    std::string m_name;
    std::uint32_t m_version = 0;
    std::uint32_t m_alignment = kGgufDefaultAlignment;
    std::uint64_t m_dataOffset = 0;
    std::uint64_t m_fileSize = 0;
    std::vector<std::pair<std::string, GgufValue>> m_metadata;
    std::map<std::string, std::size_t, std::less<>> m_metadataIndex;
    std::vector<GgufTensor> m_tensors;
    std::map<std::string, std::size_t, std::less<>> m_tensorIndex;
};

}  // namespace iris::inference
