#include "inference/vision/tower_parts.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "kernels/activation.h"
#include "kernels/matmul.h"

namespace iris::inference::vision {
namespace {

using kernels::TensorType;

constexpr std::int64_t kQuantizedRowChunk = 1024;  // rows of 8-bit activations prepared at once
constexpr std::int64_t kQueryChunk = 256;          // query rows of one attention task

// The largest of n floats, in eight independent chains: the compiler may not reorder a float
// max reduction by itself, and full-attention rows are thousands of scores long.
float rowMax(const float* x, std::int64_t n) {
    float m[8];
    for (float& v : m)
        v = -INFINITY;
    std::int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; ++l)
            m[l] = std::max(m[l], x[j + l]);
    for (; j < n; ++j)
        m[0] = std::max(m[0], x[j]);
    return *std::max_element(m, m + 8);
}

}  // namespace

void applyLinear(const Linear& l, kernels::GemmPrecision precision, const float* x,
                 std::ptrdiff_t xStride, std::int64_t m, float* y, std::ptrdiff_t yStride,
                 ThreadPool& pool) {
    if (isFloatType(l.type)) {
        // Column ranges in whole gemm panels (32 columns for AVX-512): a partial one costs as
        // much as a full one.
        pool.parallelFor(l.out, 32, [&](std::int64_t begin, std::int64_t end) {
            kernels::gemm(precision, l.type, l.data, l.in, l.in, x, xStride, m, l.bias, y, yStride,
                          begin, end);
        });
        return;
    }
    // Quantised weights: 8-bit activations, integer dot products, bias added afterwards. The
    // rows go in chunks to bound the prepared copy.
    const std::int64_t rowBytes = kernels::preparedRowBytes(l.type, l.in);
    std::vector<std::byte> prepared;
    for (std::int64_t r0 = 0; r0 < m; r0 += kQuantizedRowChunk) {
        const std::int64_t rows = std::min(kQuantizedRowChunk, m - r0);
        prepared.resize(std::size_t(rows * rowBytes));
        kernels::prepareActivations(l.type, x + r0 * xStride, xStride, rows, l.in, prepared.data());
        float* yChunk = y + r0 * yStride;
        pool.parallelFor(l.out, 16, [&](std::int64_t begin, std::int64_t end) {
            kernels::matmul(l.type, l.data, l.in, prepared.data(), rows, yChunk, yStride, begin,
                            end);
            if (l.bias != nullptr) {
                for (std::int64_t r = 0; r < rows; ++r)
                    for (std::int64_t n = begin; n < end; ++n)
                        yChunk[r * yStride + n] += l.bias[n];
            }
        });
    }
}

TensorBinder towerBinder(const GgufFile& file, std::deque<std::vector<float>>& copies) {
    return TensorBinder(file, {.f32Copies = &copies, .wholeBlockRows = true});
}

Result<std::vector<float>> bindPatchKernel(const TensorBinder& bind, std::int64_t patch,
                                           std::int64_t width) {
    const std::string names[2] = {"v.patch_embd.weight", "v.patch_embd.weight.1"};
    const std::int64_t area = patch * patch, cols = 3 * 2 * area;
    std::vector<float> kernel(static_cast<std::size_t>(width * cols));
    for (int frame = 0; frame < 2; ++frame) {
        Result<std::vector<float>> slice = bind.floats(names[frame], {patch, patch, 3, width});
        if (!slice) return slice.status();
        for (std::int64_t c = 0; c < width; ++c)
            for (std::int64_t ch = 0; ch < 3; ++ch)
                for (std::int64_t i = 0; i < area; ++i)
                    kernel[std::size_t(c * cols + (ch * 2 + frame) * area + i)] =
                        (*slice)[std::size_t((c * 3 + ch) * area + i)];
    }
    return kernel;
}

Result<std::int64_t> positiveInteger(const GgufFile& file, const std::string& key) {
    Result<std::int64_t> value = file.getInteger(key);
    if (!value) return value.status();
    if (*value <= 0 || *value > (std::int64_t(1) << 24)) {
        return Status::corrupt(file.name() + ": metadata '" + key + "' is " +
                               std::to_string(*value) + ", expected a positive size");
    }
    return value;
}

Result<std::int64_t> optionalPositiveInteger(const GgufFile& file, const std::string& key,
                                             std::int64_t fallback) {
    if (file.find(key) == nullptr) return fallback;
    return positiveInteger(file, key);
}

namespace {

// A 3-float array (clip.vision.image_mean / image_std); `out` is kept when the key is absent.
Status readTriple(const GgufFile& file, const std::string& key, std::array<float, 3>& out) {
    if (file.find(key) == nullptr) return {};
    Result<const GgufArray*> array = file.getArray(key);
    if (!array) return array.status();
    const auto* floats = std::get_if<std::vector<float>>(&(*array)->elements);
    if (floats == nullptr || floats->size() != 3) {
        return Status::corrupt(file.name() + ": metadata '" + key +
                               "' must be an array of 3 float32 values");
    }
    std::copy(floats->begin(), floats->end(), out.begin());
    return {};
}

template <typename T>
Status readSize(const GgufFile& file, const std::string& key, T& out) {
    Result<std::int64_t> value = positiveInteger(file, key);
    if (!value) return value.status();
    out = static_cast<T>(*value);
    return {};
}

}  // namespace

