// The MiniMax-M3 vision tower, projector and patch merger (clip.projector_type "minimax_m3"), as
// llama.cpp's mmproj GGUFs store it (docs/minimax-m3.md sections 2.2 and 4):
//   patch embedding (two Conv3d kernel slices, no bias) -> pre_ln (LayerNorm) -> blocks x
//   [LayerNorm, full bidirectional attention with 3-D RoPE, LayerNorm, GELU (erf) MLP] -> (no
//   post norm) -> per patch mm.1, GELU, mm.2 -> 4 patches of a 2x2 window side by side ->
//   mm.merge.fc1, GELU, mm.merge.fc2.
// ImagePatches already lists patches in 2x2-window order, which is the tower's token order, and
// windows in raster order, which is the order of the merged tokens: no permutation is needed.
#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "inference/vision/tower_parts.h"
#include "inference/vision/vision_towers.h"
#include "kernels/activation.h"
#include "kernels/gemm.h"

namespace iris::inference {
namespace {

using kernels::TensorType;
using vision::positiveInteger;

constexpr double kRopeTheta = 10000.0;    // the released config's rope_theta; not in the GGUF
constexpr std::int64_t kRowChunk = 1024;  // rows of the MLP and projector scratch at a time
constexpr std::int64_t kMinTokens = 8, kMaxTokens = 576;  // llama.cpp's image budget for M3

struct Norm {
    const float* weight = nullptr;
    const float* bias = nullptr;
};

struct Block {
    Norm norm1;
    Linear q, k, v, o;
    Norm norm2;
    Linear up, down;
};

// A LayerNorm's weight and bias (PREFIX.weight, PREFIX.bias).
Result<Norm> bindNorm(const TensorBinder& bind, const std::string& prefix, std::int64_t size) {
    Result<const float*> w = bind.vector(prefix + ".weight", size);
    if (!w) return w.status();
    Result<const float*> b = bind.vector(prefix + ".bias", size);
    if (!b) return b.status();
    return Norm{*w, *b};
}

// Rotated width per axis (T, H, W) of a head: 2 * floor(floor(headDim / 3) / 2), as llama.cpp
// splits it; the headDim - 3 * axis dimensions left over pass through.
std::int64_t axisDims(std::int64_t headDim) {
    return 2 * (headDim / 3 / 2);
}

Result<VisionConfig> readConfig(const GgufFile& file) {
    VisionConfig c;
    c.projector = ProjectorType::MiniMaxM3;
    c.projectorName = "minimax_m3";
    c.normEps = 1e-5f;
    c.fullAttentionPeriod = 1;  // every block attends to the whole image
    c.windowSize = 0;
    c.imageBegin = "]<]start of image[>[";
    c.imageEnd = "]<]end of image[>[";
    IRIS_RETURN_IF_ERROR(vision::readCommonConfig(file, c));

    // The output width is the merger's (llama.cpp reads mm.merge.fc2.bias); projection_dim,
    // when written, must agree, which the tensor shapes then check.
    if (file.find("clip.vision.projection_dim") != nullptr) {
        IRIS_RETURN_IF_ERROR(
            assign(c.projectionDim, positiveInteger(file, "clip.vision.projection_dim")));
    } else {
        const GgufTensor* bias = file.findTensor("mm.merge.fc2.bias");
        if (bias == nullptr)
            return Status::notFound(file.name() + ": missing tensor 'mm.merge.fc2.bias'");
        if (bias->shape.size() != 1 || bias->shape[0] <= 0) {
            return Status::corrupt(file.name() + ": tensor 'mm.merge.fc2.bias' has shape " +
                                   shapeText(bias->shape) + ", expected one dimension");
        }
        c.projectionDim = bias->shape[0];
    }

    if (c.width % c.heads != 0 || (c.width / c.heads) % 2 != 0 ||
        axisDims(c.width / c.heads) == 0) {
        return Status::corrupt(file.name() + ": clip.vision.embedding_length " +
                               std::to_string(c.width) + " over " + std::to_string(c.heads) +
                               " heads (clip.vision.attention.head_count) does not give an even "
                               "head size of at least 6, which the 3-D rotary embedding needs");
    }
    c.headDim = c.width / c.heads;
    if (c.mergeSize != 2) {
        return Status::unsupported(file.name() + ": clip.vision.spatial_merge_size is " +
                                   std::to_string(c.mergeSize) +
                                   "; the minimax_m3 projector merges 2x2 patches");
    }
    const std::int64_t tile = std::int64_t(c.patchSize) * c.mergeSize;
    c.minPixels = kMinTokens * tile * tile;
    c.maxPixels = kMaxTokens * tile * tile;
    return c;
}

class MiniMaxM3Vision final : public VisionModel {
public:
    MiniMaxM3Vision(VisionConfig config, std::vector<float> patchKernel, Norm preNorm,
                    std::vector<Block> blocks, Linear proj1, Linear proj2, Linear merge1,
                    Linear merge2, std::deque<std::vector<float>> owned)
        : m_config(std::move(config)),
          m_patchKernel(std::move(patchKernel)),
          m_preNorm(preNorm),
          m_blocks(std::move(blocks)),
          m_proj1(proj1),
          m_proj2(proj2),
          m_merge1(merge1),
          m_merge2(merge2),
          m_owned(std::move(owned)) {}

