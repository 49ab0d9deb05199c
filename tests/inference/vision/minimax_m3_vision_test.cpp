// The MiniMax-M3 vision tower against a float64 reference written here from
// docs/minimax-m3.md section 4: the reference works on patches in raster order cut from the
// image itself (one frame, both kernel slices), rotates heads laid out [T | H | W | pad] with
// the patch's own row and column, and builds each merged token by concatenating the four
// patches of its 2x2 window by coordinates. The tower reads ImagePatches (2x2-window order), so
// the comparison also checks that order. Then the engine with a tiny MiniMax-M3 language model:
// markers, 1-D positions, the tower's rows in place of token embeddings, default pixel budget,
// and the errors for bad files and wrong pairs.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>

#include <gtest/gtest.h>

#include "inference/engine.h"
#include "inference/gguf/gguf_file.h"
#include "inference/thread_pool.h"
#include "inference/vision/image_preprocess.h"
#include "inference/vision/vision_model.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/vision/tiny_m3_mmproj.h"

namespace iris::inference {
namespace {

namespace fs = std::filesystem;
using kernels::TensorType;
using testing::makeTinyM3Mmproj;
using testing::TinyM3MmprojOptions;
using testing::TinyMmproj;

using Matrix = std::vector<double>;  // row-major

// A normalised image, height x width x 3, both multiples of 28.
struct Picture {
    int height = 0;
    int width = 0;
    std::vector<float> values;
    float at(int y, int x, int c) const {
        return values[std::size_t((std::int64_t(y) * width + x) * 3 + c)];
    }
};

Picture randomPicture(int height, int width, std::uint32_t seed) {
    Picture p{height, width, std::vector<float>(std::size_t(height * width * 3))};
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.8f, 2.1f);
    for (float& v : p.values)
        v = dist(rng);
    return p;
}

// ImagePatches of `picture` as section 4.2 orders tokens: window row, window column, then the
// 2x2 patches of the window; each row [channel][frame][py][px] with two equal frames.
ImagePatches patchesOf(const Picture& picture, int patch = 14) {
    ImagePatches image;
    image.patchSize = patch;
    image.gridH = picture.height / patch;
    image.gridW = picture.width / patch;
    image.resizedHeight = image.originalHeight = picture.height;
    image.resizedWidth = image.originalWidth = picture.width;
    for (int bh = 0; bh < image.gridH / 2; ++bh)
        for (int bw = 0; bw < image.gridW / 2; ++bw)
            for (int mh = 0; mh < 2; ++mh)
                for (int mw = 0; mw < 2; ++mw)
                    for (int c = 0; c < 3; ++c)
                        for (int frame = 0; frame < 2; ++frame)
                            for (int py = 0; py < patch; ++py)
                                for (int px = 0; px < patch; ++px)
                                    image.values.push_back(picture.at(
                                        (2 * bh + mh) * patch + py, (2 * bw + mw) * patch + px, c));
    return image;
}

Matrix referenceLinear(const Matrix& x, std::int64_t rows, std::int64_t in,
                       const std::vector<float>& w, const std::vector<float>& b, std::int64_t out) {
    Matrix y(static_cast<std::size_t>(rows * out));
    for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t n = 0; n < out; ++n) {
            double sum = b[std::size_t(n)];
            for (std::int64_t j = 0; j < in; ++j)
                sum += x[std::size_t(r * in + j)] * double(w[std::size_t(n * in + j)]);
            y[std::size_t(r * out + n)] = sum;
        }
    }
    return y;
}

Matrix referenceLayerNorm(const Matrix& x, std::int64_t rows, std::int64_t width,
                          const std::vector<float>& w, const std::vector<float>& b) {
    Matrix y(x.size());
    for (std::int64_t r = 0; r < rows; ++r) {
        const double* v = x.data() + r * width;
        double mean = 0.0, var = 0.0;
        for (std::int64_t i = 0; i < width; ++i)
            mean += v[i];
        mean /= double(width);
        for (std::int64_t i = 0; i < width; ++i)
            var += (v[i] - mean) * (v[i] - mean);
        var /= double(width);
        for (std::int64_t i = 0; i < width; ++i)
            y[std::size_t(r * width + i)] =
                (v[i] - mean) / std::sqrt(var + 1e-5) * double(w[std::size_t(i)]) +
                double(b[std::size_t(i)]);
    }
    return y;
}

