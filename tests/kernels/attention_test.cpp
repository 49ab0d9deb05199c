#include "kernels/attention.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/attention.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"

namespace iris::kernels {
namespace {

// A paged K/V pool with a shuffled block table, so a kernel that ignores the table fails.
// `slotted`: the blocks are stored in shuffled slots of an arena (PagedKv::slotOf, as KV tiers
// keep them), slot 0 holding NaN, so a kernel that ignores the slots fails too.
struct Paged {
    int blockSize = 4, kvHeads = 2, headDim = 40;
    TensorType type = TensorType::F16;
    std::vector<std::int32_t> table, slotOf;
    std::vector<std::uint16_t> k16, v16;
    std::vector<float> k32, v32;
    std::vector<double> kRef, vRef;  // [t][g][i] as stored (after f16 rounding)

    Paged(std::int64_t length, TensorType t, unsigned seed, int dims = 40, bool slotted = false,
          int tokensPerBlock = 4)
        : blockSize(tokensPerBlock), headDim(dims), type(t) {
        const std::int64_t blocks = (length + blockSize - 1) / blockSize + 3;
        table.resize(std::size_t(blocks));
        std::iota(table.begin(), table.end(), 0);
        std::mt19937 rng(seed);
        std::shuffle(table.begin(), table.end(), rng);
        const std::int64_t pages = slotted ? blocks + 1 : blocks;
        if (slotted) {
            slotOf.resize(std::size_t(blocks));
            std::iota(slotOf.begin(), slotOf.end(), 1);
            std::shuffle(slotOf.begin(), slotOf.end(), rng);
        }
        const std::size_t elements = std::size_t(pages * blockSize * kvHeads * headDim);
        k16.assign(elements, slotted ? 0xFFFF : 0);  // what no block is written over: NaN
        v16.assign(elements, slotted ? 0xFFFF : 0);
        k32.assign(elements, slotted ? NAN : 0.0f);
        v32.assign(elements, slotted ? NAN : 0.0f);
        kRef.assign(std::size_t(length * kvHeads * headDim), 0.0);
        vRef = kRef;
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (std::int64_t tok = 0; tok < length; ++tok) {
            for (int g = 0; g < kvHeads; ++g) {
                for (int i = 0; i < headDim; ++i) {
                    const std::int32_t block = table[std::size_t(tok / blockSize)];
                    const std::int64_t page = slotted ? slotOf[std::size_t(block)] : block;
                    const std::int64_t at =
                        ((page * blockSize + tok % blockSize) * kvHeads + g) * headDim + i;
                    const float kf = normal(rng), vf = normal(rng);
                    k16[std::size_t(at)] = fp32ToFp16(kf);
                    v16[std::size_t(at)] = fp32ToFp16(vf);
                    k32[std::size_t(at)] = kf;
                    v32[std::size_t(at)] = vf;
                    const std::size_t r = std::size_t((tok * kvHeads + g) * headDim + i);
                    kRef[r] = t == TensorType::F16 ? double(fp16ToFp32(k16[std::size_t(at)]))
                                                   : double(kf);
                    vRef[r] = t == TensorType::F16 ? double(fp16ToFp32(v16[std::size_t(at)]))
                                                   : double(vf);
                }
            }
        }
    }

