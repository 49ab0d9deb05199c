#pragma once
// Reading GGUF quantisation blocks 32 values at a time, in the layouts of
// kernels/cpu/quant_blocks.h: the decode products feed the unpacked bytes to __dp4a, the prefill
// tiles and the embedding lookup dequantise them. Every function here also compiles for the host
// (the intrinsics have plain fallbacks), so that tests/kernels/quant_units_test.cpp checks the
// layouts against the CPU's dequantisation on machines without a GPU.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/tensor_type.h"

namespace iris::kernels::cuda {

// 32 consecutive weights ready for __dp4a: q[j] holds values 4j..4j+3 as signed bytes, and
// weight v is scaleLo * q_v + offset for v < 16, scaleHi * q_v + offset for v >= 16 (q6_K has a
// scale per 16 values; every other type one per 32).
struct Unit32 {
    int q[8];
    float scaleLo;
    float scaleHi;
    float offset;
};

// Per-byte a - b, wrapping (__vsub4 on the device).
__host__ __device__ inline std::uint32_t subBytes(std::uint32_t a, std::uint32_t b) {
#ifdef __CUDA_ARCH__
    return __vsub4(a, b);
#else
    std::uint32_t r = 0;
    for (int i = 0; i < 4; ++i)
        r |= ((((a >> (8 * i)) & 0xFFu) - ((b >> (8 * i)) & 0xFFu)) & 0xFFu) << (8 * i);
    return r;
#endif
}

// c + the dot product of the four signed bytes of a and of b (__dp4a on the device).
__host__ __device__ inline int dot4(int a, int b, int c) {
#ifdef __CUDA_ARCH__
    return __dp4a(a, b, c);
#else
    for (int i = 0; i < 4; ++i)
        c += int(static_cast<std::int8_t>(std::uint32_t(a) >> (8 * i))) *
             int(static_cast<std::int8_t>(std::uint32_t(b) >> (8 * i)));
    return c;
#endif
}

__host__ __device__ inline float bitsToFloat(std::uint32_t bits) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(bits);
#else
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
#endif
}

// Blocks are 2-byte aligned (every block size is even and rows start 2-byte aligned), so wider
// values are read as 16-bit halves.
__host__ __device__ inline float halfAt(const std::uint8_t* p) {
    return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short*>(p)));
}

__host__ __device__ inline std::uint32_t load32(const std::uint8_t* p) {
    const auto* h = reinterpret_cast<const unsigned short*>(p);
    return std::uint32_t(h[0]) | (std::uint32_t(h[1]) << 16);
}

// Bit i of `bits` (i < 4) moved to bit 4 of byte i: the fifth bit of four q5 values.
__host__ __device__ inline std::uint32_t fifthBits(std::uint32_t bits) {
    return ((bits & 1u) << 4) | ((bits & 2u) << 11) | ((bits & 4u) << 18) | ((bits & 8u) << 25);
}

// Low nibbles (values 0..15) and high nibbles (16..31) of a legacy block's 16 bytes, plus the
// fifth bits of the q5 types, minus `bias` in every byte.
__host__ __device__ inline void legacyNibbles(const std::uint8_t* qs, std::uint32_t qh,
                                              std::uint32_t bias, Unit32& unit) {
    for (int j = 0; j < 4; ++j) {
        const std::uint32_t w = load32(qs + 4 * j);
        const std::uint32_t lo = (w & 0x0F0F0F0Fu) | fifthBits((qh >> (4 * j)) & 0xFu);
        const std::uint32_t hi = ((w >> 4) & 0x0F0F0F0Fu) | fifthBits((qh >> (16 + 4 * j)) & 0xFu);
        unit.q[j] = int(subBytes(lo, bias));
        unit.q[j + 4] = int(subBytes(hi, bias));
    }
}