double geluErf(double x) {
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

void geluInPlace(Matrix& m) {
    for (double& v : m)
        v = geluErf(v);
}

// Section 4.3, GGUF layout: head = [T axd | H axd | W axd | pad]; each slice turns NEOX-style
// with pairs (i, i + axd/2) by pos_axis * 10000^(-2i/axd).
void ropeGgufHead(double* head, std::int64_t headDim, const std::array<double, 3>& pos) {
    const std::int64_t axd = 2 * ((headDim / 3) / 2), half = axd / 2;
    for (int axis = 0; axis < 3; ++axis) {
        double* v = head + axis * axd;
        for (std::int64_t i = 0; i < half; ++i) {
            const double angle =
                pos[std::size_t(axis)] * std::pow(10000.0, -2.0 * double(i) / double(axd));
            const double a = v[i], b = v[i + half];
            v[i] = a * std::cos(angle) - b * std::sin(angle);
            v[i + half] = a * std::sin(angle) + b * std::cos(angle);
        }
    }
}

// What the reference may do differently, to show that the comparison sees each choice.
struct Variant {
    bool swapRowAndColumn = false;   // rotate the H slice by the column and W by the row
    bool columnMajorWindow = false;  // concatenate a window's patches (0,0), (1,0), (0,1), (1,1)
};

// The tower, projector and merger in float64: tokenCount rows of projection floats.
Matrix referenceEncode(const TinyMmproj& model, const TinyM3MmprojOptions& o,
                       const Picture& picture, Variant variant = {}) {
    const auto W = [&](const std::string& name) -> const std::vector<float>& {
        return model.weights.at(name);
    };
    const std::int64_t p = o.patchSize, gh = picture.height / p, gw = picture.width / p;
    const std::int64_t S = gh * gw, C = o.width, H = o.heads, D = C / H, F = o.ffn;
    const std::int64_t P = o.projection;

    // Patch embedding of raster patch (r, c) from the single frame with both kernel slices.
    Matrix x(static_cast<std::size_t>(S * C));
    const std::vector<float>& k0 = W("v.patch_embd.weight");
    const std::vector<float>& k1 = W("v.patch_embd.weight.1");
    for (std::int64_t r = 0; r < gh; ++r) {
        for (std::int64_t c = 0; c < gw; ++c) {
            for (std::int64_t out = 0; out < C; ++out) {
                double sum = 0.0;
                for (int ch = 0; ch < 3; ++ch) {
                    for (std::int64_t py = 0; py < p; ++py) {
                        for (std::int64_t px = 0; px < p; ++px) {
                            const std::size_t at = std::size_t(((out * 3 + ch) * p + py) * p + px);
                            sum += double(picture.at(int(r * p + py), int(c * p + px), ch)) *
                                   (double(k0[at]) + double(k1[at]));
                        }
                    }
                }
                x[std::size_t((r * gw + c) * C + out)] = sum;
            }
        }
    }
    x = referenceLayerNorm(x, S, C, W("v.pre_ln.weight"), W("v.pre_ln.bias"));

    for (std::int64_t blk = 0; blk < o.blocks; ++blk) {
        const std::string b = "v.blk." + std::to_string(blk) + ".";
        const auto lin = [&](const Matrix& in, std::int64_t inWidth, const std::string& name,
                             std::int64_t out) {
            return referenceLinear(in, S, inWidth, W(b + name + ".weight"), W(b + name + ".bias"),
                                   out);
        };
        const Matrix h = referenceLayerNorm(x, S, C, W(b + "ln1.weight"), W(b + "ln1.bias"));
        Matrix q = lin(h, C, "attn_q", C), k = lin(h, C, "attn_k", C);
        const Matrix v = lin(h, C, "attn_v", C);
        for (std::int64_t t = 0; t < S; ++t) {
            const double row = double(t / gw), col = double(t % gw);
            const std::array<double, 3> pos = variant.swapRowAndColumn
                                                  ? std::array<double, 3>{0.0, col, row}
                                                  : std::array<double, 3>{0.0, row, col};
            for (std::int64_t hd = 0; hd < H; ++hd) {
                ropeGgufHead(q.data() + t * C + hd * D, D, pos);
                ropeGgufHead(k.data() + t * C + hd * D, D, pos);
            }
        }
        Matrix attn(static_cast<std::size_t>(S * C), 0.0);
        std::vector<double> score(static_cast<std::size_t>(S));
        for (std::int64_t hd = 0; hd < H; ++hd) {
            for (std::int64_t i = 0; i < S; ++i) {
                double peak = -INFINITY;
                for (std::int64_t j = 0; j < S; ++j) {
                    double dot = 0.0;
                    for (std::int64_t d = 0; d < D; ++d)
                        dot +=
                            q[std::size_t(i * C + hd * D + d)] * k[std::size_t(j * C + hd * D + d)];
                    score[std::size_t(j)] = dot / std::sqrt(double(D));
                    peak = std::max(peak, score[std::size_t(j)]);
                }
                double total = 0.0;
                for (double& s : score)
                    total += (s = std::exp(s - peak));
                for (std::int64_t j = 0; j < S; ++j)
                    for (std::int64_t d = 0; d < D; ++d)
                        attn[std::size_t(i * C + hd * D + d)] +=
                            score[std::size_t(j)] / total * v[std::size_t(j * C + hd * D + d)];
            }
        }
        const Matrix projected = lin(attn, C, "attn_out", C);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] += projected[i];
        Matrix up = lin(referenceLayerNorm(x, S, C, W(b + "ln2.weight"), W(b + "ln2.bias")), C,
                        "ffn_up", F);
        geluInPlace(up);
        const Matrix down = lin(up, F, "ffn_down", C);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] += down[i];
    }

    // Projector per patch (raster order), then each 2x2 window's patches side by side.
    Matrix e = referenceLinear(x, S, C, W("mm.1.weight"), W("mm.1.bias"), P);
    geluInPlace(e);
    e = referenceLinear(e, S, P, W("mm.2.weight"), W("mm.2.bias"), P);
    const std::int64_t tokens = (gh / 2) * (gw / 2);
    Matrix grouped;
    for (std::int64_t y = 0; y < gh / 2; ++y) {
        for (std::int64_t xw = 0; xw < gw / 2; ++xw) {
            for (int m = 0; m < 4; ++m) {
                const int dy = variant.columnMajorWindow ? m % 2 : m / 2;
                const int dx = variant.columnMajorWindow ? m / 2 : m % 2;
                const std::int64_t t = (2 * y + dy) * gw + 2 * xw + dx;
                grouped.insert(grouped.end(), e.begin() + t * P, e.begin() + (t + 1) * P);
            }
        }
    }
    Matrix merged = referenceLinear(grouped, tokens, 4 * P, W("mm.merge.fc1.weight"),
                                    W("mm.merge.fc1.bias"), P);
    geluInPlace(merged);
    return referenceLinear(merged, tokens, P, W("mm.merge.fc2.weight"), W("mm.merge.fc2.bias"), P);
}