Status readCommonConfig(const GgufFile& file, VisionConfig& c) {
    IRIS_RETURN_IF_ERROR(readSize(file, "clip.vision.block_count", c.blocks));
    IRIS_RETURN_IF_ERROR(readSize(file, "clip.vision.embedding_length", c.width));
    IRIS_RETURN_IF_ERROR(readSize(file, "clip.vision.feed_forward_length", c.ffnSize));
    IRIS_RETURN_IF_ERROR(readSize(file, "clip.vision.attention.head_count", c.heads));
    IRIS_RETURN_IF_ERROR(readSize(file, "clip.vision.patch_size", c.patchSize));
    if (file.find("clip.vision.spatial_merge_size") != nullptr)
        IRIS_RETURN_IF_ERROR(readSize(file, "clip.vision.spatial_merge_size", c.mergeSize));
    const std::string epsKey = "clip.vision.attention.layer_norm_epsilon";
    if (file.find(epsKey) != nullptr) {
        Result<double> eps = file.getFloat(epsKey);
        if (!eps) return eps.status();
        if (!(*eps > 0.0 && *eps < 1.0)) {
            return Status::corrupt(file.name() + ": metadata '" + epsKey + "' is " +
                                   std::to_string(*eps) + ", expected a small positive number");
        }
        c.normEps = float(*eps);
    }
    IRIS_RETURN_IF_ERROR(readTriple(file, "clip.vision.image_mean", c.imageMean));
    IRIS_RETURN_IF_ERROR(readTriple(file, "clip.vision.image_std", c.imageStd));
    return {};
}

Status checkImagePatches(const ImagePatches& image, const VisionConfig& c,
                         std::int64_t maxPatches) {
    if (image.patchSize != c.patchSize || image.mergeSize != c.mergeSize ||
        image.temporalPatch != 2) {
        return Status::invalidArgument(
            "image patches are " + std::to_string(image.patchSize) + " px, merge " +
            std::to_string(image.mergeSize) + ", " + std::to_string(image.temporalPatch) +
            " frames; the vision tower wants " + std::to_string(c.patchSize) + " px, merge " +
            std::to_string(c.mergeSize) + ", 2 frames");
    }
    if (image.gridH <= 0 || image.gridW <= 0 || image.gridH % c.mergeSize != 0 ||
        image.gridW % c.mergeSize != 0) {
        return Status::invalidArgument(
            "image grid " + std::to_string(image.gridH) + " x " + std::to_string(image.gridW) +
            " patches is empty or not a multiple of the merge size " + std::to_string(c.mergeSize));
    }
    if (image.patchCount() > maxPatches) {
        return Status::outOfRange("image of " + std::to_string(image.patchCount()) +
                                  " patches is too large for the vision tower");
    }
    const std::int64_t expected = image.patchCount() * image.patchValues();
    if (std::int64_t(image.values.size()) != expected) {
        return Status::invalidArgument("image patches hold " + std::to_string(image.values.size()) +
                                       " values, expected " + std::to_string(expected) + " (" +
                                       std::to_string(image.patchCount()) + " patches)");
    }
    return {};
}

void spanAttention(const float* q, const float* k, const float* vt, float* out, std::int64_t rows,
                   std::int64_t heads, std::int64_t headDim,
                   const std::vector<std::pair<std::int64_t, std::int64_t>>& spans,
                   kernels::GemmPrecision precision, ThreadPool& pool) {
    struct Task {
        std::int64_t keyBegin, keyEnd, queryBegin, queryEnd, head;
    };
    const std::int64_t width = heads * headDim;
    std::vector<Task> tasks;
    for (const auto& [begin, end] : spans) {
        for (std::int64_t q0 = begin; q0 < end; q0 += kQueryChunk)
            for (std::int64_t h = 0; h < heads; ++h)
                tasks.push_back({begin, end, q0, std::min(end, q0 + kQueryChunk), h});
    }
    pool.parallelFor(std::int64_t(tasks.size()), 1, [&](std::int64_t first, std::int64_t last) {
        std::vector<float> scores, inverseSums;
        for (std::int64_t t = first; t < last; ++t) {
            const Task& task = tasks[std::size_t(t)];
            const std::int64_t keys = task.keyEnd - task.keyBegin;
            const std::int64_t queries = task.queryEnd - task.queryBegin;
            scores.resize(std::size_t(keys * queries));
            inverseSums.resize(std::size_t(queries));
            const std::int64_t column = task.head * headDim;
            kernels::gemm(precision, TensorType::F32, k + task.keyBegin * width + column, width,
                          headDim, q + task.queryBegin * width + column, width, queries, nullptr,
                          scores.data(), keys, 0, keys);
            for (std::int64_t i = 0; i < queries; ++i) {
                float* row = scores.data() + i * keys;
                inverseSums[std::size_t(i)] =
                    1.0f / kernels::expShiftSum(row, keys, rowMax(row, keys));
            }
            // Unnormalised probabilities times v, then each output row divided by its sum:
            // headDim multiplies per query instead of one per key.
            float* o = out + task.queryBegin * width + column;
            kernels::gemm(precision, TensorType::F32, vt + column * rows + task.keyBegin, rows,
                          keys, scores.data(), keys, queries, nullptr, o, width, 0, headDim);
            for (std::int64_t i = 0; i < queries; ++i)
                for (std::int64_t d = 0; d < headDim; ++d)
                    o[i * width + d] *= inverseSums[std::size_t(i)];
        }
    });
}

}  // namespace iris::inference::vision
