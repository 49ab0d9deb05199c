#pragma once
// ggml's quantisation blocks, byte for byte (ggml-common.h), and the block Iris quantises
// activations into for integer dot products. Plain structs: no padding, any alignment
// (GGUF only guarantees the tensor's start is aligned, and blocks are 18, 22, ... bytes).

#include <cstdint>
#include <cstring>

// The block readers below are also called by the CUDA kernels (kernels/cuda/quant_units.cuh).
#ifdef __CUDACC__
#define IRIS_HOST_DEVICE __host__ __device__
#else
#define IRIS_HOST_DEVICE
#endif

namespace iris::kernels::cpu {

inline constexpr int kQK = 32;    // elements per block of the legacy types
inline constexpr int kQKK = 256;  // elements per super-block of the K types

struct BlockQ4_0 {
    std::uint16_t d;      // f16 scale
    std::uint8_t qs[16];  // element j in the low nibble of qs[j], element j+16 in the high one
};                        // x = (q - 8) * d
struct BlockQ4_1 {
    std::uint16_t d, m;  // f16 scale and minimum
    std::uint8_t qs[16];
};  // x = q * d + m
struct BlockQ5_0 {
    std::uint16_t d;
    std::uint8_t qh[4];  // bit j of the little-endian u32 is the 5th bit of element j
    std::uint8_t qs[16];
};  // x = (q - 16) * d
struct BlockQ5_1 {
    std::uint16_t d, m;
    std::uint8_t qh[4];
    std::uint8_t qs[16];
};  // x = q * d + m
struct BlockQ8_0 {
    std::uint16_t d;
    std::int8_t qs[32];
};  // x = q * d
struct BlockQ4_K {
    std::uint16_t d, dmin;    // f16 scales of the 6-bit sub-block scales and minimums
    std::uint8_t scales[12];  // 8 scales + 8 minimums, 6 bits each (see scaleMinK4)
    std::uint8_t qs[128];     // sub-blocks 2i, 2i+1: low, high nibbles of qs[32i .. 32i+31]
};                            // x = d * sc[s] * q - dmin * m[s]
struct BlockQ5_K {
    std::uint16_t d, dmin;
    std::uint8_t scales[12];
    std::uint8_t qh[32];  // bit s of qh[l] is the 5th bit of element l of sub-block s
    std::uint8_t qs[128];
};
struct BlockQ6_K {
    std::uint8_t ql[128];    // low 4 bits
    std::uint8_t qh[64];     // high 2 bits
    std::int8_t scales[16];  // one signed scale per 16 elements
    std::uint16_t d;
};  // x = d * scales[i / 16] * (q - 32)

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

// Activations quantised for the integer dot products with the legacy types: 32 values, one f32
// scale, and the sum of the values (what the weight types with an offset or a minimum need).
struct BlockQ8Act {
    float d;
    // qs[0] + ... + qs[31], exact: the packed kernels take offset * sum out of their integer dot
    // products (the weights are stored with an offset that makes them unsigned for vpdpbusd).
    std::int32_t sum;
    std::int8_t qs[32];
};
static_assert(sizeof(BlockQ8Act) == 40);

// Activations for the K types (ggml's q8_K layout): one scale per 256 values, so that the
// weights' 6- and 8-bit sub-block scales can be applied in integer arithmetic and converted to
// float once per super-block.
struct BlockQ8K {
    float d;
    std::int16_t bsums[16];  // sum of each 16 consecutive qs
    std::int8_t qs[256];
};
static_assert(sizeof(BlockQ8K) == 292);

// The unsigned stored value of element j (0..31) of a legacy 4/5-bit block: a nibble of qs (low
// nibbles are elements 0..15, high nibbles 16..31), plus bit j of qh as bit 4 for the q5 types.
// The real value is d * (q - 8), d * (q - 16) or d * q + m depending on the type.
template <class Block>
static inline int storedValue(const Block& block, int j) {
    int q = j < 16 ? (block.qs[j] & 0xF) : (block.qs[j - 16] >> 4);
    if constexpr (requires { block.qh; }) {
        std::uint32_t high;
        std::memcpy(&high, block.qh, 4);
        q |= int((high >> j) & 1u) << 4;
    }
    return q;
}

// Scale and minimum of sub-block s (0..7) of a Q4_K/Q5_K block: 6-bit fields packed in 12 bytes.
IRIS_HOST_DEVICE static inline void scaleMinK4(int s, const std::uint8_t* q, int& scale, int& min) {
    if (s < 4) {
        scale = q[s] & 63;
        min = q[s + 4] & 63;
    } else {
        scale = (q[s + 4] & 0xF) | ((q[s - 4] >> 6) << 4);
        min = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
    }
}

}  // namespace iris::kernels::cpu
