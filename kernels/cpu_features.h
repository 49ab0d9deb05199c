#pragma once
// What the processor can run, detected once, and the instruction-set level CPU kernels dispatch to.

#include <optional>
#include <string>
#include <string_view>

namespace iris::kernels {

// Level a CPU kernel variant is written for. Ordered: each level implies the ones below it.
enum class CpuIsa { Scalar, Avx2, Avx512 };

// Instruction-set extensions the CPU has AND the OS saves the registers of (XGETBV), so every
// flag set here is safe to use.
struct CpuFeatures {
    std::string brand;  // e.g. "AMD EPYC 9R45 96-Core Processor"; empty when unknown
    bool sse42 = false;
    bool avx = false;
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avxVnni = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512dq = false;
    bool avx512vl = false;
    bool avx512vnni = false;
    bool avx512bf16 = false;
    bool avx512fp16 = false;
    // AMX tiles with bf16 products (Intel Xeon 4th generation and later), the OS saves the tile
    // state (XCR0) and, on Linux, granted this process the permission to use it
    // (arch_prctl ARCH_REQ_XCOMP_PERM, asked for once during detection).
    bool amxBf16 = false;
};

// The features of the CPU this process runs on. Detected on first call; thread-safe.
const CpuFeatures& cpuFeatures();

// Highest level `features` allows: Avx512 needs F, BW, DQ, VL and VNNI (Ice Lake, Zen 4 and
// later; plus the Avx2 set);
// Avx2 needs AVX2, FMA and F16C.
CpuIsa highestSupportedIsa(const CpuFeatures& features);

// The level kernels dispatch to: highestSupportedIsa(cpuFeatures()), lowered (never raised) by
// the environment variable IRIS_CPU_ISA=scalar|avx2|avx512. Decided on first call; thread-safe.
CpuIsa activeIsa();

std::string_view cpuIsaName(CpuIsa isa);                   // "scalar", "avx2", "avx512"
std::optional<CpuIsa> parseCpuIsa(std::string_view name);  // inverse of cpuIsaName
std::string cpuFeatureList(const CpuFeatures& features);   // "sse4.2 avx avx2 fma ..."

}  // namespace iris::kernels
