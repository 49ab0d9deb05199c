// The Qwen2.5-VL vision tower and patch merger (clip.projector_type "qwen2.5vl_merger"), as
// llama.cpp's mmproj GGUFs store it (docs/qwen25vl.md sections 2.2 and 4):
//   patch embedding (Conv3d 2x14x14, no bias) -> blocks x [RMSNorm, attention with 2-D RoPE,
//   windowed except every n_wa_pattern-th block; RMSNorm, gated SiLU MLP] -> RMSNorm (post_ln)
//   -> 4 patches of a 2x2 merge window concatenated -> mm.0, GELU, mm.2.
// The tower works in window order: merge units (4 consecutive patches) are permuted so that each
// attention window is a contiguous run of rows, which turns windowed attention into independent
// dense products; the merged tokens are put back into raster order at the end.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "inference/vision/tower_parts.h"
#include "inference/vision/vision_towers.h"
#include "kernels/activation.h"
#include "kernels/gemm.h"
#include "kernels/rms_norm.h"

namespace iris::inference {
namespace {

using kernels::TensorType;
using vision::optionalPositiveInteger;
using vision::positiveInteger;

constexpr double kRopeTheta = 10000.0;       // fixed in Qwen2.5-VL's VisionRotaryEmbedding
constexpr std::int64_t kMlpRowChunk = 1024;  // rows of the MLP's (rows x ffn) scratch at a time

struct Block {
    const float* norm1 = nullptr;
    Linear q, k, v, o;
    const float* norm2 = nullptr;
    Linear gate, up, down;
};

Result<bool> optionalBool(const GgufFile& file, const std::string& key) {
    const GgufValue* value = file.find(key);
    if (value == nullptr) return false;
    if (const auto* flag = std::get_if<bool>(value)) return *flag;
    return Status::corrupt(file.name() + ": metadata '" + key + "' has type " +
                           std::string(ggufTypeName(ggufTypeOf(*value))) + ", expected bool");
}

Result<VisionConfig> readConfig(const GgufFile& file) {
    VisionConfig c;
    c.projector = ProjectorType::Qwen25VlMerger;
    c.projectorName = "qwen2.5vl_merger";
    IRIS_RETURN_IF_ERROR(vision::readCommonConfig(file, c));
    IRIS_RETURN_IF_ERROR(
        assign(c.projectionDim, positiveInteger(file, "clip.vision.projection_dim")));
    IRIS_RETURN_IF_ERROR(
        assign(c.windowSize, optionalPositiveInteger(file, "clip.vision.window_size", 112)));
    IRIS_RETURN_IF_ERROR(
        assign(c.fullAttentionPeriod, positiveInteger(file, "clip.vision.n_wa_pattern")));

    if (c.width % c.heads != 0 || (c.width / c.heads) % 4 != 0) {
        return Status::corrupt(file.name() + ": clip.vision.embedding_length " +
                               std::to_string(c.width) + " over " + std::to_string(c.heads) +
                               " heads (clip.vision.attention.head_count) does not give a head "
                               "size divisible by 4, which the 2-D rotary embedding needs");
    }
    c.headDim = c.width / c.heads;
    if (c.mergeSize != 2) {
        return Status::unsupported(file.name() + ": clip.vision.spatial_merge_size is " +
                                   std::to_string(c.mergeSize) +
                                   "; the qwen2.5vl_merger projector merges 2x2 patches");
    }
    if (c.windowSize % (c.patchSize * c.mergeSize) != 0) {
        return Status::corrupt(file.name() + ": clip.vision.window_size " +
                               std::to_string(c.windowSize) +
                               " is not a multiple of patch size x merge size (" +
                               std::to_string(c.patchSize * c.mergeSize) + " pixels)");
    }
    return c;
}

class Qwen25VlVision final : public VisionModel {
public:
    Qwen25VlVision(VisionConfig config, std::vector<float> patchKernel, std::vector<Block> blocks,
                   const float* postNorm, Linear merger0, Linear merger2, bool siluMlp,
                   std::deque<std::vector<float>> owned)
        : m_config(std::move(config)),
          m_patchKernel(std::move(patchKernel)),
          m_blocks(std::move(blocks)),
          m_postNorm(postNorm),
          m_merger0(merger0),
          m_merger2(merger2),
          m_siluMlp(siluMlp),
          m_owned(std::move(owned)) {}

