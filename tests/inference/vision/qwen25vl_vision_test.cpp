// The Qwen2.5-VL vision tower against a float64 reference written here from docs/qwen25vl.md
// sections 4.2-4.5: plain loops over patches in the order ImagePatches gives them, attention
// windows decided from each patch's coordinates (no permutation), merged tokens read as four
// consecutive rows.
#include <algorithm>
#include <cmath>
#include <random>
#include <span>

#include <gtest/gtest.h>

#include "inference/gguf/gguf_file.h"
#include "inference/gguf/gguf_writer.h"
#include "inference/thread_pool.h"
#include "inference/vision/vision_model.h"
#include "kernels/activation.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace iris::inference {
namespace {

using kernels::TensorType;
using testing::makeTinyMmproj;
using testing::TinyMmproj;
using testing::TinyMmprojOptions;

ImagePatches randomImage(int gridH, int gridW, std::uint32_t seed) {
    ImagePatches image;
    image.gridH = gridH;
    image.gridW = gridW;
    image.resizedHeight = gridH * 14;
    image.resizedWidth = gridW * 14;
    image.originalHeight = image.resizedHeight;
    image.originalWidth = image.resizedWidth;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.8f, 2.1f);  // the range of normalised pixels
    image.values.resize(std::size_t(image.patchCount() * image.patchValues()));
    // A still image repeats its frame; the tower must not rely on it, so frames differ here.
    for (float& v : image.values)
        v = dist(rng);
    return image;
}

using Matrix = std::vector<double>;  // row-major

// y (rows, out) = x (rows, in) W^T + b, W stored (out, in) as ggml's {in, out}.
Matrix referenceLinear(const Matrix& x, std::int64_t rows, std::int64_t in,
                       const std::vector<float>& w, const std::vector<float>* b, std::int64_t out) {
    Matrix y(static_cast<std::size_t>(rows * out));
    for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t n = 0; n < out; ++n) {
            double sum = b != nullptr ? double((*b)[std::size_t(n)]) : 0.0;
            for (std::int64_t j = 0; j < in; ++j)
                sum += x[std::size_t(r * in + j)] * double(w[std::size_t(n * in + j)]);
            y[std::size_t(r * out + n)] = sum;
        }
    }
    return y;
}

Matrix referenceRmsNorm(const Matrix& x, std::int64_t rows, std::int64_t width,
                        const std::vector<float>& w) {
    Matrix y(x.size());
    for (std::int64_t r = 0; r < rows; ++r) {
        double squares = 0.0;
        for (std::int64_t i = 0; i < width; ++i)
            squares += x[std::size_t(r * width + i)] * x[std::size_t(r * width + i)];
        const double scale = 1.0 / std::sqrt(squares / double(width) + 1e-6);
        for (std::int64_t i = 0; i < width; ++i)
            y[std::size_t(r * width + i)] =
                x[std::size_t(r * width + i)] * scale * double(w[std::size_t(i)]);
    }
    return y;
}

double geluTanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