    const VisionConfig& config() const override { return m_config; }

    Result<std::unique_ptr<VisionEncoding>> beginEncode(const ImagePatches& image) const override;

private:
    Status checkImage(const ImagePatches& image) const;
    void linear(const Linear& l, const float* x, std::ptrdiff_t xStride, std::int64_t m, float* y,
                std::ptrdiff_t yStride, ThreadPool& pool) const;
    void layerNorm(const float* x, const Norm& n, float* y, std::int64_t rows,
                   ThreadPool& pool) const;
    void rope(float* x, const std::vector<float>& cos, const std::vector<float>& sin,
              std::int64_t rows, ThreadPool& pool) const;
    void attention(const float* q, const float* k, const float* vt, float* out, std::int64_t rows,
                   ThreadPool& pool) const;

    // The (rows, width) planes a block works in, and the MLP/projector intermediates of one row
    // chunk.
    struct Buffers {
        std::vector<float> x, h, q, k, o, hidden;
        std::vector<float> cos, sin;  // rotary angles, rows x 3 * axis/2
    };
    // The patch embedding and the pre-norm into b.x, allocating the scratch.
    void embedPatches(const ImagePatches& image, Buffers& b, ThreadPool& pool) const;
    // Rotary angles per token of `image` into b.cos / b.sin.
    void rotaryTables(const ImagePatches& image, Buffers& b) const;
    // b.x += attention(LayerNorm(b.x)), then b.x += MLP(LayerNorm(b.x)).
    void runBlock(const Block& block, std::int64_t rows, Buffers& b, ThreadPool& pool) const;
    // The projector per patch and the 2x2 merger over b.x into embeddings.
    void project(std::int64_t rows, Buffers& b, std::vector<float>& embeddings,
                 ThreadPool& pool) const;

    VisionConfig m_config;
    std::vector<float> m_patchKernel;  // (width, 3*2*p*p) f32
    Norm m_preNorm;
    std::vector<Block> m_blocks;
    Linear m_proj1, m_proj2, m_merge1, m_merge2;
    std::deque<std::vector<float>> m_owned;  // f32 copies of the f16/bf16 1-D tensors
};

Status MiniMaxM3Vision::checkImage(const ImagePatches& image) const {
    return vision::checkImagePatches(image, m_config, std::int64_t(1) << 20);
}

void MiniMaxM3Vision::linear(const Linear& l, const float* x, std::ptrdiff_t xStride,
                             std::int64_t m, float* y, std::ptrdiff_t yStride,
                             ThreadPool& pool) const {
    vision::applyLinear(l, precision(), x, xStride, m, y, yStride, pool);
}

void MiniMaxM3Vision::layerNorm(const float* x, const Norm& n, float* y, std::int64_t rows,
                                ThreadPool& pool) const {
    const std::int64_t width = m_config.width;
    const double eps = m_config.normEps;
    pool.parallelFor(rows, 16, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end; ++r) {
            const float* in = x + r * width;
            float* out = y + r * width;
            double sum = 0.0;
            for (std::int64_t i = 0; i < width; ++i)
                sum += double(in[i]);
            const double mean = sum / double(width);
            double squares = 0.0;
            for (std::int64_t i = 0; i < width; ++i)
                squares += (double(in[i]) - mean) * (double(in[i]) - mean);
            const float scale = float(1.0 / std::sqrt(squares / double(width) + eps));
            const float shift = float(mean);
            for (std::int64_t i = 0; i < width; ++i)
                out[i] = (in[i] - shift) * scale * n.weight[i] + n.bias[i];
        }
    });
}