    const VisionConfig& config() const override { return m_config; }

    Result<std::unique_ptr<VisionEncoding>> beginEncode(const ImagePatches& image) const override;

private:
    // Window layout of one image: the permutation of merge units and the attention windows.
    struct Layout {
        // Window-ordered slot j holds the merge unit (4 patches) of raster index unitOrder[j].
        std::vector<std::int64_t> unitOrder;
        std::vector<std::pair<std::int64_t, std::int64_t>> windows;  // [begin, end) in patches
        std::vector<float> cos, sin;  // per window-ordered patch, headDim/2 rotary angles each
    };
    // One encoding's state between its stages. Five (rows, width) planes carry a block: the
    // residual x, the normed input h, q, k and one for v / the attention output; the MLP's
    // (rows, ffn) intermediates go in row chunks.
    struct Work {
        const ImagePatches& image;
        Layout layout;
        std::vector<float> x, h, q, k, o, gate, up;
        std::vector<float> embeddings;
    };
    // The stages: the patch embedding (allocating the scratch), block b, the merger.
    void embedPatches(Work& w, ThreadPool& pool) const;
    void runBlock(std::size_t b, Work& w, ThreadPool& pool) const;
    void merge(Work& w, ThreadPool& pool) const;

    Status checkImage(const ImagePatches& image) const;
    Layout makeLayout(const ImagePatches& image) const;
    void linear(const Linear& l, const float* x, std::ptrdiff_t xStride, std::int64_t m, float* y,
                std::ptrdiff_t yStride, ThreadPool& pool) const;
    void norm(const float* x, const float* w, float* y, std::int64_t rows, ThreadPool& pool) const;
    void rope(float* x, const Layout& layout, std::int64_t rows, ThreadPool& pool) const;
    void attention(const float* q, const float* k, const float* vt, float* out, std::int64_t rows,
                   bool full, const Layout& layout, ThreadPool& pool) const;

    VisionConfig m_config;
    std::vector<float> m_patchKernel;  // (width, 3*2*p*p) f32
    std::vector<Block> m_blocks;
    const float* m_postNorm;
    Linear m_merger0, m_merger2;
    bool m_siluMlp;                          // false: GELU-gated (a file without clip.use_silu)
    std::deque<std::vector<float>> m_owned;  // f32 copies of the f16/bf16 1-D tensors
};

Status Qwen25VlVision::checkImage(const ImagePatches& image) const {
    return vision::checkImagePatches(image, m_config, std::int64_t(1) << 22);
}

Qwen25VlVision::Layout Qwen25VlVision::makeLayout(const ImagePatches& image) const {
    const std::int64_t unitsH = image.gridH / 2, unitsW = image.gridW / 2;
    const std::int64_t side = m_config.windowSize / (m_config.patchSize * m_config.mergeSize);
    Layout layout;
    layout.unitOrder.reserve(std::size_t(unitsH * unitsW));
    for (std::int64_t wy = 0; wy < unitsH; wy += side) {
        for (std::int64_t wx = 0; wx < unitsW; wx += side) {
            const std::int64_t begin = std::int64_t(layout.unitOrder.size()) * 4;
            for (std::int64_t y = wy; y < std::min(wy + side, unitsH); ++y)
                for (std::int64_t x = wx; x < std::min(wx + side, unitsW); ++x)
                    layout.unitOrder.push_back(y * unitsW + x);
            layout.windows.emplace_back(begin, std::int64_t(layout.unitOrder.size()) * 4);
        }
    }
    // Rotary angles: pair i < headDim/4 turns with the patch row, the rest with the column; the
    // frequencies restart for the column section (HF VisionRotaryEmbedding(headDim / 2)).
    const std::int64_t pairs = m_config.headDim / 2, quarter = pairs / 2;
    std::vector<double> inverse(static_cast<std::size_t>(quarter));
    for (std::int64_t i = 0; i < quarter; ++i)
        inverse[std::size_t(i)] = std::pow(kRopeTheta, -2.0 * double(i) / double(pairs));
    const std::int64_t patches = image.patchCount();
    layout.cos.resize(std::size_t(patches * pairs));
    layout.sin.resize(std::size_t(patches * pairs));
    for (std::int64_t j = 0; j < std::int64_t(layout.unitOrder.size()); ++j) {
        const std::int64_t unit = layout.unitOrder[std::size_t(j)];
        for (std::int64_t d = 0; d < 4; ++d) {
            const double row = double(unit / unitsW * 2 + d / 2);
            const double col = double(unit % unitsW * 2 + d % 2);
            const std::size_t base = std::size_t((j * 4 + d) * pairs);
            for (std::int64_t i = 0; i < pairs; ++i) {
                const double angle = i < quarter ? row * inverse[std::size_t(i)]
                                                 : col * inverse[std::size_t(i - quarter)];
                layout.cos[base + std::size_t(i)] = float(std::cos(angle));
                layout.sin[base + std::size_t(i)] = float(std::sin(angle));
            }
        }
    }
    return layout;
}

void Qwen25VlVision::linear(const Linear& l, const float* x, std::ptrdiff_t xStride, std::int64_t m,
                            float* y, std::ptrdiff_t yStride, ThreadPool& pool) const {
    vision::applyLinear(l, precision(), x, xStride, m, y, yStride, pool);
}

void Qwen25VlVision::norm(const float* x, const float* w, float* y, std::int64_t rows,
                          ThreadPool& pool) const {
    const std::int64_t width = m_config.width;
    pool.parallelFor(rows, 64, [&](std::int64_t begin, std::int64_t end) {
        kernels::rmsNorm(x + begin * width, width, w, y + begin * width, width, end - begin, width,
                         m_config.normEps);
    });
}

void Qwen25VlVision::rope(float* x, const Layout& layout, std::int64_t rows,
                          ThreadPool& pool) const {
    const std::int64_t width = m_config.width, heads = m_config.heads;
    const std::int64_t pairs = m_config.headDim / 2;
    pool.parallelFor(rows, 64, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end; ++r) {
            const float* cos = layout.cos.data() + r * pairs;
            const float* sin = layout.sin.data() + r * pairs;
            for (std::int64_t h = 0; h < heads; ++h) {
                float* head = x + r * width + h * m_config.headDim;
                for (std::int64_t i = 0; i < pairs; ++i) {
                    const float a = head[i], b = head[i + pairs];
                    head[i] = a * cos[i] - b * sin[i];
                    head[i + pairs] = b * cos[i] + a * sin[i];
                }
            }
        }
    });
}

