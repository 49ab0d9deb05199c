// The shared model parts on their own: the linear runner, the tensor binder, the RoPE tables
// the gated FFN's activations and the expert router. The models' reference tests cover how they
// compose.
#include "inference/models/model_parts.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <deque>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "inference/gguf/gguf_writer.h"
#include "inference/models/gated_ffn.h"
#include "inference/models/linear.h"
#include "inference/models/mixture_of_experts.h"
#include "inference/models/rope_tables.h"
#include "inference/models/tensor_binder.h"
#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "kernels/rms_norm.h"

namespace iris::inference {
namespace {

using kernels::TensorType;

std::vector<float> randomValues(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> values(n);
    for (float& v : values)
        v = dist(rng);
    return values;
}

std::vector<std::byte> quantized(TensorType type, const std::vector<float>& values,
                                 std::int64_t in) {
    const std::int64_t rows = std::int64_t(values.size()) / in;
    std::vector<std::byte> bytes(std::size_t(kernels::rowBytes(type, in) * rows));
    for (std::int64_t r = 0; r < rows; ++r)
        kernels::quantizeRow(type, values.data() + r * in,
                             bytes.data() + r * kernels::rowBytes(type, in), in);
    return bytes;
}

// Targets of three activation formats (f32, 8-bit per 32, 8-bit per 256) in one run give what
// each gives alone. A target whose range starts inside a packed group of 16 rows (after a
// target of 40) takes the file's layout there, which may round differently.
TEST(LinearRunner, SharedInputRunEqualsSeparateRuns) {
    constexpr std::int64_t kIn = 256, kRows = 3;
    const std::vector<float> x = randomValues(kRows * kIn, 1);
    const std::vector<float> wf = randomValues(40 * kIn, 2), bias = randomValues(40, 3);
    const std::vector<std::byte> wq = quantized(TensorType::Q8_0, randomValues(32 * kIn, 4), kIn);
    const std::vector<std::byte> wk = quantized(TensorType::Q4_K, randomValues(48 * kIn, 5), kIn);
    Linear f32{TensorType::F32, wf.data(), kIn, 40, bias.data(), nullptr};
    Linear q8{TensorType::Q8_0, wq.data(), kIn, 32, nullptr, nullptr};
    Linear q4k{TensorType::Q4_K, wk.data(), kIn, 48, nullptr, nullptr};
    ThreadPool pool(2);
    LinearRunner runner;
    runner.pack(q8);
    runner.pack(q4k);

    std::vector<float> alone1(kRows * 40), alone2(kRows * 32), alone3(kRows * 48);
    runner.run(f32, x.data(), kRows, alone1.data(), pool);
    runner.run(q8, x.data(), kRows, alone2.data(), pool);
    runner.run(q4k, x.data(), kRows, alone3.data(), pool);
    std::vector<float> together1(kRows * 40), together2(kRows * 32), together3(kRows * 48);
    runner.run({{&q8, together2.data()}, {&q4k, together3.data()}, {&f32, together1.data()}},
               x.data(), kRows, pool);
    EXPECT_EQ(together1, alone1);
    EXPECT_EQ(together2, alone2);
    EXPECT_EQ(together3, alone3);

    runner.run({{&f32, together1.data()}, {&q8, together2.data()}, {&q4k, together3.data()}},
               x.data(), kRows, pool);
    EXPECT_EQ(together1, alone1);
    for (std::size_t i = 0; i < alone2.size(); ++i)
        EXPECT_NEAR(together2[i], alone2[i], 1e-4f * std::max(1.0f, std::abs(alone2[i]))) << i;
    for (std::size_t i = 0; i < alone3.size(); ++i)
        EXPECT_NEAR(together3[i], alone3[i], 1e-4f * std::max(1.0f, std::abs(alone3[i]))) << i;

    // The f32 target against a plain sum, bias included.
    for (std::int64_t r = 0; r < kRows; ++r) {
        for (std::int64_t n = 0; n < 40; ++n) {
            double want = double(bias[std::size_t(n)]);
            for (std::int64_t j = 0; j < kIn; ++j)
                want += double(x[std::size_t(r * kIn + j)]) * double(wf[std::size_t(n * kIn + j)]);
            EXPECT_NEAR(alone1[std::size_t(r * 40 + n)], want, 1e-4) << r << ", " << n;
        }
    }
}

TEST(LinearRunner, ExpertOfAStackIsItsRows) {
    const std::vector<std::byte> data =
        quantized(TensorType::Q8_0, randomValues(3 * 16 * 32, 6), 32);
    const ExpertStack stack{TensorType::Q8_0, data.data(), 32, 16, 3};
    const Linear second = stack.expert(2);
    EXPECT_EQ(second.data, data.data() + 2 * 16 * kernels::rowBytes(TensorType::Q8_0, 32));
    EXPECT_EQ(second.in, 32);
    EXPECT_EQ(second.out, 16);
}

struct BinderFile {
    std::vector<std::byte> bytes;
    GgufFile file;
};

BinderFile makeFile() {
    GgufWriter writer;
    writer.set("general.architecture", std::string("test"));
    const std::vector<float> norm = {1.0f, -2.0f, 0.5f, 3.0f};
    EXPECT_TRUE(writer.addTensor("norm.weight", {4}, norm).isOk());
    std::vector<std::uint16_t> half(4);
    for (std::size_t i = 0; i < 4; ++i)
        half[i] = kernels::fp32ToFp16(norm[i]);
    EXPECT_TRUE(writer
                    .addTensor("half.weight", TensorType::F16, {4},
                               std::as_bytes(std::span<const std::uint16_t>(half)))
                    .isOk());
    const std::vector<float> w = randomValues(8 * 4, 7);
    EXPECT_TRUE(writer.addTensor("proj.weight", {4, 8}, w).isOk());
    std::vector<std::byte> bytes = writer.serialize();
    Result<GgufFile> file = GgufFile::parse(bytes, "parts.gguf");
    EXPECT_TRUE(file) << file.status().message();
    return {std::move(bytes), std::move(*file)};
}

TEST(TensorBinder, BindsVectorsAndLinearsWithCheckedShapes) {
    const BinderFile f = makeFile();
    const TensorBinder bind(f.file);
    Result<const float*> norm = bind.vector("norm.weight", 4);
    ASSERT_TRUE(norm) << norm.status().message();
    EXPECT_EQ((*norm)[1], -2.0f);
    Result<Linear> proj = bind.linear("proj", 4, 8, false);
    ASSERT_TRUE(proj) << proj.status().message();
    EXPECT_EQ(proj->in, 4);
    EXPECT_EQ(proj->out, 8);
    EXPECT_EQ(proj->bias, nullptr);

    const Status misshapen = bind.linear("proj", 8, 4, false).status();
    EXPECT_EQ(misshapen.code(), StatusCode::Corrupt);
    EXPECT_NE(misshapen.message().find("'proj.weight'"), std::string::npos) << misshapen.message();
    const Status noBias = bind.linear("proj", 4, 8, true).status();
    EXPECT_EQ(noBias.code(), StatusCode::NotFound);
    EXPECT_NE(noBias.message().find("'proj.bias'"), std::string::npos) << noBias.message();
}

TEST(TensorBinder, HalfVectorsNeedCopyStorage) {
    const BinderFile f = makeFile();
    const Status refused = TensorBinder(f.file).vector("half.weight", 4).status();
    EXPECT_EQ(refused.code(), StatusCode::Unsupported);
    EXPECT_NE(refused.message().find("parts.gguf"), std::string::npos) << refused.message();
    EXPECT_NE(refused.message().find("'half.weight'"), std::string::npos) << refused.message();

    std::deque<std::vector<float>> copies;
    const TensorBinder bind(f.file, {.f32Copies = &copies});
    Result<const float*> half = bind.vector("half.weight", 4);
    ASSERT_TRUE(half) << half.status().message();
    EXPECT_EQ(std::vector<float>(*half, *half + 4), (std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f}));
    EXPECT_EQ(copies.size(), 1u);
}

TEST(RopeTables, MultimodalSectionsRotateByTheirPositionComponent) {
    ModelConfig config;
    config.ropeDims = 8;  // 4 frequency pairs, one per section
    config.ropeBase = 100.0f;
    config.multimodalRope = true;
    config.ropeSections = {1, 1, 1, 1};
    const std::vector<TokenInput> batch = {{0, 0, 0, {3, 5, 7, 11}, false}};
    RopeTables rope;
    rope.build(batch, config);
    for (int i = 0; i < 4; ++i) {
        std::vector<float> head(8, 0.0f);
        head[std::size_t(i)] = 1.0f;
        rope.apply(head.data(), 1, 8);
        const double angle =
            double(batch[0].position[std::size_t(i)]) * std::pow(100.0, -2.0 * i / 8.0);
        EXPECT_NEAR(head[std::size_t(i)], std::cos(angle), 1e-6) << i;
        EXPECT_NEAR(head[std::size_t(i + 4)], std::sin(angle), 1e-6) << i;
    }
}

// A prefill chunk's worth of values is split into pieces that cover each item once; a decode
// step's few rows run in one call on this thread.
TEST(ParallelItems, SplitsLargePassesAndRunsSmallOnesInOneCall) {
    ThreadPool pool(2);
    std::vector<int> seen(1000, 0);
    std::atomic<int> calls = 0;
    parallelItems(pool, 1000, 896, [&](std::int64_t begin, std::int64_t end) {
        ++calls;
        for (std::int64_t i = begin; i < end; ++i)
            ++seen[std::size_t(i)];
    });
    EXPECT_GT(calls.load(), 1);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 1000);