// The whole tower and merger in float64; returns tokenCount rows of projection floats.
Matrix referenceEncode(const TinyMmproj& model, const TinyMmprojOptions& o,
                       const ImagePatches& image) {
    const auto& w = model.weights;
    const auto W = [&](const std::string& name) -> const std::vector<float>& { return w.at(name); };
    const std::int64_t S = image.patchCount(), C = o.width, H = o.heads, D = C / H;
    const std::int64_t p = o.patchSize, area = p * p, F = o.ffn;
    // Coordinates of each row: ImagePatches lists 2x2 merge windows in raster order, each as
    // (dy, dx) = (0,0), (0,1), (1,0), (1,1).
    std::vector<std::int64_t> row(static_cast<std::size_t>(S)), col(static_cast<std::size_t>(S)),
        window(static_cast<std::size_t>(S));
    const std::int64_t unitsW = image.gridW / 2;
    const std::int64_t windowUnits = 112 / 14 / 2;
    const std::int64_t windowsW = (unitsW + windowUnits - 1) / windowUnits;
    for (std::int64_t i = 0; i < S; ++i) {
        const std::int64_t unit = i / 4, d = i % 4;
        row[std::size_t(i)] = unit / unitsW * 2 + d / 2;
        col[std::size_t(i)] = unit % unitsW * 2 + d % 2;
        window[std::size_t(i)] = row[std::size_t(i)] / 2 / windowUnits * windowsW +
                                 col[std::size_t(i)] / 2 / windowUnits;
    }

    // Conv3d with kernel = stride = (2, p, p): a dot product per patch and output channel.
    Matrix x(static_cast<std::size_t>(S * C));
    const std::vector<float>* kernels[2] = {&W("v.patch_embd.weight"), &W("v.patch_embd.weight.1")};
    for (std::int64_t i = 0; i < S; ++i) {
        const float* patch = image.values.data() + i * image.patchValues();
        for (std::int64_t c = 0; c < C; ++c) {
            double sum = 0.0;
            for (int t = 0; t < 2; ++t)
                for (std::int64_t ch = 0; ch < 3; ++ch)
                    for (std::int64_t e = 0; e < area; ++e)
                        sum += double(patch[(ch * 2 + t) * area + e]) *
                               double((*kernels[t])[std::size_t((c * 3 + ch) * area + e)]);
            x[std::size_t(i * C + c)] = sum;
        }
    }

    const auto rope = [&](Matrix& m) {
        const std::int64_t pairs = D / 2, quarter = D / 4;
        for (std::int64_t i = 0; i < S; ++i) {
            for (std::int64_t h = 0; h < H; ++h) {
                double* v = m.data() + i * C + h * D;
                for (std::int64_t j = 0; j < pairs; ++j) {
                    const bool byRow = j < quarter;
                    const double position =
                        double(byRow ? row[std::size_t(i)] : col[std::size_t(i)]);
                    const double f = double(byRow ? j : j - quarter);
                    const double angle = position * std::pow(10000.0, -2.0 * f / double(pairs));
                    const double a = v[j], b = v[j + pairs];
                    v[j] = a * std::cos(angle) - b * std::sin(angle);
                    v[j + pairs] = b * std::cos(angle) + a * std::sin(angle);
                }
            }
        }
    };

    for (std::int64_t blk = 0; blk < o.blocks; ++blk) {
        const std::string b = "v.blk." + std::to_string(blk) + ".";
        const bool full = (blk + 1) % o.windowPattern == 0;
        Matrix h = referenceRmsNorm(x, S, C, W(b + "ln1.weight"));
        Matrix q = referenceLinear(h, S, C, W(b + "attn_q.weight"), &W(b + "attn_q.bias"), C);
        Matrix k = referenceLinear(h, S, C, W(b + "attn_k.weight"), &W(b + "attn_k.bias"), C);
        Matrix v = referenceLinear(h, S, C, W(b + "attn_v.weight"), &W(b + "attn_v.bias"), C);
        rope(q);
        rope(k);
        Matrix attn(std::size_t(S * C), 0.0);
        std::vector<double> score(static_cast<std::size_t>(S));
        for (std::int64_t hd = 0; hd < H; ++hd) {
            for (std::int64_t i = 0; i < S; ++i) {
                double peak = -INFINITY;
                for (std::int64_t j = 0; j < S; ++j) {
                    if (!full && window[std::size_t(j)] != window[std::size_t(i)]) {
                        score[std::size_t(j)] = -INFINITY;
                        continue;
                    }
                    double dot = 0.0;
                    for (std::int64_t d = 0; d < D; ++d)
                        dot +=
                            q[std::size_t(i * C + hd * D + d)] * k[std::size_t(j * C + hd * D + d)];
                    score[std::size_t(j)] = dot / std::sqrt(double(D));
                    peak = std::max(peak, score[std::size_t(j)]);
                }
                double total = 0.0;
                for (std::int64_t j = 0; j < S; ++j) {
                    score[std::size_t(j)] = std::exp(score[std::size_t(j)] - peak);
                    total += score[std::size_t(j)];
                }
                for (std::int64_t j = 0; j < S; ++j) {
                    const double pj = score[std::size_t(j)] / total;
                    if (pj == 0.0) continue;
                    for (std::int64_t d = 0; d < D; ++d)
                        attn[std::size_t(i * C + hd * D + d)] +=
                            pj * v[std::size_t(j * C + hd * D + d)];
                }
            }
        }
        Matrix projected =
            referenceLinear(attn, S, C, W(b + "attn_out.weight"), &W(b + "attn_out.bias"), C);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] += projected[i];

        h = referenceRmsNorm(x, S, C, W(b + "ln2.weight"));
        Matrix gate =
            referenceLinear(h, S, C, W(b + "ffn_gate.weight"), &W(b + "ffn_gate.bias"), F);
        const Matrix up =
            referenceLinear(h, S, C, W(b + "ffn_up.weight"), &W(b + "ffn_up.bias"), F);
        for (std::size_t i = 0; i < gate.size(); ++i)
            gate[i] =
                (o.useSilu ? gate[i] / (1.0 + std::exp(-gate[i])) : geluTanh(gate[i])) * up[i];
        const Matrix down =
            referenceLinear(gate, S, F, W(b + "ffn_down.weight"), &W(b + "ffn_down.bias"), C);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] += down[i];
    }

    // Merger: the four rows of a merge window side by side are one (4C) row, already in the
    // token's raster position.
    const Matrix normed = referenceRmsNorm(x, S, C, W("v.post_ln.weight"));
    const std::int64_t tokens = S / 4;
    Matrix hidden =
        referenceLinear(normed, tokens, 4 * C, W("mm.0.weight"), &W("mm.0.bias"), 4 * C);
    for (double& value : hidden)
        value = geluTanh(value);
    return referenceLinear(hidden, tokens, 4 * C, W("mm.2.weight"), &W("mm.2.bias"), o.projection);
}

