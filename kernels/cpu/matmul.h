#pragma once
// The CPU variants behind kernels::matmul, one table per weight type, exposed for tests and
// benchmarks. Same contract as kernels/matmul.h; `prepared` as prepareActivations writes it.

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/dispatch.h"
#include "kernels/tensor_type.h"

namespace iris::kernels::cpu {

using MatmulFn = void (*)(const void* w, std::int64_t k, const void* prepared, std::int64_t m,
                          float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);

// The variants for `weightType` (a computable type).
IsaVariants<MatmulFn> matmulVariants(TensorType weightType);

// Per ISA: the function for `weightType`, or nullptr where that level has none.
MatmulFn matmulScalar(TensorType weightType);
MatmulFn matmulAvx2(TensorType weightType);
MatmulFn matmulAvx512(TensorType weightType);

// Packed weights (see kernels/matmul.h): the scalar reference of the layout and the AVX-512 VNNI
// kernel that uses it. Stored values are unsigned; `offset` is what a stored value of 0 means
// (128 for q8_0, 16 for q5_0, 8 for q4_0): w = d * (stored - offset). Otherwise the arguments
// of kernels::matmulPacked.
using PackedMatmulFn = void (*)(const void* packed, float offset, std::int64_t k,
                                const void* prepared, std::int64_t m, float* y,
                                std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);
void matmulPackedScalar(const void* packed, float offset, std::int64_t k, const void* prepared,
                        std::int64_t m, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
                        std::int64_t nEnd);
void matmulPackedAvx512(const void* packed, float offset, std::int64_t k, const void* prepared,
                        std::int64_t m, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
                        std::int64_t nEnd);
inline constexpr int kPackRows = 16;
// Bytes of one packed 32-value block of 16 rows: 16 f32 scales and 16 x 32 bytes.
inline constexpr std::int64_t kPackedBlockBytes = kPackRows * 4 + kPackRows * 32;

// Reference quantisation of one activation row into k / 32 BlockQ8Act blocks (legacy weight
// types) or k / 256 BlockQ8K blocks (K types).
void quantizeActivationRow(const float* x, std::int64_t k, void* blocks);
void quantizeActivationRowK(const float* x, std::int64_t k, void* blocks);

// Whether `weightType` meets BlockQ8K activations (the K types), BlockQ8Act (the other quantised
// types) or plain f32.
bool usesQ8KActivations(TensorType weightType);

}  // namespace iris::kernels::cpu