    PagedKv view() const {
        const bool f16 = type == TensorType::F16;
        return {f16 ? static_cast<const void*>(k16.data()) : k32.data(),
                f16 ? static_cast<const void*>(v16.data()) : v32.data(),
                table.data(),
                blockSize,
                kvHeads,
                headDim,
                type,
                slotOf.empty() ? nullptr : slotOf.data()};
    }
};

class AttentionVariant : public ::testing::TestWithParam<CpuIsa> {
protected:
    void SetUp() override {
        if (GetParam() > highestSupportedIsa(cpuFeatures()))
            GTEST_SKIP() << "this CPU lacks " << cpuIsaName(GetParam());
    }
    cpu::AttendFn fn() const {
        switch (GetParam()) {
#if defined(IRIS_KERNELS_X86)
            case CpuIsa::Avx2:
                return cpu::attendAvx2;
            case CpuIsa::Avx512:
                return cpu::attendAvx512;
#endif
            default:
                return cpu::attendScalar;
        }
    }
};

// 3 query heads per KV head (one vector of lanes), 20 (two vectors side by side) and 60 (four
// with AVX-512, the last one partly used); head sizes the value pass blocks whole (40) and ones
// it does not (36, 38); blocks in the pool and in the slots of an arena; blocks of 4 tokens and
// of 48 (the kernels' 32-key steps then start inside a block).
TEST_P(AttentionVariant, MatchesFloat64SoftmaxAttentionOverPagedBlocks) {
    for (const auto& [heads, dims, block] :
         {std::tuple{6, 40, 4}, std::tuple{40, 40, 4}, std::tuple{40, 36, 4},
          std::tuple{120, 38, 4}, std::tuple{20, 40, 48}}) {
        for (const auto& [type, slotted] :
             {std::pair{TensorType::F16, false}, std::pair{TensorType::F32, false},
              std::pair{TensorType::F16, true}, std::pair{TensorType::F32, true}}) {
            for (std::int64_t length : {1, 3, 4, 5, 17, 130}) {
                const Paged paged(length, type, unsigned(length), dims, slotted, block);
                const int d = paged.headDim;
                std::mt19937 rng(9);
                std::normal_distribution<float> normal(0.0f, 1.0f);
                std::vector<float> q(std::size_t(heads * d), 0.0f);
                for (float& v : q)
                    v = normal(rng);
                const float scale = 1.0f / std::sqrt(float(d));
                std::vector<float> out(q.size(), NAN), scratch(std::size_t(heads * length), 0.0f);
                // The heads in two calls, one crossing a group boundary, as a caller may split
                // them.
                fn()(q.data(), heads, paged.view(), length, scale, out.data(), scratch.data(), 0,
                     2);
                fn()(q.data(), heads, paged.view(), length, scale, out.data(), scratch.data(), 2,
                     heads);
                for (int h = 0; h < heads; ++h) {
                    const int g = h / (heads / 2);
                    std::vector<double> w(std::size_t(length), 0.0);
                    double max = -1e300, sum = 0;
                    for (std::int64_t t = 0; t < length; ++t) {
                        double s = 0;
                        for (int i = 0; i < d; ++i)
                            s += double(q[std::size_t(h * d + i)]) *
                                 paged.kRef[std::size_t((t * 2 + g) * d + i)];
                        w[std::size_t(t)] = s * double(scale);
                        max = std::max(max, w[std::size_t(t)]);
                    }
                    for (double& x : w)
                        sum += (x = std::exp(x - max));
                    for (int i = 0; i < d; ++i) {
                        double want = 0;
                        for (std::int64_t t = 0; t < length; ++t)
                            want += w[std::size_t(t)] / sum *
                                    paged.vRef[std::size_t((t * 2 + g) * d + i)];
                        ASSERT_NEAR(double(out[std::size_t(h * d + i)]), want, 1e-5)
                            << cpuIsaName(GetParam()) << " " << tensorTypeInfo(type).name
                            << (slotted ? " slotted" : "") << " length=" << length << " h=" << h
                            << " of " << heads << " d=" << d << " block=" << block;
                    }
                }
            }
        }
    }
}

// A row's result has the same bits alone and in a tile of rows with other lengths (the tokens
// of a prefill chunk), which the serving engine's batch invariance rests on: a full tile (four
// vectors of lanes with AVX-512), a partly used one, and two vectors' worth.
TEST(AttentionRows, ARowHasTheSameBitsAloneAndInATileOfOtherLengths) {
    for (TensorType type : {TensorType::F16, TensorType::F32}) {
        const std::int64_t longest = 70;
        const Paged paged(longest, type, 5);
        const int d = paged.headDim, tile = attendRowsTile();
        const auto length = [&](int r) { return longest - 3 * (r % 23); };
        std::mt19937 rng(3);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> q(std::size_t(tile * d));
        for (float& v : q)
            v = normal(rng);
        std::vector<float> scratch(std::size_t(attendRowsScratch(d, longest)));
        for (const int count : {tile, tile * 5 / 8, tile * 5 / 16}) {
            std::vector<float> together(q.size(), NAN), alone(std::size_t(d), NAN);
            std::vector<AttentionRow> rows;
            for (int r = 0; r < count; ++r)
                rows.push_back({q.data() + r * d, together.data() + r * d, length(r)});
            attendRows(rows.data(), count, paged.view(), 1, 0.2f, scratch.data());
            for (int r = 0; r < count; ++r) {
                const AttentionRow single{q.data() + r * d, alone.data(), length(r)};
                attendRows(&single, 1, paged.view(), 1, 0.2f, scratch.data());
                for (int i = 0; i < d; ++i)
                    ASSERT_EQ(std::bit_cast<std::uint32_t>(alone[std::size_t(i)]),
                              std::bit_cast<std::uint32_t>(together[std::size_t(r * d + i)]))
                        << tensorTypeInfo(type).name << " row " << r << " of " << count << " value "
                        << i;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Cpu, AttentionVariant,
                         ::testing::Values(CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512),
                         [](const auto& p) { return std::string(cpuIsaName(p.param)); });

}  // namespace
}  // namespace iris::kernels