double maxRelative(const std::vector<float>& actual, const Matrix& expected) {
    double maxDiff = 0.0, maxRef = 0.0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        maxDiff = std::max(maxDiff, std::abs(double(actual[i]) - expected[i]));
        maxRef = std::max(maxRef, std::abs(expected[i]));
    }
    return maxDiff / maxRef;
}

struct LoadedTower {
    TinyMmproj model;
    std::optional<GgufFile> file;
    std::unique_ptr<VisionModel> tower;
};

std::unique_ptr<LoadedTower> loadTower(const TinyM3MmprojOptions& options) {
    auto loaded = std::make_unique<LoadedTower>();
    loaded->model = makeTinyM3Mmproj(options);
    Result<GgufFile> file =
        GgufFile::parse(std::span<const std::byte>(loaded->model.bytes), "m3-mmproj.gguf");
    EXPECT_TRUE(file) << file.status().message();
    if (!file) return nullptr;
    loaded->file = std::move(*file);
    Result<std::unique_ptr<VisionModel>> tower = VisionModel::load(*loaded->file);
    EXPECT_TRUE(tower) << tower.status().message();
    if (!tower) return nullptr;
    loaded->tower = std::move(*tower);
    return loaded;
}

// ---- the tower against the reference ---------------------------------------------------------

struct Case {
    TensorType type;
    int height, width;  // pixels
};

class MiniMaxM3VisionMatches : public ::testing::TestWithParam<Case> {};