    std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
    parallelItems(pool, 4, 896, [&](std::int64_t begin, std::int64_t end) {
        pieces.emplace_back(begin, end);  // one call, so no race
    });
    EXPECT_EQ(pieces, (std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 4}}));
}

// The element-wise passes split between threads give the bits of the one-thread pass: RMSNorm
// rows, RoPE, the residual, and the K/V (and MSA indexer key) stores.
TEST(ParallelItems, ThreadedPassesGiveTheOneThreadBits) {
    constexpr std::int64_t kTokens = 300, kWidth = 256, kHeads = 4, kHeadDim = 64;
    ThreadPool pool(2);
    const auto equalBits = [](const std::vector<float>& a, const std::vector<float>& b) {
        return a.size() == b.size() &&
               std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    const std::vector<float> x = randomValues(kTokens * kWidth, 11), w = randomValues(kWidth, 12);
    std::vector<float> serial(x.size()), threaded(x.size());
    kernels::rmsNorm(x.data(), kWidth, w.data(), serial.data(), kWidth, kTokens, kWidth, 1e-6f);
    rmsNormRows(x.data(), w.data(), threaded.data(), kTokens, kWidth, 1e-6f, pool);
    EXPECT_TRUE(equalBits(serial, threaded));

    addResidual(serial.data(), x.data(), kTokens * kWidth);
    addResidual(threaded.data(), x.data(), kTokens * kWidth, pool);
    EXPECT_TRUE(equalBits(serial, threaded));

    ModelConfig config;
    config.ropeDims = int(kHeadDim);
    config.ropeBase = 10000.0f;
    std::vector<TokenInput> batch;
    for (std::int64_t t = 0; t < kTokens; ++t)
        batch.push_back({std::int32_t(t % 100),
                         0,
                         t,
                         {std::int32_t(t), std::int32_t(t), std::int32_t(t), 0},
                         false});
    RopeTables rope;
    rope.build(batch, config);
    rope.apply(serial.data(), int(kHeads), int(kHeadDim));
    rope.apply(threaded.data(), int(kHeads), int(kHeadDim), pool);
    EXPECT_TRUE(equalBits(serial, threaded));

    KvCacheOptions options;
    options.layers = 2;
    options.kvHeads = 2;
    options.headDim = int(kHeadDim);
    options.blocks = 64;
    options.indexerDim = 32;
    options.indexerFirstLayer = 1;
    options.selectionBlock = 16;
    Result<KvCache> one = KvCache::create(options), two = KvCache::create(options);
    ASSERT_TRUE(one && two);
    for (KvCache* cache : {&*one, &*two}) {
        const SequenceId s = cache->newSequence();
        ASSERT_EQ(s, 0);
        ASSERT_TRUE(cache->extend(s, kTokens).isOk());
    }
    const std::vector<float> k = randomValues(kTokens * 2 * kHeadDim, 13),
                             v = randomValues(k.size(), 14),
                             ik = randomValues(std::size_t(kTokens * 32), 15);
    writeKv(1, batch, k.data(), v.data(), ik.data(), *one);
    writeKv(1, batch, k.data(), v.data(), ik.data(), *two, pool);
    for (std::int64_t t = 0; t < kTokens; ++t) {
        EXPECT_EQ(std::memcmp(one->keySlot(1, 0, t), two->keySlot(1, 0, t), 2 * kHeadDim * 2), 0);
        EXPECT_EQ(std::memcmp(one->valueSlot(1, 0, t), two->valueSlot(1, 0, t), 2 * kHeadDim * 2),
                  0);
        EXPECT_EQ(std::memcmp(one->indexKeySlot(1, 0, t), two->indexKeySlot(1, 0, t), 32 * 4), 0)
            << t;
    }
}

// Dense attention of one token over more keys than the per-thread scratch keeps (64k): the
// piece takes a buffer of its own and gives the bits of the kernel's own head-range form.
TEST(DenseAttention, AContextPastTheKeptScratchGivesTheKernelsBits) {
    constexpr std::int64_t kKeys = 70000;
    constexpr int kHeads = 4, kHeadDim = 16;
    KvCacheOptions options;
    options.layers = 1;
    options.kvHeads = 1;
    options.headDim = kHeadDim;
    options.blocks = (kKeys + 15) / 16;
    Result<KvCache> cache = KvCache::create(options);
    ASSERT_TRUE(cache);
    const SequenceId s = cache->newSequence();
    ASSERT_TRUE(cache->extend(s, kKeys).isOk());
    std::vector<TokenInput> all;
    for (std::int64_t t = 0; t < kKeys; ++t)
        all.push_back({0, s, t, {}, false});
    const std::vector<float> k = randomValues(std::size_t(kKeys * kHeadDim), 21),
                             v = randomValues(k.size(), 22);
    ThreadPool pool(2);
    writeKv(0, all, k.data(), v.data(), nullptr, *cache, pool);

    const std::vector<float> q = randomValues(kHeads * kHeadDim, 23);
    std::vector<float> engine(q.size()), kernel(q.size());
    const std::vector<TokenInput> last = {all.back()};
    attendDense(0, last, q.data(), kHeads, *cache, pool, engine.data());
    kernels::attendPaged(q.data(), kHeads, pagedKv(*cache, 0, s), kKeys,
                         1.0f / std::sqrt(float(kHeadDim)), kernel.data(), nullptr, 0, kHeads);
    EXPECT_EQ(std::memcmp(engine.data(), kernel.data(), engine.size() * sizeof(float)), 0);
}

TEST(GatedFfn, SwiGluOaiClampsGateAndUp) {
    const std::vector<float> gate = {-1.0f, 0.5f, 9.0f}, up = {-9.0f, 0.25f, 9.0f};
    std::vector<float> out(3);
    swigluOai(gate.data(), up.data(), out.data(), 3);
    const auto want = [](double g, double u) {
        g = std::min(g, 7.0);
        u = std::clamp(u, -7.0, 7.0);
        return g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
    };
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_NEAR(out[i], want(gate[i], up[i]),
                    1e-5 * std::max(1.0, std::abs(want(gate[i], up[i]))))
            << i;
}

// routeSigmoid against a float64 sort: the k largest sigmoid(logit) + bias (ties to the lower
// id), weighed by the unbiased sigmoid, normalised and scaled; and without normalisation.
TEST(MixtureOfExperts, SigmoidRoutingPicksTheBiasedTopKAndWeighsUnbiased) {
    for (bool normalise : {true, false}) {
        const ExpertRouting routing{16, 4, normalise, 2.5f};
        for (unsigned seed = 1; seed <= 20; ++seed) {
            const std::vector<float> logits = randomValues(16, seed);
            std::vector<float> bias = randomValues(16, seed + 100);
            for (float& b : bias)
                b *= 0.2f;
            std::vector<int> order(16);
            for (int e = 0; e < 16; ++e)
                order[std::size_t(e)] = e;
            const auto sigmoid = [&](int e) {
                return 1.0 / (1.0 + std::exp(-double(logits[std::size_t(e)])));
            };
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
                return sigmoid(a) + double(bias[std::size_t(a)]) >
                       sigmoid(b) + double(bias[std::size_t(b)]);
            });
            double sum = 0;
            for (int i = 0; i < 4; ++i)
                sum += sigmoid(order[std::size_t(i)]);

            int experts[4];
            float weights[4];
            routeSigmoid(logits.data(), bias.data(), routing, experts, weights);
            for (int i = 0; i < 4; ++i) {
                EXPECT_EQ(experts[i], order[std::size_t(i)]) << "seed " << seed << " rank " << i;
                const double expected =
                    sigmoid(order[std::size_t(i)]) * (normalise ? 1.0 / sum : 1.0) * 2.5;
                EXPECT_NEAR(weights[i], expected, 1e-5 * expected) << "seed " << seed;
            }
        }
    }
}

}  // namespace
}  // namespace iris::inference
