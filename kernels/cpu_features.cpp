#include "kernels/cpu_features.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define IRIS_X86 1
#endif
#if defined(__linux__) && IRIS_X86
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace iris::kernels {
namespace {

#if IRIS_X86
struct CpuidRegs {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs cpuid(unsigned leaf, unsigned subleaf = 0) {
    CpuidRegs r;
    if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return {};
    return r;
}

bool bit(unsigned reg, int n) {
    return ((reg >> n) & 1u) != 0;
}

// XCR0: which register files the OS saves on a context switch.
uint64_t readXcr0() {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t{hi} << 32) | lo;
}

// Linux hands out the 8 KiB of tile registers only to processes that ask (since 5.16); without
// the permission the first tile instruction kills the process with SIGILL.
bool requestTilePermission() {
#if defined(__linux__)
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
}

std::string brandString() {
    if (cpuid(0x80000000).eax < 0x80000004) return {};
    std::array<char, 49> text{};
    for (unsigned i = 0; i < 3; ++i) {
        const CpuidRegs r = cpuid(0x80000002 + i);
        const std::array<unsigned, 4> words = {r.eax, r.ebx, r.ecx, r.edx};
        std::memcpy(text.data() + 16 * i, words.data(), 16);
    }
    std::string brand(text.data());
    const auto first = brand.find_first_not_of(' ');
    const auto last = brand.find_last_not_of(' ');
    return first == std::string::npos ? std::string() : brand.substr(first, last - first + 1);
}

CpuFeatures detect() {
    CpuFeatures f;
    f.brand = brandString();
    const unsigned maxLeaf = cpuid(0).eax;
    if (maxLeaf < 1) return f;
    const CpuidRegs l1 = cpuid(1);
    const bool osxsave = bit(l1.ecx, 27);
    const uint64_t xcr0 = osxsave ? readXcr0() : 0;
    const bool osYmm = (xcr0 & 0x6) == 0x6;             // SSE + AVX state
    const bool osZmm = osYmm && (xcr0 & 0xe0) == 0xe0;  // opmask + ZMM_Hi256 + Hi16_ZMM

    f.sse42 = bit(l1.ecx, 20);
    f.avx = osYmm && bit(l1.ecx, 28);
    f.fma = f.avx && bit(l1.ecx, 12);
    f.f16c = f.avx && bit(l1.ecx, 29);
    if (maxLeaf < 7) return f;
    const CpuidRegs l7 = cpuid(7, 0);
    const CpuidRegs l7s1 = cpuid(7, 1);
    f.avx2 = f.avx && bit(l7.ebx, 5);
    f.avxVnni = f.avx && bit(l7s1.eax, 4);
    f.avx512f = osZmm && bit(l7.ebx, 16);
    f.avx512dq = f.avx512f && bit(l7.ebx, 17);
    f.avx512bw = f.avx512f && bit(l7.ebx, 30);
    f.avx512vl = f.avx512f && bit(l7.ebx, 31);
    f.avx512vnni = f.avx512f && bit(l7.ecx, 11);
    f.avx512fp16 = f.avx512f && bit(l7.edx, 23);
    f.avx512bf16 = f.avx512f && bit(l7s1.eax, 5);
    const bool osTiles = (xcr0 & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
    f.amxBf16 = osTiles && bit(l7.edx, 24) && bit(l7.edx, 22) && requestTilePermission();
    return f;
}
#else
CpuFeatures detect() {
    return {};
}
#endif

CpuIsa decideActiveIsa() {
    const CpuIsa supported = highestSupportedIsa(cpuFeatures());
    const char* requested = std::getenv("IRIS_CPU_ISA");
    if (requested == nullptr || *requested == '\0') return supported;
    const std::optional<CpuIsa> isa = parseCpuIsa(requested);
    if (!isa)
        return supported;  // an unknown name changes nothing; `iris --version` shows the result
    return *isa < supported ? *isa : supported;
}

}  // namespace

const CpuFeatures& cpuFeatures() {
    static const CpuFeatures features = detect();
    return features;
}

CpuIsa highestSupportedIsa(const CpuFeatures& f) {
    const bool avx2Set = f.avx2 && f.fma && f.f16c;
    if (avx2Set && f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.avx512vnni) {
        return CpuIsa::Avx512;
    }
    if (avx2Set) return CpuIsa::Avx2;
    return CpuIsa::Scalar;
}

CpuIsa activeIsa() {
    static const CpuIsa isa = decideActiveIsa();
    return isa;
}

std::string_view cpuIsaName(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Scalar:
            return "scalar";
        case CpuIsa::Avx2:
            return "avx2";
        case CpuIsa::Avx512:
            return "avx512";
    }
    return "?";
}

std::optional<CpuIsa> parseCpuIsa(std::string_view name) {
    for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512}) {
        if (name == cpuIsaName(isa)) return isa;
    }
    return std::nullopt;
}

std::string cpuFeatureList(const CpuFeatures& f) {
    const std::array<std::pair<bool, const char*>, 14> flags = {{
        {f.sse42, "sse4.2"},
        {f.avx, "avx"},
        {f.avx2, "avx2"},
        {f.fma, "fma"},
        {f.f16c, "f16c"},
        {f.avxVnni, "avx-vnni"},
        {f.avx512f, "avx512f"},
        {f.avx512bw, "avx512bw"},
        {f.avx512dq, "avx512dq"},
        {f.avx512vl, "avx512vl"},
        {f.avx512vnni, "avx512vnni"},
        {f.avx512bf16, "avx512bf16"},
        {f.avx512fp16, "avx512fp16"},
        {f.amxBf16, "amx-bf16"},
    }};
    std::string list;
    for (const auto& [present, name] : flags) {
        if (!present) continue;
        if (!list.empty()) list += ' ';
        list += name;
    }
    return list.empty() ? std::string("none") : list;
}

}  // namespace iris::kernels