// The weights of 32-value unit u of a row of type kType, in the layouts of quant_blocks.h.
template <TensorType kType>
__host__ __device__ Unit32 loadUnit(const std::uint8_t* row, std::int64_t u) {
    Unit32 unit{};
    if constexpr (kType == TensorType::Q4_0 || kType == TensorType::Q4_1 ||
                  kType == TensorType::Q5_0 || kType == TensorType::Q5_1) {
        constexpr bool kHasMin = kType == TensorType::Q4_1 || kType == TensorType::Q5_1;
        constexpr bool kFive = kType == TensorType::Q5_0 || kType == TensorType::Q5_1;
        constexpr int kHeader = (kHasMin ? 4 : 2) + (kFive ? 4 : 0);
        const std::uint8_t* b = row + u * (kHeader + 16);
        const std::uint32_t qh = kFive ? load32(b + (kHasMin ? 4 : 2)) : 0u;
        // Without a minimum the stored value is biased by 8 (q4) or 16 (q5).
        const std::uint32_t bias = kHasMin ? 0u : (kFive ? 0x10101010u : 0x08080808u);
        legacyNibbles(b + kHeader, qh, bias, unit);
        unit.scaleLo = unit.scaleHi = halfAt(b);
        unit.offset = kHasMin ? halfAt(b + 2) : 0.0f;
    } else if constexpr (kType == TensorType::Q8_0) {
        const std::uint8_t* b = row + u * 34;
        for (int j = 0; j < 8; ++j)
            unit.q[j] = int(load32(b + 2 + 4 * j));
        unit.scaleLo = unit.scaleHi = halfAt(b);
    } else if constexpr (kType == TensorType::Q4_K || kType == TensorType::Q5_K) {
        constexpr bool kFive = kType == TensorType::Q5_K;
        const int s = int(u % 8);  // sub-block of the 256-value super-block
        const std::uint8_t* b = row + (u / 8) * (kFive ? 176 : 144);
        // Sub-blocks 2i and 2i+1 are the low and high nibbles of the same 32 bytes.
        const std::uint8_t* qs = b + (kFive ? 48 : 16) + 32 * (s / 2);
        const int shift = (s % 2) * 4;
        for (int j = 0; j < 8; ++j) {
            std::uint32_t q = (load32(qs + 4 * j) >> shift) & 0x0F0F0F0Fu;
            if constexpr (kFive) q |= ((load32(b + 16 + 4 * j) >> s) & 0x01010101u) << 4;
            unit.q[j] = int(q);
        }
        int scale = 0, min = 0;
        cpu::scaleMinK4(s, b + 4, scale, min);
        unit.scaleLo = unit.scaleHi = halfAt(b) * float(scale);
        unit.offset = -halfAt(b + 2) * float(min);
    } else if constexpr (kType == TensorType::Q6_K) {
        const int s = int(u % 8);
        const int half = s / 4, quarter = s % 4;
        const std::uint8_t* b = row + (u / 8) * 210;
        // Quarter t of a 128-value half: low 4 bits in the low (t < 2) or high nibbles of
        // ql[32 (t % 2) ...], high 2 bits at bit 2t of qh, scales 2t and 2t+1 of the half.
        const std::uint8_t* ql = b + 64 * half + 32 * (quarter % 2);
        const std::uint8_t* qh = b + 128 + 32 * half;
        const auto* scales = reinterpret_cast<const std::int8_t*>(b + 192) + 8 * half + 2 * quarter;
        for (int j = 0; j < 8; ++j) {
            const std::uint32_t lo = (load32(ql + 4 * j) >> (quarter >= 2 ? 4 : 0)) & 0x0F0F0F0Fu;
            const std::uint32_t hi = ((load32(qh + 4 * j) >> (2 * quarter)) & 0x03030303u) << 4;
            unit.q[j] = int(subBytes(lo | hi, 0x20202020u));
        }
        const float d = halfAt(b + 208);
        unit.scaleLo = d * float(scales[0]);
        unit.scaleHi = d * float(scales[1]);
    }
    return unit;
}

// Weight v (0..31) of a unit as a float.
__host__ __device__ inline float unitValue(const Unit32& unit, int v) {
    const int q = static_cast<signed char>((unit.q[v / 4] >> (8 * (v % 4))) & 0xFF);
    return (v < 16 ? unit.scaleLo : unit.scaleHi) * float(q) + unit.offset;
}

// The weights of a unit times an activation block (values quantised to 8 bits with one scale):
// integer dot products of each 16-value half, then the scales and the offset term.
__host__ __device__ inline float unitDot(const Unit32& unit, const cpu::BlockQ8Act& a) {
    int aq[8];
    std::memcpy(aq, a.qs, sizeof aq);
    int lo = 0, hi = 0;
    for (int j = 0; j < 4; ++j) {
        lo = dot4(unit.q[j], aq[j], lo);
        hi = dot4(unit.q[j + 4], aq[j + 4], hi);
    }
    return a.d * (unit.scaleLo * float(lo) + unit.scaleHi * float(hi)) +
           unit.offset * (a.d * float(a.sum));
}

// Value j of a row of f32, f16 or bf16 values.
template <TensorType kType>
__host__ __device__ float floatAt(const std::uint8_t* row, std::int64_t j) {
    if constexpr (kType == TensorType::F32) return reinterpret_cast<const float*>(row)[j];
    const unsigned short h = reinterpret_cast<const unsigned short*>(row)[j];
    if constexpr (kType == TensorType::F16) return __half2float(__ushort_as_half(h));
    return bitsToFloat(std::uint32_t(h) << 16);  // bf16
}

constexpr bool isFloatType(TensorType type) {
    return type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16;
}

template <TensorType kType>
using TypeTag = std::integral_constant<TensorType, kType>;

// Calls f(TypeTag<type>{}) for each type the device kernels read (f32, f16, bf16 and the legacy
// and K quantised types); cudaErrorInvalidValue for any other.
template <class F>
cudaError_t withDeviceType(TensorType type, F&& f) {
    switch (type) {
        case TensorType::F32:
            return f(TypeTag<TensorType::F32>{});
        case TensorType::F16:
            return f(TypeTag<TensorType::F16>{});
        case TensorType::BF16:
            return f(TypeTag<TensorType::BF16>{});
        case TensorType::Q4_0:
            return f(TypeTag<TensorType::Q4_0>{});
        case TensorType::Q4_1:
            return f(TypeTag<TensorType::Q4_1>{});
        case TensorType::Q5_0:
            return f(TypeTag<TensorType::Q5_0>{});
        case TensorType::Q5_1:
            return f(TypeTag<TensorType::Q5_1>{});
        case TensorType::Q8_0:
            return f(TypeTag<TensorType::Q8_0>{});
        case TensorType::Q4_K:
            return f(TypeTag<TensorType::Q4_K>{});
        case TensorType::Q5_K:
            return f(TypeTag<TensorType::Q5_K>{});
        case TensorType::Q6_K:
            return f(TypeTag<TensorType::Q6_K>{});
        default:
            return cudaErrorInvalidValue;
    }
}

}  // namespace iris::kernels::cuda