struct Comparison {
    double maxRelative;   // max |a - b| / max |b|
    double normRelative;  // ||a - b|| / ||b||
};

Comparison compare(const std::vector<float>& actual, const Matrix& expected) {
    double maxDiff = 0.0, maxRef = 0.0, diff2 = 0.0, ref2 = 0.0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const double d = double(actual[i]) - expected[i];
        maxDiff = std::max(maxDiff, std::abs(d));
        maxRef = std::max(maxRef, std::abs(expected[i]));
        diff2 += d * d;
        ref2 += expected[i] * expected[i];
    }
    return {maxDiff / maxRef, std::sqrt(diff2 / ref2)};
}

class Qwen25VlVisionMatches : public ::testing::TestWithParam<TensorType> {};

TEST_P(Qwen25VlVisionMatches, Float64ReferenceOnSeveralWindows) {
    TinyMmprojOptions options;
    options.matrixType = GetParam();
    const TinyMmproj model = makeTinyMmproj(options);
    Result<GgufFile> file = GgufFile::parse(std::span<const std::byte>(model.bytes), "tiny.gguf");
    ASSERT_TRUE(file) << file.status().message();
    Result<std::unique_ptr<VisionModel>> tower = VisionModel::load(*file);
    ASSERT_TRUE(tower) << tower.status().message();

    // 224 x 168 pixels: 16 x 12 patches, 8 x 6 merged tokens, windows of 4 x 4 tokens -> a
    // 2 x 2 window grid whose lower row is partial.
    const ImagePatches image = randomImage(12, 16, 7);
    ThreadPool pool(2);
    std::vector<float> embeddings;
    ASSERT_TRUE((*tower)->encode(image, pool, embeddings).isOk());
    ASSERT_EQ(std::int64_t(embeddings.size()), image.tokenCount() * options.projection);

    const Matrix expected = referenceEncode(model, options, image);
    const Comparison c = compare(embeddings, expected);
    // Q8_0 weights also meet 8-bit activations, so their products carry quantisation error.
    const double tolerance = GetParam() == TensorType::Q8_0 ? 3e-2 : 1e-3;
    EXPECT_LT(c.maxRelative, tolerance);
    EXPECT_LT(c.normRelative, tolerance);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, Qwen25VlVisionMatches,
                         ::testing::Values(TensorType::F32, TensorType::F16, TensorType::BF16,
                                           TensorType::Q8_0),
                         [](const ::testing::TestParamInfo<TensorType>& p) {
                             return std::string(kernels::tensorTypeInfo(p.param).name);
                         });

