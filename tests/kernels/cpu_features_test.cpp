#include "kernels/cpu_features.h"

#include <gtest/gtest.h>

namespace iris::kernels {
namespace {

TEST(CpuFeatures, IsaNamesRoundTrip) {
    for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512}) {
        EXPECT_EQ(parseCpuIsa(cpuIsaName(isa)), isa) << cpuIsaName(isa);
    }
    EXPECT_FALSE(parseCpuIsa("avx1024").has_value());
    EXPECT_FALSE(parseCpuIsa("").has_value());
}

TEST(CpuFeatures, HighestIsaNeedsTheWholeSet) {
    CpuFeatures f;
    EXPECT_EQ(highestSupportedIsa(f), CpuIsa::Scalar);
    f.avx = f.avx2 = f.fma = true;
    EXPECT_EQ(highestSupportedIsa(f), CpuIsa::Scalar) << "AVX2 level also needs F16C";
    f.f16c = true;
    EXPECT_EQ(highestSupportedIsa(f), CpuIsa::Avx2);
    f.avx512f = f.avx512bw = f.avx512vl = true;
    EXPECT_EQ(highestSupportedIsa(f), CpuIsa::Avx2) << "AVX-512 level also needs DQ";
    f.avx512dq = true;
    EXPECT_EQ(highestSupportedIsa(f), CpuIsa::Avx2) << "AVX-512 level also needs VNNI";
    f.avx512vnni = true;
    EXPECT_EQ(highestSupportedIsa(f), CpuIsa::Avx512);
    f.f16c = false;
    EXPECT_EQ(highestSupportedIsa(f), CpuIsa::Scalar) << "AVX-512 level builds on the AVX2 set";
}

TEST(CpuFeatures, DetectedFeaturesAreConsistent) {
    const CpuFeatures& f = cpuFeatures();
    // Every extension implies the register file below it.
    if (f.avx2 || f.fma || f.f16c) {
        EXPECT_TRUE(f.avx);
    }
    if (f.avx512bw || f.avx512dq || f.avx512vl || f.avx512vnni || f.avx512bf16) {
        EXPECT_TRUE(f.avx512f);
    }
    EXPECT_LE(activeIsa(), highestSupportedIsa(f));
    EXPECT_FALSE(cpuFeatureList(f).empty());
}

}  // namespace
}  // namespace iris::kernels