TEST_P(MiniMaxM3VisionMatches, Float64Reference) {
    TinyM3MmprojOptions options;
    options.matrixType = GetParam().type;
    const auto loaded = loadTower(options);
    ASSERT_TRUE(loaded);
    const Picture picture = randomPicture(GetParam().height, GetParam().width, 7);
    const ImagePatches image = patchesOf(picture);
    ThreadPool pool(2);
    std::vector<float> embeddings;
    ASSERT_TRUE(loaded->tower->encode(image, pool, embeddings).isOk());
    ASSERT_EQ(std::int64_t(embeddings.size()), image.tokenCount() * options.projection);
    EXPECT_LT(maxRelative(embeddings, referenceEncode(loaded->model, options, picture)), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(WeightsAndImages, MiniMaxM3VisionMatches,
                         ::testing::Values(Case{TensorType::F32, 84, 56},
                                           Case{TensorType::F32, 56, 112},
                                           Case{TensorType::F16, 84, 56},
                                           Case{TensorType::F16, 56, 112},
                                           Case{TensorType::BF16, 56, 112}),
                         [](const ::testing::TestParamInfo<Case>& p) {
                             return std::string(kernels::tensorTypeInfo(p.param.type).name) + "_" +
                                    std::to_string(p.param.width) + "x" +
                                    std::to_string(p.param.height);
                         });

TEST(MiniMaxM3Vision, Bf16ProductsStayNearTheReference) {
    // GemmPrecision::Bf16 rounds every product's operands to 8 significant bits.
    TinyM3MmprojOptions options;
    options.matrixType = TensorType::BF16;
    const auto loaded = loadTower(options);
    ASSERT_TRUE(loaded);
    loaded->tower->setPrecision(kernels::GemmPrecision::Bf16);
    const Picture picture = randomPicture(84, 56, 12);
    ThreadPool pool(2);
    std::vector<float> embeddings;
    ASSERT_TRUE(loaded->tower->encode(patchesOf(picture), pool, embeddings).isOk());
    EXPECT_LT(maxRelative(embeddings, referenceEncode(loaded->model, options, picture)), 3e-2);
}

TEST(MiniMaxM3Vision, ProjectionWidthFromTheMergerWithoutProjectionDim) {
    TinyM3MmprojOptions options;
    options.writeProjectionDim = false;
    options.projection = 48;
    const auto loaded = loadTower(options);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->tower->config().projectionDim, 48);
    const Picture picture = randomPicture(56, 56, 9);
    ThreadPool pool(1);
    std::vector<float> embeddings;
    ASSERT_TRUE(loaded->tower->encode(patchesOf(picture), pool, embeddings).isOk());
    EXPECT_LT(maxRelative(embeddings, referenceEncode(loaded->model, options, picture)), 1e-3);
}

TEST(MiniMaxM3Vision, ComparisonSeesTheRopeAxesAndTheWindowOrder) {
    // The reference with the H and W angles exchanged, or with a window's patches concatenated
    // column-major, must be far from the tower: the agreement above is not an accident of
    // symmetric data.
    TinyM3MmprojOptions options;
    const auto loaded = loadTower(options);
    ASSERT_TRUE(loaded);
    const Picture picture = randomPicture(56, 112, 5);
    ThreadPool pool(2);
    std::vector<float> embeddings;
    ASSERT_TRUE(loaded->tower->encode(patchesOf(picture), pool, embeddings).isOk());
    EXPECT_LT(maxRelative(embeddings, referenceEncode(loaded->model, options, picture)), 1e-3);
    EXPECT_GT(maxRelative(embeddings, referenceEncode(loaded->model, options, picture,
                                                      {.swapRowAndColumn = true})),
              1e-2);
    EXPECT_GT(maxRelative(embeddings, referenceEncode(loaded->model, options, picture,
                                                      {.columnMajorWindow = true})),
              1e-2);
}

TEST(MiniMaxM3Vision, ThreadCountDoesNotChangeResults) {
    TinyM3MmprojOptions options;
    options.matrixType = TensorType::F16;
    const auto loaded = loadTower(options);
    ASSERT_TRUE(loaded);
    const ImagePatches image = patchesOf(randomPicture(84, 140, 4));
    ThreadPool one(1), three(3);
    std::vector<float> a, b;
    ASSERT_TRUE(loaded->tower->encode(image, one, a).isOk());
    ASSERT_TRUE(loaded->tower->encode(image, three, b).isOk());
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], 1e-5f) << i;
}

// ---- rotary layout and token order -------------------------------------------------------------

// The HF checkpoint layout (section 4.3): [T h | H h | W h | T h | H h | W h | pad], rotate-half
// over the first 6h dims (pairs (i, i + 3h)), frequencies restarting per axis; the converter's
// row permutation takes it to the GGUF layout.
void ropeHfHead(double* head, std::int64_t headDim, const std::array<double, 3>& pos) {
    const std::int64_t h = (headDim / 3) / 2, span = 3 * h;
    for (std::int64_t i = 0; i < span; ++i) {
        const std::int64_t axis = i / h, f = i % h;
        const double angle =
            pos[std::size_t(axis)] * std::pow(10000.0, -2.0 * double(f) / double(2 * h));
        const double a = head[i], b = head[i + span];
        head[i] = a * std::cos(angle) - b * std::sin(angle);
        head[i + span] = b * std::cos(angle) + a * std::sin(angle);
    }
}

// GGUF dim g holds HF dim permutation[g].
std::vector<std::int64_t> converterPermutation(std::int64_t headDim) {
    const std::int64_t h = (headDim / 3) / 2;
    std::vector<std::int64_t> out;
    for (std::int64_t axis = 0; axis < 3; ++axis) {
        for (std::int64_t i = 0; i < h; ++i)
            out.push_back(axis * h + i);
        for (std::int64_t i = 0; i < h; ++i)
            out.push_back(3 * h + axis * h + i);
    }
    for (std::int64_t d = 6 * h; d < headDim; ++d)
        out.push_back(d);
    return out;
}

