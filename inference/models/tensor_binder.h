#pragma once
// Binds a model's tensors by name for every architecture (language models and vision towers):
// shapes and types checked before any weight is used, with errors that name the file and the
// tensor.

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "base/status.h"
#include "inference/gguf/gguf_file.h"
#include "inference/models/linear.h"

namespace iris::inference {

class TensorBinder {
public:
    struct Options {
        // Where 1-D f16/bf16 tensors (norms, biases) are kept as f32 copies, so that a forward
        // pass reads one format; without it vector() takes f32 tensors only. The caller keeps
        // the storage as long as the bound pointers.
        std::deque<std::vector<float>>* f32Copies = nullptr;
        // Quantised matrices must have rows of whole activation blocks (32 or 256 values), which
        // kernels::matmul needs and a vision tower's odd widths may not give.
        bool wholeBlockRows = false;
    };

    // `file` must outlive the binder and everything it binds (pointers go into its data).
    explicit TensorBinder(const GgufFile& file) : m_file(file) {}
    TensorBinder(const GgufFile& file, Options options) : m_file(file), m_options(options) {}

    const GgufFile& file() const { return m_file; }
    bool has(const std::string& name) const { return m_file.findTensor(name) != nullptr; }

    // The tensor `name` with exactly `shape` (ggml order) and a type Iris computes with:
    // NotFound or Corrupt (missing, misshapen) or Unsupported (type).
    Result<const GgufTensor*> tensor(const std::string& name,
                                     const std::vector<std::int64_t>& shape) const;

    // A 1-D vector of `size` floats (norm weights, biases): f32, or f16/bf16 copied to f32 when
    // Options::f32Copies is set; Unsupported otherwise.
    Result<const float*> vector(const std::string& name, std::int64_t size) const;

    // An f32, f16 or bf16 tensor of `shape` as f32 values in ggml order (a convolution kernel
    // that is rearranged before use).
    Result<std::vector<float>> floats(const std::string& name,
                                      const std::vector<std::int64_t>& shape) const;

    // PREFIX.weight as {in, out}, and PREFIX.bias ({out}) when `bias`.
    Result<Linear> linear(const std::string& prefix, std::int64_t in, std::int64_t out,
                          bool bias) const;

    // A stack of `count` expert matrices, {in, out, count}.
    Result<ExpertStack> experts(const std::string& name, std::int64_t in, std::int64_t out,
                                std::int64_t count) const;

private:
    Status unsupportedType(const GgufTensor& t, const std::string& wanted) const;

    const GgufFile& m_file;
    Options m_options;
};

// target = *result converted to T, or result's error: binds read as a chain of
// IRIS_RETURN_IF_ERROR(assign(layer.q, bind.linear(...))).
template <typename T, typename R>
Status assign(T& target, Result<R> result) {
    if (!result) return result.status();
    target = static_cast<T>(*result);
    return {};
}

}  // namespace iris::inference