TEST(Qwen25VlVision, Bf16PrecisionStaysWithinBf16RoundingOfFloat64) {
    // Every product's operands rounded to bf16 (8 significant bits, relative 2^-9): through two
    // blocks and the merger the embeddings move by about 1e-2 of their size, no more; and they
    // do move, or the precision setting was ignored.
    TinyMmprojOptions options;
    options.matrixType = TensorType::F16;
    const TinyMmproj model = makeTinyMmproj(options);
    Result<GgufFile> file = GgufFile::parse(std::span<const std::byte>(model.bytes), "tiny.gguf");
    ASSERT_TRUE(file) << file.status().message();
    Result<std::unique_ptr<VisionModel>> tower = VisionModel::load(*file);
    ASSERT_TRUE(tower) << tower.status().message();
    EXPECT_EQ((*tower)->precision(), kernels::GemmPrecision::F32) << "F32 unless set";
    (*tower)->setPrecision(kernels::GemmPrecision::Bf16);
    const ImagePatches image = randomImage(12, 16, 7);
    ThreadPool pool(2);
    std::vector<float> embeddings;
    ASSERT_TRUE((*tower)->encode(image, pool, embeddings).isOk());
    const Comparison c = compare(embeddings, referenceEncode(model, options, image));
    EXPECT_LT(c.maxRelative, 3e-2);
    EXPECT_LT(c.normRelative, 2e-2);
    EXPECT_GT(c.normRelative, 1e-4);
}

TEST(VisionPrecision, NamesRoundTripAndAutoFollowsTheHardware) {
    for (VisionPrecision p : {VisionPrecision::Auto, VisionPrecision::F32, VisionPrecision::Bf16})
        EXPECT_EQ(parseVisionPrecision(visionPrecisionName(p)), p);
    EXPECT_FALSE(parseVisionPrecision("fp8"));
    EXPECT_EQ(resolveVisionPrecision(VisionPrecision::F32), kernels::GemmPrecision::F32);
    EXPECT_EQ(resolveVisionPrecision(VisionPrecision::Bf16), kernels::GemmPrecision::Bf16);
    EXPECT_EQ(resolveVisionPrecision(VisionPrecision::Auto), kernels::gemmBf16Faster()
                                                                 ? kernels::GemmPrecision::Bf16
                                                                 : kernels::GemmPrecision::F32);
}

TEST(Qwen25VlVision, WindowMaskMatters) {
    // The same file with every block full-attention must give different embeddings: proof that
    // the reference comparison above can see a wrong window partition.
    TinyMmprojOptions windowed;
    TinyMmprojOptions full = windowed;
    full.windowPattern = 1;
    const TinyMmproj a = makeTinyMmproj(windowed), b = makeTinyMmproj(full);
    GgufFile fa = *GgufFile::parse(std::span<const std::byte>(a.bytes), "a.gguf");
    GgufFile fb = *GgufFile::parse(std::span<const std::byte>(b.bytes), "b.gguf");
    auto ta = VisionModel::load(fa), tb = VisionModel::load(fb);
    ASSERT_TRUE(ta && tb);
    const ImagePatches image = randomImage(12, 16, 3);
    ThreadPool pool(2);
    std::vector<float> ea, eb;
    ASSERT_TRUE((*ta)->encode(image, pool, ea).isOk());
    ASSERT_TRUE((*tb)->encode(image, pool, eb).isOk());
    const Matrix expectedFull = referenceEncode(b, full, image);
    EXPECT_LT(compare(eb, expectedFull).maxRelative, 1e-3);
    EXPECT_GT(compare(ea, expectedFull).maxRelative, 1e-2);
}