// Each head is [T | H | W | pass-through] in the GGUF layout (the converter permuted the q/k
// rows); each axis slice of `axis` dims turns NEOX-style, pairs (i, i + axis/2). cos/sin hold,
// per row, the 3 * axis/2 angles of the three slices in order.
void MiniMaxM3Vision::rope(float* x, const std::vector<float>& cos, const std::vector<float>& sin,
                           std::int64_t rows, ThreadPool& pool) const {
    const std::int64_t width = m_config.width, headDim = m_config.headDim;
    const std::int64_t axis = axisDims(headDim), half = axis / 2, angles = 3 * half;
    pool.parallelFor(rows, 64, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end; ++r) {
            const float* c = cos.data() + r * angles;
            const float* s = sin.data() + r * angles;
            for (std::int64_t h = 0; h < m_config.heads; ++h) {
                float* head = x + r * width + h * headDim;
                for (std::int64_t slice = 0; slice < 3; ++slice) {
                    float* v = head + slice * axis;
                    const float* cs = c + slice * half;
                    const float* sn = s + slice * half;
                    for (std::int64_t i = 0; i < half; ++i) {
                        const float a = v[i], b = v[i + half];
                        v[i] = a * cs[i] - b * sn[i];
                        v[i + half] = b * cs[i] + a * sn[i];
                    }
                }
            }
        }
    });
}

// Softmax(q k^T) v per head over all rows. q is pre-scaled by 1/sqrt(headDim); vt is v
// transposed, (width, rows), so that both products are gemm calls with f32 "weights".
void MiniMaxM3Vision::attention(const float* q, const float* k, const float* vt, float* out,
                                std::int64_t rows, ThreadPool& pool) const {
    vision::spanAttention(q, k, vt, out, rows, m_config.heads, m_config.headDim, {{0, rows}},
                          precision(), pool);
}

// Row r of ImagePatches is patch (2y + dy, 2x + dx) of window (y, x) = (r/4 / windowsW,
// r/4 % windowsW), (dy, dx) = (r%4 / 2, r%4 % 2); a still image is frame 0.
void MiniMaxM3Vision::rotaryTables(const ImagePatches& image, Buffers& b) const {
    const std::int64_t rows = image.patchCount();
    const std::int64_t half = axisDims(m_config.headDim) / 2, angles = 3 * half;
    std::vector<double> inverse(static_cast<std::size_t>(half));
    for (std::int64_t i = 0; i < half; ++i)
        inverse[std::size_t(i)] = std::pow(kRopeTheta, -2.0 * double(i) / double(2 * half));
    b.cos.resize(static_cast<std::size_t>(rows * angles));
    b.sin.resize(static_cast<std::size_t>(rows * angles));
    const std::int64_t windowsW = image.gridW / 2;
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t window = r / 4, d = r % 4;
        const double position[3] = {0.0, double(window / windowsW * 2 + d / 2),
                                    double(window % windowsW * 2 + d % 2)};
        for (std::int64_t axis = 0; axis < 3; ++axis) {
            for (std::int64_t i = 0; i < half; ++i) {
                const double angle = position[axis] * inverse[std::size_t(i)];
                b.cos[std::size_t(r * angles + axis * half + i)] = float(std::cos(angle));
                b.sin[std::size_t(r * angles + axis * half + i)] = float(std::sin(angle));
            }
        }
    }
}