// Softmax(q k^T) v per head, over windows (or all rows for a full-attention block). q is
// pre-scaled by 1/sqrt(headDim); vt is v transposed, (width, rows), so that both products are
// gemm calls: scores = q_h k_h^T with the window's keys as f32 "weights", out_h = p vt_h^T.
void Qwen25VlVision::attention(const float* q, const float* k, const float* vt, float* out,
                               std::int64_t rows, bool full, const Layout& layout,
                               ThreadPool& pool) const {
    const std::vector<std::pair<std::int64_t, std::int64_t>> whole{{0, rows}};
    vision::spanAttention(q, k, vt, out, rows, m_config.heads, m_config.headDim,
                          full ? whole : layout.windows, precision(), pool);
}

Result<std::unique_ptr<VisionEncoding>> Qwen25VlVision::beginEncode(
    const ImagePatches& image) const {
    IRIS_RETURN_IF_ERROR(checkImage(image));
    auto work =
        std::make_shared<Work>(Work{image, makeLayout(image), {}, {}, {}, {}, {}, {}, {}, {}});
    const int blocks = int(m_blocks.size());
    return std::make_unique<VisionEncoding>(
        blocks + 2,
        [this, work, blocks](int stage, ThreadPool& pool) {
            if (stage == 0)
                embedPatches(*work, pool);
            else if (stage <= blocks)
                runBlock(std::size_t(stage - 1), *work, pool);
            else
                merge(*work, pool);
        },
        [work] { return std::move(work->embeddings); });
}