TEST(Qwen25VlVision, GeluGatedMlpWithoutUseSilu) {
    // llama.cpp gates the MLP with GELU unless clip.use_silu is set.
    TinyMmprojOptions options;
    options.useSilu = false;
    const TinyMmproj model = makeTinyMmproj(options);
    GgufFile file = *GgufFile::parse(std::span<const std::byte>(model.bytes), "gelu.gguf");
    auto tower = VisionModel::load(file);
    ASSERT_TRUE(tower) << tower.status().message();
    const ImagePatches image = randomImage(12, 16, 11);
    ThreadPool pool(2);
    std::vector<float> embeddings;
    ASSERT_TRUE((*tower)->encode(image, pool, embeddings).isOk());
    EXPECT_LT(compare(embeddings, referenceEncode(model, options, image)).maxRelative, 1e-3);
}

TEST(Qwen25VlVision, ThreadCountDoesNotChangeResults) {
    TinyMmprojOptions options;
    options.matrixType = TensorType::F16;
    const TinyMmproj model = makeTinyMmproj(options);
    GgufFile file = *GgufFile::parse(std::span<const std::byte>(model.bytes), "tiny.gguf");
    auto tower = VisionModel::load(file);
    ASSERT_TRUE(tower);
    const ImagePatches image = randomImage(10, 18, 5);  // 5 x 9 tokens: partial windows both ways
    ThreadPool one(1), three(3);
    std::vector<float> a, b;
    ASSERT_TRUE((*tower)->encode(image, one, a).isOk());
    ASSERT_TRUE((*tower)->encode(image, three, b).isOk());
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], 1e-5f) << i;
    EXPECT_LT(compare(a, referenceEncode(model, options, image)).maxRelative, 1e-3);
}

TEST(Qwen25VlVision, ReadsConfig) {
    const TinyMmproj model = makeTinyMmproj({});
    GgufFile file = *GgufFile::parse(std::span<const std::byte>(model.bytes), "tiny.gguf");
    auto tower = VisionModel::load(file);
    ASSERT_TRUE(tower) << tower.status().message();
    const VisionConfig& c = (*tower)->config();
    EXPECT_EQ(c.projector, ProjectorType::Qwen25VlMerger);
    EXPECT_EQ(c.projectorName, "qwen2.5vl_merger");
    EXPECT_EQ(c.blocks, 4);
    EXPECT_EQ(c.width, 64);
    EXPECT_EQ(c.ffnSize, 96);
    EXPECT_EQ(c.heads, 2);
    EXPECT_EQ(c.headDim, 32);
    EXPECT_EQ(c.projectionDim, 48);
    EXPECT_EQ(c.patchSize, 14);
    EXPECT_EQ(c.mergeSize, 2);
    EXPECT_EQ(c.windowSize, 112);
    EXPECT_EQ(c.fullAttentionPeriod, 2);
    EXPECT_FLOAT_EQ(c.normEps, 1e-6f);
    EXPECT_FLOAT_EQ(c.imageStd[2], 0.27577711f);
}

// ---- bad files and bad images --------------------------------------------------------------

Status loadStatus(const TinyMmprojOptions& options) {
    const TinyMmproj model = makeTinyMmproj(options);
    Result<GgufFile> file = GgufFile::parse(std::span<const std::byte>(model.bytes), "bad.gguf");
    if (!file) return file.status();
    Result<std::unique_ptr<VisionModel>> tower = VisionModel::load(*file);
    return tower.status();
}