void MiniMaxM3Vision::runBlock(const Block& block, std::int64_t rows, Buffers& b,
                               ThreadPool& pool) const {
    const VisionConfig& c = m_config;
    const std::int64_t width = c.width, chunk = std::min(kRowChunk, rows);
    float *x = b.x.data(), *h = b.h.data(), *q = b.q.data(), *k = b.k.data(), *o = b.o.data();
    const auto addInto = [&](float* target, const float* source) {
        pool.parallelFor(rows, 64, [&](std::int64_t begin, std::int64_t end) {
            for (std::int64_t i = begin * width; i < end * width; ++i)
                target[i] += source[i];
        });
    };
    const float queryScale = float(1.0 / std::sqrt(double(c.headDim)));
    layerNorm(x, block.norm1, h, rows, pool);
    linear(block.q, h, width, rows, q, width, pool);
    linear(block.k, h, width, rows, k, width, pool);
    linear(block.v, h, width, rows, o, width, pool);
    rope(q, b.cos, b.sin, rows, pool);
    rope(k, b.cos, b.sin, rows, pool);
    pool.parallelFor(rows, 64, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin * width; i < end * width; ++i)
            q[i] *= queryScale;
    });
    // v transposed into h (free until the next norm): (width, rows).
    pool.parallelFor(width, 8, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t col = begin; col < end; ++col)
            for (std::int64_t r = 0; r < rows; ++r)
                h[col * rows + r] = o[r * width + col];
    });
    attention(q, k, h, o, rows, pool);
    linear(block.o, o, width, rows, q, width, pool);
    addInto(x, q);

    layerNorm(x, block.norm2, h, rows, pool);
    float* hidden = b.hidden.data();
    for (std::int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const std::int64_t n = std::min(chunk, rows - r0);
        linear(block.up, h + r0 * width, width, n, hidden, c.ffnSize, pool);
        pool.parallelFor(n, 16, [&](std::int64_t begin, std::int64_t end) {
            float* v = hidden + begin * c.ffnSize;
            kernels::geluErf(v, v, (end - begin) * c.ffnSize);
        });
        linear(block.down, hidden, c.ffnSize, n, o + r0 * width, width, pool);
    }
    addInto(x, o);
}

// Projector per patch, then each window's 4 consecutive projected patches side by side as one
// (4P) row of the merge MLP; chunks are whole windows (kRowChunk is a multiple of 4).
void MiniMaxM3Vision::project(std::int64_t rows, Buffers& b, std::vector<float>& embeddings,
                              ThreadPool& pool) const {
    const std::int64_t width = m_config.width, P = m_config.projectionDim,
                       chunk = std::min(kRowChunk, rows);
    embeddings.resize(std::size_t(rows / 4 * P));
    float* hidden = b.hidden.data();
    std::vector<float> projected(static_cast<std::size_t>(chunk * P));
    const auto gelu = [&](std::int64_t count) {
        pool.parallelFor(count, 16, [&](std::int64_t begin, std::int64_t end) {
            float* v = hidden + begin * P;
            kernels::geluErf(v, v, (end - begin) * P);
        });
    };
    for (std::int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const std::int64_t n = std::min(chunk, rows - r0), units = n / 4;
        linear(m_proj1, b.x.data() + r0 * width, width, n, hidden, P, pool);
        gelu(n);
        linear(m_proj2, hidden, P, n, projected.data(), P, pool);
        linear(m_merge1, projected.data(), 4 * P, units, hidden, P, pool);
        gelu(units);
        linear(m_merge2, hidden, P, units, embeddings.data() + r0 / 4 * P, P, pool);
    }
}

void MiniMaxM3Vision::embedPatches(const ImagePatches& image, Buffers& b, ThreadPool& pool) const {
    const VisionConfig& c = m_config;
    const std::int64_t rows = image.patchCount(), width = c.width;
    rotaryTables(image, b);
    // Five (rows, width) planes carry a block: the residual x, the normed input h, q, k and one
    // for v / the attention output; (rows, ffn) intermediates go in row chunks.
    const std::size_t plane = std::size_t(rows * width);
    for (std::vector<float>* buffer : {&b.x, &b.h, &b.q, &b.k, &b.o})
        buffer->resize(plane);
    b.hidden.resize(
        static_cast<std::size_t>(std::min(kRowChunk, rows) * std::max(c.ffnSize, c.projectionDim)));
    const Linear patchEmbed{TensorType::F32, m_patchKernel.data(), image.patchValues(), width,
                            nullptr};
    linear(patchEmbed, image.values.data(), image.patchValues(), rows, b.h.data(), width, pool);
    layerNorm(b.h.data(), m_preNorm, b.x.data(), rows, pool);
}