// Patch embedding in raster-of-merge-windows order (as given), then into window order.
void Qwen25VlVision::embedPatches(Work& w, ThreadPool& pool) const {
    const std::int64_t rows = w.image.patchCount(), width = m_config.width, units = rows / 4;
    const std::size_t plane = std::size_t(rows * width);
    for (std::vector<float>* buffer : {&w.x, &w.h, &w.q, &w.k, &w.o})
        buffer->resize(plane);
    const std::int64_t chunk = std::min(kMlpRowChunk, rows);
    w.gate.resize(static_cast<std::size_t>(chunk * m_config.ffnSize));
    w.up.resize(static_cast<std::size_t>(chunk * m_config.ffnSize));
    const Linear patchEmbed{TensorType::F32, m_patchKernel.data(), w.image.patchValues(), width,
                            nullptr};
    linear(patchEmbed, w.image.values.data(), w.image.patchValues(), rows, w.h.data(), width, pool);
    pool.parallelFor(units, 16, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t j = begin; j < end; ++j) {
            std::memcpy(w.x.data() + j * 4 * width,
                        w.h.data() + w.layout.unitOrder[std::size_t(j)] * 4 * width,
                        std::size_t(4 * width) * sizeof(float));
        }
    });
}

void Qwen25VlVision::runBlock(std::size_t b, Work& w, ThreadPool& pool) const {
    const VisionConfig& c = m_config;
    const std::int64_t rows = w.image.patchCount(), width = c.width;
    const std::int64_t chunk = std::min(kMlpRowChunk, rows);
    std::vector<float>&x = w.x, &h = w.h, &q = w.q, &k = w.k, &o = w.o;
    const auto addInto = [&](float* target, const float* source) {
        pool.parallelFor(rows, 64, [&](std::int64_t begin, std::int64_t end) {
            for (std::int64_t i = begin * width; i < end * width; ++i)
                target[i] += source[i];
        });
    };
    const float queryScale = float(1.0 / std::sqrt(double(c.headDim)));
    const Block& block = m_blocks[b];
    const bool full = (std::int64_t(b) + 1) % c.fullAttentionPeriod == 0;
    norm(x.data(), block.norm1, h.data(), rows, pool);
    linear(block.q, h.data(), width, rows, q.data(), width, pool);
    linear(block.k, h.data(), width, rows, k.data(), width, pool);
    linear(block.v, h.data(), width, rows, o.data(), width, pool);
    rope(q.data(), w.layout, rows, pool);
    rope(k.data(), w.layout, rows, pool);
    pool.parallelFor(rows, 64, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin * width; i < end * width; ++i)
            q[std::size_t(i)] *= queryScale;
    });
    // v transposed into h (free until the next norm): (width, rows). In 16 x 64 tiles, so
    // that the 64 rows' cache lines stay in L1 while 16 columns are read from them (a
    // plain column-by-column copy was a tenth of the encode time).
    pool.parallelFor(width, 16, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r0 = 0; r0 < rows; r0 += 64) {
            const std::int64_t r1 = std::min(rows, r0 + 64);
            for (std::int64_t col = begin; col < end; ++col)
                for (std::int64_t r = r0; r < r1; ++r)
                    h[std::size_t(col * rows + r)] = o[std::size_t(r * width + col)];
        }
    });
    attention(q.data(), k.data(), h.data(), o.data(), rows, full, w.layout, pool);
    linear(block.o, o.data(), width, rows, q.data(), width, pool);
    addInto(x.data(), q.data());

    norm(x.data(), block.norm2, h.data(), rows, pool);
    for (std::int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const std::int64_t n = std::min(chunk, rows - r0);
        linear(block.gate, h.data() + r0 * width, width, n, w.gate.data(), c.ffnSize, pool);
        linear(block.up, h.data() + r0 * width, width, n, w.up.data(), c.ffnSize, pool);
        pool.parallelFor(n, 16, [&](std::int64_t begin, std::int64_t end) {
            float* g = w.gate.data() + begin * c.ffnSize;
            const float* u = w.up.data() + begin * c.ffnSize;
            const std::int64_t count = (end - begin) * c.ffnSize;
            if (m_siluMlp)
                kernels::swiglu(g, u, g, count);
            else
                kernels::geglu(g, u, g, count);
        });
        linear(block.down, w.gate.data(), c.ffnSize, n, o.data() + r0 * width, width, pool);
    }
    addInto(x.data(), o.data());
}