TEST(MiniMaxM3VisionRope, GgufLayoutIsThePermutedCheckpointRotation) {
    // The released head (80): the permutation docs/minimax-m3.md section 4.3 quotes.
    const std::vector<std::int64_t> p80 = converterPermutation(80);
    ASSERT_EQ(p80.size(), 80u);
    EXPECT_EQ(p80[12], 12);
    EXPECT_EQ(p80[13], 39);
    EXPECT_EQ(p80[26], 13);
    EXPECT_EQ(p80[39], 52);
    EXPECT_EQ(p80[52], 26);
    EXPECT_EQ(p80[65], 65);
    EXPECT_EQ(p80[77], 77);
    EXPECT_EQ(p80[78], 78);
    std::mt19937 rng(2);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (std::int64_t headDim : {80, 20, 16, 32}) {
        const std::vector<std::int64_t> perm = converterPermutation(headDim);
        for (const std::array<double, 3>& pos :
             {std::array<double, 3>{0, 3, 5}, std::array<double, 3>{2, 47, 11}}) {
            std::vector<double> hf(static_cast<std::size_t>(headDim));
            for (double& v : hf)
                v = dist(rng);
            std::vector<double> gguf(hf.size());
            for (std::size_t g = 0; g < gguf.size(); ++g)
                gguf[g] = hf[std::size_t(perm[g])];
            ropeHfHead(hf.data(), headDim, pos);
            ropeGgufHead(gguf.data(), headDim, pos);
            for (std::size_t g = 0; g < gguf.size(); ++g)
                EXPECT_NEAR(gguf[g], hf[std::size_t(perm[g])], 1e-12) << headDim << " dim " << g;
        }
    }
}

TEST(MiniMaxM3VisionTokens, PreprocessingListsPatchesInTwoByTwoWindows) {
    // A 112 x 56 picture needs no resize under M3's budget; ImagePatches must hold its patches
    // in section 4.2's order, which patchesOf writes out.
    RgbImage rgb{112, 56, std::vector<std::uint8_t>(112 * 56 * 3)};
    std::mt19937 rng(8);
    for (std::uint8_t& v : rgb.pixels)
        v = std::uint8_t(rng() & 0xff);
    ImagePreprocessOptions options;
    options.minPixels = 6272;
    options.maxPixels = 451584;
    options.mean = {0.5f, 0.45f, 0.4f};
    options.std = {0.25f, 0.3f, 0.28f};
    Result<ImagePatches> patches = preprocessImage(rgb, options);
    ASSERT_TRUE(patches) << patches.status().message();
    ASSERT_EQ(patches->gridW, 8);
    ASSERT_EQ(patches->gridH, 4);
    Picture picture{56, 112, {}};
    for (std::size_t i = 0; i < rgb.pixels.size(); ++i)
        picture.values.push_back((float(rgb.pixels[i]) / 255.0f - options.mean[i % 3]) /
                                 options.std[i % 3]);
    const ImagePatches expected = patchesOf(picture);
    ASSERT_EQ(patches->values.size(), expected.values.size());
    for (std::size_t i = 0; i < expected.values.size(); ++i)
        ASSERT_NEAR(patches->values[i], expected.values[i], 1e-5f) << i;
    EXPECT_EQ(patches->tokenCount(), 8);
}

// ---- configuration and bad files -------------------------------------------------------------

TEST(MiniMaxM3VisionLoad, ReadsConfig) {
    const auto loaded = loadTower({});
    ASSERT_TRUE(loaded);
    const VisionConfig& c = loaded->tower->config();
    EXPECT_EQ(c.projector, ProjectorType::MiniMaxM3);
    EXPECT_EQ(c.projectorName, "minimax_m3");
    EXPECT_EQ(c.blocks, 2);
    EXPECT_EQ(c.width, 40);
    EXPECT_EQ(c.heads, 2);
    EXPECT_EQ(c.headDim, 20);
    EXPECT_EQ(c.ffnSize, 56);
    EXPECT_EQ(c.projectionDim, 64);
    EXPECT_EQ(c.patchSize, 14);
    EXPECT_EQ(c.mergeSize, 2);
    EXPECT_FLOAT_EQ(c.normEps, 1e-5f);
    EXPECT_EQ(c.minPixels, 6272);
    EXPECT_EQ(c.maxPixels, 451584);
    EXPECT_EQ(c.imageBegin, "]<]start of image[>[");
    EXPECT_EQ(c.imageEnd, "]<]end of image[>[");
    EXPECT_FLOAT_EQ(c.imageStd[1], 0.3f);
}

Status loadStatus(const TinyM3MmprojOptions& options) {
    const TinyMmproj model = makeTinyM3Mmproj(options);
    Result<GgufFile> file = GgufFile::parse(std::span<const std::byte>(model.bytes), "bad.gguf");
    if (!file) return file.status();
    return VisionModel::load(*file).status();
}

