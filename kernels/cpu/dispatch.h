#pragma once
// Run-time choice of a CPU kernel variant. Every op keeps one IsaVariants table next to its
// scalar reference; this is the only place that maps a CpuIsa to a function.

#include "kernels/cpu_features.h"

namespace iris::kernels::cpu {

// One op's variants; nullptr marks a level the op has no code for (the next lower one runs).
template <class Fn>
struct IsaVariants {
    Fn scalar;
    Fn avx2 = nullptr;
    Fn avx512 = nullptr;
};

// The variant for `isa`, or for the closest lower level that has one. Never returns nullptr.
template <class Fn>
constexpr Fn pickVariant(const IsaVariants<Fn>& variants, CpuIsa isa) {
    if (isa >= CpuIsa::Avx512 && variants.avx512 != nullptr) return variants.avx512;
    if (isa >= CpuIsa::Avx2 && variants.avx2 != nullptr) return variants.avx2;
    return variants.scalar;
}

}  // namespace iris::kernels::cpu

// Names an x86 variant in an IsaVariants table; on other processors the slot stays empty.
#if defined(IRIS_KERNELS_X86)
#define IRIS_X86_VARIANT(fn) fn
#else
#define IRIS_X86_VARIANT(fn) nullptr
#endif