// Merger: RMSNorm per patch, 4 window-ordered patches side by side (a (units, 4 width) view
// of h), mm.0, GELU, mm.2; then each merged token back to its raster slot. Frees the scratch.
void Qwen25VlVision::merge(Work& w, ThreadPool& pool) const {
    const std::int64_t rows = w.image.patchCount(), width = m_config.width, units = rows / 4;
    const std::int64_t P = m_config.projectionDim;
    norm(w.x.data(), m_postNorm, w.h.data(), rows, pool);
    linear(m_merger0, w.h.data(), 4 * width, units, w.q.data(), 4 * width, pool);
    pool.parallelFor(units, 16, [&](std::int64_t begin, std::int64_t end) {
        float* v = w.q.data() + begin * 4 * width;
        kernels::gelu(v, v, (end - begin) * 4 * width);
    });
    std::vector<float> projected(static_cast<std::size_t>(units * P));
    linear(m_merger2, w.q.data(), 4 * width, units, projected.data(), P, pool);
    w.embeddings.resize(projected.size());
    for (std::int64_t j = 0; j < units; ++j) {
        std::memcpy(w.embeddings.data() + w.layout.unitOrder[std::size_t(j)] * P,
                    projected.data() + j * P, std::size_t(P) * sizeof(float));
    }
    for (std::vector<float>* buffer : {&w.x, &w.h, &w.q, &w.k, &w.o, &w.gate, &w.up})
        std::vector<float>().swap(*buffer);
}

}  // namespace

Result<std::unique_ptr<VisionModel>> createQwen25VlVision(const GgufFile& file) {
    Result<VisionConfig> config = readConfig(file);
    if (!config) return config.status();
    const VisionConfig& c = *config;
    Result<bool> useSilu = optionalBool(file, "clip.use_silu");
    if (!useSilu) return useSilu.status();
    Result<bool> useGelu = optionalBool(file, "clip.use_gelu");
    if (!useGelu) return useGelu.status();
    // llama.cpp's rule: use_gelu wins, then use_silu, else GELU.
    const bool siluMlp = !*useGelu && *useSilu;

    std::deque<std::vector<float>> owned;
    const TensorBinder bind = vision::towerBinder(file, owned);
    Result<std::vector<float>> patchKernel = vision::bindPatchKernel(bind, c.patchSize, c.width);
    if (!patchKernel) return patchKernel.status();
    std::vector<Block> blocks(static_cast<std::size_t>(c.blocks));
    for (std::int64_t i = 0; i < c.blocks; ++i) {
        const std::string p = "v.blk." + std::to_string(i) + ".";
        Block& b = blocks[std::size_t(i)];
        IRIS_RETURN_IF_ERROR(assign(b.norm1, bind.vector(p + "ln1.weight", c.width)));
        IRIS_RETURN_IF_ERROR(assign(b.q, bind.linear(p + "attn_q", c.width, c.width, true)));
        IRIS_RETURN_IF_ERROR(assign(b.k, bind.linear(p + "attn_k", c.width, c.width, true)));
        IRIS_RETURN_IF_ERROR(assign(b.v, bind.linear(p + "attn_v", c.width, c.width, true)));
        IRIS_RETURN_IF_ERROR(assign(b.o, bind.linear(p + "attn_out", c.width, c.width, true)));
        IRIS_RETURN_IF_ERROR(assign(b.norm2, bind.vector(p + "ln2.weight", c.width)));
        IRIS_RETURN_IF_ERROR(assign(b.gate, bind.linear(p + "ffn_gate", c.width, c.ffnSize, true)));
        IRIS_RETURN_IF_ERROR(assign(b.up, bind.linear(p + "ffn_up", c.width, c.ffnSize, true)));
        IRIS_RETURN_IF_ERROR(assign(b.down, bind.linear(p + "ffn_down", c.ffnSize, c.width, true)));
    }
    const float* postNorm = nullptr;
    IRIS_RETURN_IF_ERROR(assign(postNorm, bind.vector("v.post_ln.weight", c.width)));
    Linear merger0, merger2;
    const std::int64_t merged = c.width * c.mergeSize * c.mergeSize;
    IRIS_RETURN_IF_ERROR(assign(merger0, bind.linear("mm.0", merged, merged, true)));
    IRIS_RETURN_IF_ERROR(assign(merger2, bind.linear("mm.2", merged, c.projectionDim, true)));
    return std::unique_ptr<VisionModel>(new Qwen25VlVision(*config, std::move(*patchKernel),
                                                           std::move(blocks), postNorm, merger0,
                                                           merger2, siluMlp, std::move(owned)));
}

}  // namespace iris::inference