TEST(Qwen25VlVisionLoad, RejectsUnknownProjectorTypeByName) {
    TinyMmprojOptions options;
    options.projectorType = "qwen2vl_merger";
    const Status status = loadStatus(options);
    EXPECT_EQ(status.code(), StatusCode::Unsupported);
    EXPECT_NE(status.message().find("'qwen2vl_merger'"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("bad.gguf"), std::string::npos) << status.message();
}

TEST(Qwen25VlVisionLoad, RejectsMissingProjectorType) {
    TinyMmprojOptions options;
    options.omitKey = "clip.projector_type";
    const Status status = loadStatus(options);
    EXPECT_EQ(status.code(), StatusCode::NotFound);
    EXPECT_NE(status.message().find("clip.projector_type"), std::string::npos) << status.message();
}

TEST(Qwen25VlVisionLoad, RejectsMissingWindowPattern) {
    TinyMmprojOptions options;
    options.omitKey = "clip.vision.n_wa_pattern";
    const Status status = loadStatus(options);
    EXPECT_EQ(status.code(), StatusCode::NotFound);
    EXPECT_NE(status.message().find("clip.vision.n_wa_pattern"), std::string::npos)
        << status.message();
}

TEST(Qwen25VlVisionLoad, RejectsMissingTensorByName) {
    for (const char* name : {"v.blk.2.ffn_up.bias", "v.patch_embd.weight.1", "mm.2.weight",
                             "v.post_ln.weight", "v.blk.3.attn_k.weight"}) {
        TinyMmprojOptions options;
        options.omitTensor = name;
        const Status status = loadStatus(options);
        EXPECT_EQ(status.code(), StatusCode::NotFound) << name;
        EXPECT_NE(status.message().find(std::string("'") + name + "'"), std::string::npos)
            << status.message();
    }
}

TEST(Qwen25VlVisionLoad, RejectsWrongShapeByName) {
    for (const char* name :
         {"mm.0.weight", "v.blk.1.ffn_down.weight", "v.patch_embd.weight", "v.blk.0.ln2.weight"}) {
        TinyMmprojOptions options;
        options.misshapeTensor = name;
        const Status status = loadStatus(options);
        EXPECT_EQ(status.code(), StatusCode::Corrupt) << name;
        EXPECT_NE(status.message().find(std::string("'") + name + "'"), std::string::npos)
            << status.message();
        EXPECT_NE(status.message().find("expected"), std::string::npos) << status.message();
    }
}

TEST(Qwen25VlVisionLoad, RejectsALanguageModelFile) {
    GgufWriter writer;  // only the architecture key matters
    writer.set("general.architecture", std::string("qwen2vl"));
    const std::vector<std::byte> bytes = writer.serialize();
    GgufFile file = *GgufFile::parse(std::span<const std::byte>(bytes), "text.gguf");
    const Status status = VisionModel::load(file).status();
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
    EXPECT_NE(status.message().find("not a vision projector"), std::string::npos)
        << status.message();
}

TEST(Qwen25VlVisionLoad, RejectsHeadSizeWithoutRotaryQuarters) {
    TinyMmprojOptions options;
    options.heads = 3;  // 64 / 3
    const Status status = loadStatus(options);
    EXPECT_EQ(status.code(), StatusCode::Corrupt);
    EXPECT_NE(status.message().find("head_count"), std::string::npos) << status.message();
}

TEST(Qwen25VlVisionEncode, RejectsImagesThatDoNotFit) {
    const TinyMmproj model = makeTinyMmproj({});
    GgufFile file = *GgufFile::parse(std::span<const std::byte>(model.bytes), "tiny.gguf");
    auto tower = VisionModel::load(file);
    ASSERT_TRUE(tower);
    ThreadPool pool(1);
    std::vector<float> out;

    ImagePatches odd = randomImage(4, 4, 1);
    odd.gridW = 3;
    EXPECT_EQ((*tower)->encode(odd, pool, out).code(), StatusCode::InvalidArgument);

    ImagePatches shortValues = randomImage(4, 4, 1);
    shortValues.values.pop_back();
    EXPECT_EQ((*tower)->encode(shortValues, pool, out).code(), StatusCode::InvalidArgument);

    ImagePatches otherPatch = randomImage(4, 4, 1);
    otherPatch.patchSize = 16;
    EXPECT_EQ((*tower)->encode(otherPatch, pool, out).code(), StatusCode::InvalidArgument);

    ImagePatches empty;
    EXPECT_EQ((*tower)->encode(empty, pool, out).code(), StatusCode::InvalidArgument);
}

// ---- activations ---------------------------------------------------------------------------

TEST(VisionActivations, MatchFloat64Formulas) {
    std::vector<float> x;
    for (int i = -400; i <= 400; ++i)
        x.push_back(float(i) * 0.025f);
    const std::int64_t n = std::int64_t(x.size());
    std::vector<float> gelu(x.size()), erf(x.size()), silu(x.size()), geglu(x.size());
    const std::vector<float> up(x.size(), 1.5f);
    kernels::gelu(x.data(), gelu.data(), n);
    kernels::geluErf(x.data(), erf.data(), n);
    kernels::silu(x.data(), silu.data(), n);
    kernels::geglu(x.data(), up.data(), geglu.data(), n);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double v = x[i];
        EXPECT_NEAR(gelu[i], geluTanh(v), 1e-6 + 1e-6 * std::abs(v)) << v;
        EXPECT_NEAR(erf[i], 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))),
                    1e-6 + 1e-6 * std::abs(v))
            << v;
        EXPECT_NEAR(silu[i], v / (1.0 + std::exp(-v)), 1e-6 + 1e-6 * std::abs(v)) << v;
        EXPECT_NEAR(geglu[i], 1.5 * geluTanh(v), 2e-6 + 2e-6 * std::abs(v)) << v;
        // The two GELUs are close but not equal (docs/qwen25vl.md sections 4.5 and 7, item 5).
        EXPECT_NEAR(gelu[i], erf[i], 1e-3) << v;
    }
}