TEST(MiniMaxM3VisionLoad, RejectsMissingTensorByName) {
    for (const char* name :
         {"v.patch_embd.weight.1", "v.pre_ln.bias", "v.blk.1.ln2.bias", "v.blk.0.attn_k.bias",
          "v.blk.1.ffn_down.weight", "mm.2.bias", "mm.merge.fc1.weight", "mm.merge.fc2.bias"}) {
        for (bool projectionDim : {true, false}) {
            TinyM3MmprojOptions options;
            options.omitTensor = name;
            options.writeProjectionDim = projectionDim;
            const Status status = loadStatus(options);
            EXPECT_EQ(status.code(), StatusCode::NotFound) << name;
            EXPECT_NE(status.message().find(std::string("'") + name + "'"), std::string::npos)
                << status.message();
            EXPECT_NE(status.message().find("bad.gguf"), std::string::npos) << status.message();
        }
    }
}

TEST(MiniMaxM3VisionLoad, RejectsWrongShapeByName) {
    for (const char* name :
         {"v.patch_embd.weight", "v.pre_ln.weight", "v.blk.0.attn_q.weight", "v.blk.1.ffn_up.bias",
          "mm.1.weight", "mm.merge.fc1.weight", "mm.merge.fc2.bias"}) {
        TinyM3MmprojOptions options;
        options.misshapeTensor = name;
        const Status status = loadStatus(options);
        EXPECT_EQ(status.code(), StatusCode::Corrupt) << name;
        EXPECT_NE(status.message().find(std::string("'") + name + "'"), std::string::npos)
            << status.message();
        EXPECT_NE(status.message().find("expected"), std::string::npos) << status.message();
    }
}

TEST(MiniMaxM3VisionLoad, RejectsMissingKeysByName) {
    for (const char* key : {"clip.vision.block_count", "clip.vision.attention.head_count",
                            "clip.vision.patch_size"}) {
        TinyM3MmprojOptions options;
        options.omitKey = key;
        const Status status = loadStatus(options);
        EXPECT_EQ(status.code(), StatusCode::NotFound) << key;
        EXPECT_NE(status.message().find(key), std::string::npos) << status.message();
    }
}

TEST(MiniMaxM3VisionLoad, RejectsHeadsTooSmallForThreeAxes) {
    TinyM3MmprojOptions options;
    options.width = 40;
    options.heads = 8;  // head size 5: odd, and no 3-D split
    const Status status = loadStatus(options);
    EXPECT_EQ(status.code(), StatusCode::Corrupt);
    EXPECT_NE(status.message().find("head_count"), std::string::npos) << status.message();
}

TEST(MiniMaxM3VisionLoad, RejectsQuantisedWeightsByName) {
    TinyM3MmprojOptions options;
    options.width = 64;
    options.heads = 4;
    options.ffn = 64;
    options.patchSize = 32;  // rows of 32 values: whole Q8_0 blocks for the kernel too
    options.matrixType = TensorType::Q8_0;
    const Status status = loadStatus(options);
    EXPECT_EQ(status.code(), StatusCode::Unsupported);
    EXPECT_NE(status.message().find("'v.patch_embd.weight'"), std::string::npos)
        << status.message();
}

// ---- the engine with a MiniMax-M3 language model ---------------------------------------------

class MiniMaxM3EngineImage : public ::testing::Test {
protected:
    fs::path write(const std::string& name, const std::vector<std::byte>& bytes) {
        return m_scratch.write(name, bytes);
    }

    static testing::M3Spec spec() {
        testing::M3Spec s;
        s.vocab = 272;
        s.seed = 11;
        return s;
    }

    Result<std::unique_ptr<Engine>> load(EngineOptions options = {},
                                         TinyM3MmprojOptions projector = {}) {
        options.threads = 2;
        options.kvType = TensorType::F32;
        m_model = write("m3.gguf", testing::makeM3ModelWithTokenizer(spec()));
        m_projector = makeTinyM3Mmproj(projector);
        options.mmprojPath = write("m3-mmproj.gguf", m_projector.bytes);
        return Engine::load(m_model, options);
    }

    testing::ScratchDir m_scratch{"iris_m3_image"};
    fs::path m_model;
    TinyMmproj m_projector;
};

RgbImage randomRgb(int width, int height, unsigned seed) {
    RgbImage image{width, height, std::vector<std::uint8_t>(std::size_t(width * height * 3))};
    std::mt19937 rng(seed);
    for (std::uint8_t& v : image.pixels)
        v = std::uint8_t(rng() & 0xff);
    return image;
}

