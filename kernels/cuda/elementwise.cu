#include <algorithm>
#include <climits>

#include <cuda_fp16.h>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/quant_units.cuh"

namespace iris::kernels::cuda {
namespace {

constexpr int kThreads = 256;

unsigned gridFor(std::int64_t items) {
    return unsigned(std::clamp<std::int64_t>((items + kThreads - 1) / kThreads, 1, 65535));
}

// A thread per pair (token, head, i < rotDims / 2), grid-stride.
__global__ void ropeNeoxKernel(float* x, std::int64_t tokens, std::ptrdiff_t tokenStride, int heads,
                               int headDim, int half, const float* __restrict__ cos,
                               const float* __restrict__ sin) {
    const std::int64_t pairs = tokens * heads * half;
    for (std::int64_t p = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs;
         p += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t token = p / (std::int64_t(heads) * half);
        const int head = int(p / half % heads);
        const int i = int(p % half);
        float* v = x + token * tokenStride + std::int64_t(head) * headDim;
        const float c = cos[token * half + i], s = sin[token * half + i];
        const float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = a * s + b * c;
    }
}

__device__ float silu(float x) {
    return x / (1.0f + expf(-x));
}

__device__ float geluTanh(float x) {
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    constexpr float kCubic = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * x * (1.0f + kCubic * x * x)));
}

// The kind is the same for every thread of a launch, so the switch costs no divergence in this
// memory-bound loop.
__global__ void activateKernel(Activation kind, const float* x, const float* up, float* out,
                               std::int64_t n) {
    for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x) {
        const float v = x[i];
        switch (kind) {
            case Activation::SwiGlu:
                out[i] = silu(v) * up[i];
                break;
            case Activation::SwiGluOai: {
                const float g = fminf(v, 7.0f), u = fminf(fmaxf(up[i], -7.0f), 7.0f);
                out[i] = g / (1.0f + expf(-1.702f * g)) * (u + 1.0f);
                break;
            }
            case Activation::GeGlu:
                out[i] = geluTanh(v) * up[i];
                break;
            case Activation::Silu:
                out[i] = silu(v);
                break;
            case Activation::Gelu:
                out[i] = geluTanh(v);
                break;
            case Activation::GeluErf:
                out[i] = 0.5f * v * (1.0f + erff(v * 0.7071067811865475f));
                break;
        }
    }
}

__global__ void addKernel(float* y, const float* x, std::int64_t n) {
    for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x)
        y[i] += x[i];
}

// A thread per 32-value unit of an output row (quantised types) or per value (float types).
template <TensorType kType>
__global__ void embeddingKernel(const std::uint8_t* __restrict__ table, std::int64_t rows,
                                std::int64_t rowBytes, std::int64_t width,
                                const std::int32_t* __restrict__ ids, std::int64_t count,
                                float* out, std::ptrdiff_t outStride) {
    constexpr bool kFloat = isFloatType(kType);
    const std::int64_t perRow = kFloat ? width : width / 32;
    for (std::int64_t item = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
         item < count * perRow; item += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t r = item / perRow, u = item % perRow;
        const std::int32_t id = ids[r];
        float* o = out + r * outStride;
        const std::uint8_t* row = table + std::int64_t(id) * rowBytes;
        const bool inside = id >= 0 && id < rows;
        if constexpr (kFloat) {
            o[u] = inside ? floatAt<kType>(row, u) : 0.0f;
        } else {
            const Unit32 unit = inside ? loadUnit<kType>(row, u) : Unit32{};
            for (int j = 0; j < 32; ++j)
                o[u * 32 + j] = inside ? unitValue(unit, j) : 0.0f;
        }
    }
}

template <TensorType kType>
void launchEmbedding(const void* table, std::int64_t rows, std::int64_t width,
                     const std::int32_t* ids, std::int64_t count, float* out,
                     std::ptrdiff_t outStride, cudaStream_t stream) {
    const auto& info = tensorTypeInfo(kType);
    const std::int64_t rowBytes = width / info.blockElements * info.blockBytes;
    const std::int64_t items = count * (info.blockElements == 1 ? width : width / 32);
    embeddingKernel<kType><<<gridFor(items), kThreads, 0, stream>>>(
        static_cast<const std::uint8_t*>(table), rows, rowBytes, width, ids, count, out, outStride);
}

}  // namespace

cudaError_t ropeNeox(float* x, std::int64_t tokens, std::ptrdiff_t tokenStride, int heads,
                     int headDim, int rotDims, const float* cos, const float* sin,
                     cudaStream_t stream) {
    if (tokens < 0 || heads < 0 || rotDims < 0 || rotDims % 2 != 0 || rotDims > headDim)
        return cudaErrorInvalidValue;
    const std::int64_t pairs = tokens * heads * (rotDims / 2);
    if (pairs == 0) return cudaSuccess;
    if (x == nullptr || cos == nullptr || sin == nullptr ||
        (tokens > 1 && tokenStride < std::ptrdiff_t(heads) * headDim))
        return cudaErrorInvalidValue;
    ropeNeoxKernel<<<gridFor(pairs), kThreads, 0, stream>>>(x, tokens, tokenStride, heads, headDim,
                                                            rotDims / 2, cos, sin);
    return cudaGetLastError();
}

cudaError_t activate(Activation kind, const float* x, const float* up, float* out, std::int64_t n,
                     cudaStream_t stream) {
    if (n < 0) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    const bool gated =
        kind == Activation::SwiGlu || kind == Activation::SwiGluOai || kind == Activation::GeGlu;
    if (x == nullptr || out == nullptr || (gated && up == nullptr)) return cudaErrorInvalidValue;
    activateKernel<<<gridFor(n), kThreads, 0, stream>>>(kind, x, up, out, n);
    return cudaGetLastError();
}

cudaError_t addInPlace(float* y, const float* x, std::int64_t n, cudaStream_t stream) {
    if (n < 0) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    if (y == nullptr || x == nullptr) return cudaErrorInvalidValue;
    addKernel<<<gridFor(n), kThreads, 0, stream>>>(y, x, n);
    return cudaGetLastError();
}

cudaError_t embeddingRows(TensorType type, const void* table, std::int64_t rows, std::int64_t width,
                          const std::int32_t* ids, std::int64_t count, float* out,
                          std::ptrdiff_t outStride, cudaStream_t stream) {
    if (rows < 0 || width < 0 || count < 0) return cudaErrorInvalidValue;
    const auto& info = tensorTypeInfo(type);
    if (width % info.blockElements != 0 || (info.blockElements > 1 && width % 32 != 0))
        return cudaErrorInvalidValue;
    if (count == 0 || width == 0) return cudaSuccess;
    if (table == nullptr || ids == nullptr || out == nullptr || (count > 1 && outStride < width) ||
        reinterpret_cast<std::uintptr_t>(table) % (type == TensorType::F32 ? 4 : 2) != 0)
        return cudaErrorInvalidValue;
    return withDeviceType(type, [&](auto tag) {
        launchEmbedding<decltype(tag)::value>(table, rows, width, ids, count, out, outStride,
                                              stream);
        return cudaGetLastError();
    });
}

}  // namespace iris::kernels::cuda
