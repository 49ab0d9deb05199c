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

// Packed q8_0, q5_0 and q4_0 weights (see kernels/matmul.h): the scalar reference of the layout
// and the AVX-512 VNNI and AVX2 kernels that use it. Stored values are unsigned, w = d * (stored - offset)
// with offset 128 for q8_0, 16 for q5_0 and 8 for q4_0. Per group of 16 rows, per 32-value
// block: f16 d[16] (the file's scale bits), then the 8 "dot vectors" of 64 bytes (dot vector t:
// values 4t..4t+3 of rows 0..15, row r at bytes 4r..4r+3) stored as
//   q8_0: 8 x 64 bytes, the values themselves (q + 128);
//   q4_0: 4 x 64 bytes of nibbles, dot vector t in the low nibbles of vector t % 4 when t < 4,
//         in the high ones otherwise (as the K types' runs below);
//   q5_0: q4_0's nibbles, then 64 bytes whose bit t is the 5th bit of dot vector t.
// So a block takes the bytes it takes in the file (34, 22 and 18 per row). The same arguments
// as kernels::matmulPacked.
using PackedMatmulFn = void (*)(TensorType weightType, const void* packed, std::int64_t k,
                                const void* prepared, std::int64_t m, float* y,
                                std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);
void matmulPackedScalar(TensorType weightType, const void* packed, std::int64_t k,
                        const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                        std::int64_t nBegin, std::int64_t nEnd);
void matmulPackedAvx512(TensorType weightType, const void* packed, std::int64_t k,
                        const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                        std::int64_t nBegin, std::int64_t nEnd);
// Without vpdpbusd: q5_0 and q4_0 values are small enough for vpmaddubsw as stored; q8_0's are
// made signed again and multiplied with the sign trick (vpabsb, vpsignb).
void matmulPackedAvx2(TensorType weightType, const void* packed, std::int64_t k,
                      const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                      std::int64_t nBegin, std::int64_t nEnd);
inline constexpr int kPackRows = 16;
// Bytes of one packed 32-value block of 16 rows (0 for other types).
inline constexpr std::int64_t packedBlockBytes(TensorType type) {
    switch (type) {
        case TensorType::Q8_0:
            return 2 * kPackRows + 32 * kPackRows;
        case TensorType::Q5_0:
            return 2 * kPackRows + 16 * kPackRows + 4 * kPackRows;
        case TensorType::Q4_0:
            return 2 * kPackRows + 16 * kPackRows;
        default:
            return 0;
    }
}
// What a stored 0 stands for: w = d * (stored - offset). 0 for types without this layout.
inline constexpr int packedOffset(TensorType type) {
    return type == TensorType::Q8_0 ? 128 : type == TensorType::Q5_0 ? 16
                                        : type == TensorType::Q4_0   ? 8
                                                                     : 0;
}

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
// Activations are BlockQ8K rows. PackedMatmulFn's arguments.
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
// The same blocks, bit for bit (a prefill chunk's activations are quantised once per product).
void quantizeActivationRowAvx512(const float* x, std::int64_t k, void* blocks);
void quantizeActivationRowKAvx512(const float* x, std::int64_t k, void* blocks);

// Whether `weightType` meets BlockQ8K activations (the K types), BlockQ8Act (the other quantised
// types) or plain f32.
bool usesQ8KActivations(TensorType weightType);

}  // namespace iris::kernels::cpu
