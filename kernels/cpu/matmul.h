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

// Packed K-type weights (q4_K, q5_K, q6_K; see kernels/matmul.h): 16 rows interleaved per
// 256-value super-block, the sub-block scales unpacked to one byte per row. Within each run of
// 32 values, "dot vector" t (0..7) is 64 bytes: values 4t..4t+3 of rows 0..15, row r at bytes
// 4r..4r+3, and the 8 dot vectors are stored as 4 x 64 bytes of nibbles (dot vector t in the low
// nibbles of vector t % 4 when t < 4, in the high ones otherwise), then the high bits.
//   q4_K / q5_K super-block of a group: float d[16], float dmin[16], u8 scale[8][16],
//     u8 min[8][16], then per sub-block s (32 values): nibbles[4][64] (q5_K: then 64 bytes whose
//     bit t is the 5th bit of dot vector t). w = d * scale * q - dmin * min.
//   q6_K super-block of a group: float d[16], i8 scale[16][16] (one per 16 values), then per 32
//     values: nibbles[4][64], high[2][64] (bits 2u, 2u+1 of high[h] are bits 4, 5 of dot vector
//     4h + u). w = d * scale * (q - 32).
// Activations are BlockQ8K rows. The same arguments as kernels::matmulPacked.
using PackedKMatmulFn = void (*)(TensorType weightType, const void* packed, std::int64_t k,
                                 const void* prepared, std::int64_t m, float* y,
                                 std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);
void matmulPackedKScalar(TensorType weightType, const void* packed, std::int64_t k,
                         const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                         std::int64_t nBegin, std::int64_t nEnd);
void matmulPackedKAvx2(TensorType weightType, const void* packed, std::int64_t k,
                       const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                       std::int64_t nBegin, std::int64_t nEnd);
void matmulPackedKAvx512(TensorType weightType, const void* packed, std::int64_t k,
                         const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                         std::int64_t nBegin, std::int64_t nEnd);
// Offsets inside one packed super-block of 16 rows.
inline constexpr std::int64_t kPackedKScalesOffset = 128;  // q4_K/q5_K: after d and dmin
inline constexpr std::int64_t kPackedKMinsOffset = 256;
inline constexpr std::int64_t kPackedKValuesOffset = 384;
inline constexpr std::int64_t kPackedQ6KScalesOffset = 64;  // q6_K: after d
inline constexpr std::int64_t kPackedQ6KValuesOffset = 320;
// Bytes of the values of 32 packed values of 16 rows, and of one packed super-block of 16 rows
// (0 for other types).
inline constexpr std::int64_t packedKSubBlockBytes(TensorType type) {
    return type == TensorType::Q4_K ? 256 : type == TensorType::Q5_K ? 320 : 384;
}
inline constexpr std::int64_t packedKSuperBlockBytes(TensorType type) {
    switch (type) {
        case TensorType::Q4_K:
        case TensorType::Q5_K:
            return kPackedKValuesOffset + 8 * packedKSubBlockBytes(type);
        case TensorType::Q6_K:
            return kPackedQ6KValuesOffset + 8 * packedKSubBlockBytes(type);
        default:
            return 0;
    }
}

// Reference quantisation of one activation row into k / 32 BlockQ8Act blocks (legacy weight
// types) or k / 256 BlockQ8K blocks (K types).
void quantizeActivationRow(const float* x, std::int64_t k, void* blocks);
void quantizeActivationRowK(const float* x, std::int64_t k, void* blocks);

// Whether `weightType` meets BlockQ8K activations (the K types), BlockQ8Act (the other quantised
// types) or plain f32.
bool usesQ8KActivations(TensorType weightType);

}  // namespace iris::kernels::cpu
