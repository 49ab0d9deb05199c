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

// Reference quantisation of one activation row into k / 32 BlockQ8Act blocks (legacy weight
// types) or k / 256 BlockQ8K blocks (K types).
void quantizeActivationRow(const float* x, std::int64_t k, void* blocks);
void quantizeActivationRowK(const float* x, std::int64_t k, void* blocks);

// Whether `weightType` meets BlockQ8K activations (the K types), BlockQ8Act (the other quantised
// types) or plain f32.
bool usesQ8KActivations(TensorType weightType);

}  // namespace iris::kernels::cpu