TEST(VisionActivations, VectorisedExpAndSwigluMatchFloat64) {
    // Lengths that leave a scalar tail; arguments across the whole useful range of a softmax
    // (x - max <= 0) and of a gate.
    std::vector<float> x;
    for (int i = 0; i < 1003; ++i)
        x.push_back(-95.0f + float(i) * 0.0951f);
    const std::int64_t n = std::int64_t(x.size());
    std::vector<float> e = x;
    const float shift = 1.5f;
    const float sum = kernels::expShiftSum(e.data(), n, shift);
    double expectedSum = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        // The f32 subtraction is part of the contract; exp itself must be within 1e-6.
        const double want = std::exp(double(x[i] - shift));
        expectedSum += want;
        if (double(x[i]) - double(shift) > -87.0)
            EXPECT_NEAR(e[i], want, 1e-6 * want) << x[i];
        else
            EXPECT_LE(e[i], 1e-37f) << x[i];
    }
    EXPECT_NEAR(sum, expectedSum, 1e-6 * expectedSum);

    std::vector<float> gate, up;
    for (int i = 0; i < 803; ++i) {
        gate.push_back(-100.0f + float(i) * 0.25f);
        up.push_back(0.5f + float(i % 7) * 0.25f);
    }
    std::vector<float> out(gate.size());
    kernels::swiglu(gate.data(), up.data(), out.data(), std::int64_t(gate.size()));
    for (std::size_t i = 0; i < gate.size(); ++i) {
        const double g = gate[i];
        const double want = g / (1.0 + std::exp(-g)) * double(up[i]);
        EXPECT_NEAR(out[i], want, 1e-6 * std::abs(want) + 1e-30) << g;
    }
}

}  // namespace
}  // namespace iris::inference