TEST_F(MiniMaxM3EngineImage, DefaultPixelBudgetIsLlamaCppsForM3UnlessSet) {
    Result<std::unique_ptr<Engine>> engine = load();
    ASSERT_TRUE(engine) << engine.status().message();
    const ImagePreprocessOptions defaults = (*engine)->imageOptions();
    EXPECT_EQ(defaults.minPixels, 6272);
    EXPECT_EQ(defaults.maxPixels, 451584);
    EXPECT_EQ(defaults.filter, ResampleFilter::Bicubic);
    EXPECT_FLOAT_EQ(defaults.mean[1], 0.45f);
    // 1344 x 1008 is 1728 tokens at 28 x 28: scaled down to at most 576.
    Result<std::shared_ptr<const ImagePatches>> big =
        (*engine)->prepareImage(randomRgb(1344, 1008, 1));
    ASSERT_TRUE(big) << big.status().message();
    EXPECT_LE((*big)->tokenCount(), 576);
    EXPECT_GE((*big)->tokenCount(), 500);

    EngineOptions options;
    options.imageMinPixels = 4 * 784;
    options.imageMaxPixels = 100 * 784;
    Result<std::unique_ptr<Engine>> custom = load(options);
    ASSERT_TRUE(custom) << custom.status().message();
    EXPECT_EQ((*custom)->imageOptions().minPixels, 4 * 784);
    EXPECT_EQ((*custom)->imageOptions().maxPixels, 100 * 784);
}

TEST_F(MiniMaxM3EngineImage, ChatTemplatePutsTheImageBetweenTheMarkers) {
    Result<std::unique_ptr<Engine>> loaded = load();
    ASSERT_TRUE(loaded) << loaded.status().message();
    Engine& engine = **loaded;
    Result<std::shared_ptr<const ImagePatches>> image = engine.prepareImage(randomRgb(90, 60, 3));
    ASSERT_TRUE(image) << image.status().message();
    // The template writes start / image / end; the image placeholder becomes the image, the
    // markers stay tokens of the prompt.
    Result<std::string> rendered =
        engine.chatTemplate().render({{"user", "<__media__>what is this", {}}}, {});
    ASSERT_TRUE(rendered) << rendered.status().message();
    const std::vector<std::int32_t> ids = engine.tokenizer().encode(*rendered, true);
    const std::optional<std::int32_t> pad =
        engine.tokenizer().findToken(engine.chatTemplate().imagePlaceholder());
    ASSERT_EQ(pad, testing::kM3Image);
    const std::shared_ptr<const ImagePatches> images[] = {*image};
    Result<GenerateRequest> request = Engine::splitAtPlaceholders(ids, *pad, images);
    ASSERT_TRUE(request) << request.status().message();
    ASSERT_EQ(request->images.size(), 1u);
    const std::size_t offset = request->images[0].offset;
    ASSERT_GT(offset, 0u);
    EXPECT_EQ(request->prompt[offset - 1], testing::kM3ImageStart);
    EXPECT_EQ(request->prompt[offset], testing::kM3ImageEnd);
    EXPECT_EQ(std::count(request->prompt.begin(), request->prompt.end(), testing::kM3Image), 0);
}

