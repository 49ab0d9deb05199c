#pragma once
// IEEE half (f16) and bfloat16 (bf16) <-> f32, bit-exact with ggml: f32 -> f16 and f32 -> bf16
// round to nearest even; NaN stays NaN.
//
// The functions are `static inline` on purpose: this header is included by translation units
// compiled for different instruction sets (cpu/x86/*_avx512.cpp), and an ordinary inline
// function would be merged by the linker into one copy, possibly the AVX-512 one, which the
// scalar path would then call on a CPU without AVX-512.

#include <bit>
#include <cstdint>

namespace iris::kernels {

static inline float fp16ToFp32(std::uint16_t h) {
    // Shift the half into the f32 exponent/mantissa positions and rescale by 2^-112 (which also
    // normalises subnormals); Inf/NaN get the f32 maximum exponent instead.
    const std::uint32_t w = std::uint32_t(h) << 16;
    const std::uint32_t sign = w & 0x80000000u;
    const std::uint32_t twoW = w + w;
    constexpr std::uint32_t kExpOffset = 0xE0u << 23;
    const float normalized = std::bit_cast<float>((twoW >> 4) + kExpOffset) * 0x1.0p-112f;
    constexpr std::uint32_t kMagic = 126u << 23;
    const float denormalized = std::bit_cast<float>((twoW >> 17) | kMagic) - 0.5f;
    constexpr std::uint32_t kDenormalCutoff = 1u << 27;
    const std::uint32_t bits =
        sign | (twoW < kDenormalCutoff ? std::bit_cast<std::uint32_t>(denormalized)
                                       : std::bit_cast<std::uint32_t>(normalized));
    return std::bit_cast<float>(bits);
}

static inline std::uint16_t fp32ToFp16(float f) {
    // Scale so that the f32 rounding of the addition below is the f16 rounding (nearest even).
    float base = (std::bit_cast<float>(std::uint32_t(0x77800000)) * (f < 0 ? -f : f)) *
                 std::bit_cast<float>(std::uint32_t(0x08800000));
    const std::uint32_t w = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t twoW = w + w;
    const std::uint32_t sign = w & 0x80000000u;
    std::uint32_t bias = twoW & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(base);
    const std::uint32_t expBits = (bits >> 13) & 0x00007C00u;
    const std::uint32_t mantissaBits = bits & 0x00000FFFu;
    const std::uint32_t nonsign = expBits + mantissaBits;
    return std::uint16_t((sign >> 16) | (twoW > 0xFF000000u ? 0x7E00u : nonsign));
}

static inline float bf16ToFp32(std::uint16_t h) {
    return std::bit_cast<float>(std::uint32_t(h) << 16);
}

static inline std::uint16_t fp32ToBf16(float f) {
    std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 64u);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);                                             // nearest even
    return std::uint16_t(u >> 16);
}

}  // namespace iris::kernels