// Stages: the patch embedding, each block, the projector (which frees the scratch).
Result<std::unique_ptr<VisionEncoding>> MiniMaxM3Vision::beginEncode(
    const ImagePatches& image) const {
    IRIS_RETURN_IF_ERROR(checkImage(image));
    struct Work {
        Buffers buffers;
        std::vector<float> embeddings;
    };
    auto work = std::make_shared<Work>();
    const int blocks = int(m_blocks.size());
    const std::int64_t rows = image.patchCount();
    return std::make_unique<VisionEncoding>(
        blocks + 2,
        [this, work, blocks, rows, &image](int stage, ThreadPool& pool) {
            if (stage == 0) {
                embedPatches(image, work->buffers, pool);
            } else if (stage <= blocks) {
                runBlock(m_blocks[std::size_t(stage - 1)], rows, work->buffers, pool);
            } else {
                project(rows, work->buffers, work->embeddings, pool);
                work->buffers = Buffers{};
            }
        },
        [work] { return std::move(work->embeddings); });
}

}  // namespace

Result<std::unique_ptr<VisionModel>> createMiniMaxM3Vision(const GgufFile& file) {
    Result<VisionConfig> config = readConfig(file);
    if (!config) return config.status();
    const VisionConfig& c = *config;
    std::deque<std::vector<float>> owned;
    const TensorBinder bind = vision::towerBinder(file, owned);
    Result<std::vector<float>> patchKernel = vision::bindPatchKernel(bind, c.patchSize, c.width);
    if (!patchKernel) return patchKernel.status();
    Norm preNorm;
    IRIS_RETURN_IF_ERROR(assign(preNorm, bindNorm(bind, "v.pre_ln", c.width)));
    std::vector<Block> blocks(static_cast<std::size_t>(c.blocks));
    for (std::int64_t i = 0; i < c.blocks; ++i) {
        const std::string p = "v.blk." + std::to_string(i) + ".";
        Block& b = blocks[std::size_t(i)];
        IRIS_RETURN_IF_ERROR(assign(b.norm1, bindNorm(bind, p + "ln1", c.width)));
        IRIS_RETURN_IF_ERROR(assign(b.q, bind.linear(p + "attn_q", c.width, c.width, true)));
        IRIS_RETURN_IF_ERROR(assign(b.k, bind.linear(p + "attn_k", c.width, c.width, true)));
        IRIS_RETURN_IF_ERROR(assign(b.v, bind.linear(p + "attn_v", c.width, c.width, true)));
        IRIS_RETURN_IF_ERROR(assign(b.o, bind.linear(p + "attn_out", c.width, c.width, true)));
        IRIS_RETURN_IF_ERROR(assign(b.norm2, bindNorm(bind, p + "ln2", c.width)));
        IRIS_RETURN_IF_ERROR(assign(b.up, bind.linear(p + "ffn_up", c.width, c.ffnSize, true)));
        IRIS_RETURN_IF_ERROR(assign(b.down, bind.linear(p + "ffn_down", c.ffnSize, c.width, true)));
    }
    const std::int64_t P = c.projectionDim;
    Linear proj1, proj2, merge1, merge2;
    IRIS_RETURN_IF_ERROR(assign(proj1, bind.linear("mm.1", c.width, P, true)));
    IRIS_RETURN_IF_ERROR(assign(proj2, bind.linear("mm.2", P, P, true)));
    IRIS_RETURN_IF_ERROR(assign(merge1, bind.linear("mm.merge.fc1", 4 * P, P, true)));
    IRIS_RETURN_IF_ERROR(assign(merge2, bind.linear("mm.merge.fc2", P, P, true)));
    return std::unique_ptr<VisionModel>(
        new MiniMaxM3Vision(*config, std::move(*patchKernel), preNorm, std::move(blocks), proj1,
                            proj2, merge1, merge2, std::move(owned)));
}

}  // namespace iris::inference