TEST_F(MiniMaxM3EngineImage, ImageBetweenMarkersWithOneDimensionalPositions) {
    EngineOptions options;
    options.prefillChunk = 4096;  // one batch, as the direct run below
    Result<std::unique_ptr<Engine>> loaded = load(options);
    ASSERT_TRUE(loaded) << loaded.status().message();
    Engine& engine = **loaded;
    // 90 x 60 -> 112 x 84 under the minimum of 6272 pixels: 6 x 8 patches, 3 x 4 tokens.
    Result<std::shared_ptr<const ImagePatches>> image = engine.prepareImage(randomRgb(90, 60, 3));
    ASSERT_TRUE(image) << image.status().message();
    ASSERT_EQ((*image)->tokenCount(), 12);

    // The raw layout llama.cpp's mtmd writes for M3: the projector's marker texts around the
    // image, tokenised as text.
    const VisionConfig& vision = engine.vision()->config();
    GenerateRequest request;
    request.prompt = engine.tokenizer().encode(vision.imageBegin, true);
    EXPECT_EQ(request.prompt, std::vector<std::int32_t>{testing::kM3ImageStart});
    request.images.push_back({request.prompt.size(), *image});
    for (std::int32_t id : engine.tokenizer().encode(vision.imageEnd + "what is this?", true))
        request.prompt.push_back(id);
    request.maxTokens = 10;
    request.sampling.temperature = 0.0f;
    const std::size_t offset = 1;
    auto session = std::move(*engine.newSession());
    Result<GenerateResult> result = session->generate(request);
    ASSERT_TRUE(result) << result.status().message();
    EXPECT_EQ(result->imageTokens, 12);
    EXPECT_EQ(result->imagesEncoded, 1);

    // Slots: the text before the image, 12 image slots, the rest; positions 0, 1, 2, ... in
    // every component (the M3 decoder's RoPE is 1-D).
    std::vector<std::int32_t> slots(request.prompt.begin(),
                                    request.prompt.begin() + std::ptrdiff_t(offset));
    slots.insert(slots.end(), 12, -1);
    slots.insert(slots.end(), request.prompt.begin() + std::ptrdiff_t(offset),
                 request.prompt.end());
    const std::vector<std::int32_t>& cached = session->cachedTokens();
    ASSERT_GE(cached.size(), slots.size());
    EXPECT_EQ(
        std::vector<std::int32_t>(cached.begin(), cached.begin() + std::ptrdiff_t(slots.size())),
        slots);
    for (std::size_t i = 0; i < session->cachedPositions().size(); ++i) {
        const auto s = std::int32_t(i);
        ASSERT_EQ(session->cachedPositions()[i], (TokenPosition{s, s, s, 0})) << i;
    }
    EXPECT_EQ(session->nextPosition(), std::int32_t(session->cachedPositions().size()));

    // The same sequence run straight through the model, the image rows being the tower's output
    // for the same patches (from a tower loaded on its own): the same greedy continuation.
    GgufFile projectorFile =
        *GgufFile::parse(std::span<const std::byte>(m_projector.bytes), "m3-mmproj.gguf");
    std::unique_ptr<VisionModel> tower = std::move(*VisionModel::load(projectorFile));
    tower->setPrecision(engine.vision()->precision());  // bf16 products where AMX is
    ThreadPool pool(2);
    std::vector<float> rows;
    ASSERT_TRUE(tower->encode(**image, pool, rows).isOk());
    GgufFile modelFile = *GgufFile::open(m_model);
    std::unique_ptr<Model> model = std::move(*createModel(modelFile));
    const auto greedyFrom = [&](const std::vector<float>& embeddings) {
        KvCache cache = *KvCache::create(model->kvCacheOptions(8, 16, TensorType::F32));
        const SequenceId seq = cache.newSequence();
        std::vector<TokenInput> batch;
        for (std::size_t i = 0; i < slots.size(); ++i) {
            const auto p = std::int32_t(i);
            TokenInput in{slots[i] < 0 ? 0 : slots[i], seq, std::int64_t(i), {p, p, p, 0}};
            in.wantLogits = i + 1 == slots.size();
            if (slots[i] < 0) in.embedding = embeddings.data() + (i - offset) * 64;
            batch.push_back(in);
        }
        std::vector<float> logits;
        std::vector<std::int32_t> out;
        EXPECT_TRUE(cache.extend(seq, std::int64_t(slots.size())).isOk());
        EXPECT_TRUE(model->forward(batch, cache, pool, logits).isOk());
        for (std::int64_t n = 0; n < request.maxTokens; ++n) {
            const auto best =
                std::int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
            if (engine.tokenizer().isEndOfGeneration(best)) break;
            out.push_back(best);
            if (n + 1 == request.maxTokens) break;
            const std::int64_t slot = std::int64_t(slots.size()) + n;
            const auto p = std::int32_t(slot);
            EXPECT_TRUE(cache.extend(seq, slot + 1).isOk());
            const TokenInput next{best, seq, slot, {p, p, p, 0}, true};
            logits.clear();  // forward appends
            const Status status = model->forward(std::span(&next, 1), cache, pool, logits);
            EXPECT_TRUE(status.isOk()) << status.message();
        }
        return out;
    };
    EXPECT_EQ(result->tokens, greedyFrom(rows));
    // The rows matter: with the image's tokens reversed the continuation differs.
    std::vector<float> reversed;
    for (std::int64_t k = 11; k >= 0; --k)
        reversed.insert(reversed.end(), rows.begin() + k * 64, rows.begin() + (k + 1) * 64);
    EXPECT_NE(result->tokens, greedyFrom(reversed));
}

TEST_F(MiniMaxM3EngineImage, RefusesAProjectorOfAnotherWidth) {
    for (bool projectionDim : {true, false}) {
        TinyM3MmprojOptions projector;
        projector.projection = 96;
        projector.writeProjectionDim = projectionDim;
        Result<std::unique_ptr<Engine>> engine = load({}, projector);
        ASSERT_FALSE(engine);
        EXPECT_EQ(engine.status().code(), StatusCode::InvalidArgument);
        const std::string& message = engine.status().message();
        EXPECT_NE(message.find("are not a pair"), std::string::npos) << message;
        EXPECT_NE(message.find("96-wide"), std::string::npos) << message;
        EXPECT_NE(message.find("64 wide"), std::string::npos) << message;
        EXPECT_NE(message.find("m3-mmproj.gguf"), std::string::npos) << message;
    }
}

TEST_F(MiniMaxM3EngineImage, NamesAMissingProjectorTensor) {
    TinyM3MmprojOptions projector;
    projector.omitTensor = "mm.merge.fc1.bias";
    Result<std::unique_ptr<Engine>> engine = load({}, projector);
    ASSERT_FALSE(engine);
    EXPECT_NE(engine.status().message().find("'mm.merge.fc1.bias'"), std::string::npos)
        << engine.status().message();
}

}  // namespace
}  // namespace iris::inference
