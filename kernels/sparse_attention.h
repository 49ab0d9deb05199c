#pragma once
// MiniMax Sparse Attention (MSA, MiniMax-M3): a small "indexer" scores every cached token for a
// query, the scores are max-pooled into fixed blocks of tokens anchored at position 0, each KV
// group keeps its top-k blocks (the query's own block always among them), and attention runs
// over the selected blocks only. docs/minimax-m3.md section 3.6.
//
// Token t of a sequence lives in the paged cache at page blockTable[t / pageSize], row
// t % pageSize (inference/kv_cache.h). A selection block of S tokens covers positions
// [b * S, (b + 1) * S); the page size divides S or is a multiple of it, so every run of
// min(S, pageSize) tokens is contiguous in memory.

#include <cstddef>
#include <cstdint>

#include "kernels/attention.h"

namespace iris::kernels {

// One layer's indexer keys (f32, one `dim`-vector per token) in the KV cache's paging:
// token t at keys + (blockTable[t / pageSize] * pageSize + t % pageSize) * dim.
struct PagedIndexKeys {
    const float* keys = nullptr;
    const std::int32_t* blockTable = nullptr;
    int pageSize = 0;
    int dim = 0;
};

// Number of selection blocks that hold tokens [0, length).
inline std::int64_t selectionBlocks(std::int64_t length, int selectionBlock) {
    return (length + selectionBlock - 1) / selectionBlock;
}

// Block scores of `groups` index queries q (groups, keys.dim) f32 over tokens [0, length):
//   scores[r * blocks + b] = max over t in block b, t < length, of q[r] . key[t]
// with blocks = selectionBlocks(length, selectionBlock). The dot product is not scaled (the
// scale does not change the ranking). Runs the variant for activeIsa().
void indexerBlockScores(const float* q, int groups, const PagedIndexKeys& keys, std::int64_t length,
                        int selectionBlock, float* scores);

// Chooses up to topK of `blocks` blocks by score: the last `localBlocks` blocks (the query's
// own block and those just before it) are always chosen and count towards topK; the others go
// by descending score, ties to the lower block. Blocks with a NaN or -infinity score are never
// chosen unless forced. Writes the chosen ids in ascending order to `selected` (topK entries of
// room) and returns how many there are. Needs topK >= localBlocks >= 1.
int selectTopBlocks(const float* scores, std::int64_t blocks, int topK, int localBlocks,
                    std::int32_t* selected);

// Attention of query heads [headBegin, headEnd), all of one KV group, over the tokens of the
// `count` selected blocks that are before `length` (causal: a query at position p passes
// length p + 1):
//   out[h] = sum_t softmax_t(scale * q[h] . K[t, g]) V[t, g],  t in the selected blocks, t < length
// q, out: (heads, headDim) f32; blocks: ascending block ids; scratch: (headEnd - headBegin) *
// count * selectionBlock floats. With every block selected this is attendPaged.
void attendBlocks(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                  const std::int32_t* blocks, int count, int selectionBlock, float* out,
                  float* scratch, int headBegin, int headEnd);

// Prefill form of attendBlocks: `n` query tokens of one sequence (a chunk) and one KV group,
// each with its own selection given as a block mask. Query i sits at q + i * qStride (all heads),
// sees tokens t < lengths[i] whose block b has mask[i * maskStride + b] != 0 (b < maskStride),
// and writes out + i * outStride. The kernel walks the blocks once, in order, and runs every query
// that selected a block while that block's K and V rows are in cache (online softmax), so a chunk
// reads each selected block once instead of once per query. scratch: n * (headEnd - headBegin) *
// (headDim + 2) + selectionBlock floats. Same result as attendBlocks per query, up to rounding.
void attendMaskedBlocks(const float* q, std::ptrdiff_t qStride, int n, const std::int64_t* lengths,
                        int heads, const PagedKv& kv, float scale, const std::uint8_t* mask,
                        std::int64_t maskStride, int selectionBlock, float* out,
                        std::ptrdiff_t outStride, float* scratch, int headBegin, int headEnd);

// The CPU variants behind the dispatched ops above, for tests and benchmarks.
namespace cpu {
using BlockScoresFn = void (*)(const float* q, int groups, const PagedIndexKeys& keys,
                               std::int64_t length, int selectionBlock, float* scores);
using AttendBlocksFn = void (*)(const float* q, int heads, const PagedKv& kv, std::int64_t length,
                                float scale, const std::int32_t* blocks, int count,
                                int selectionBlock, float* out, float* scratch, int headBegin,
                                int headEnd);

void indexerBlockScoresScalar(const float* q, int groups, const PagedIndexKeys& keys,
                              std::int64_t length, int selectionBlock, float* scores);
void indexerBlockScoresAvx2(const float* q, int groups, const PagedIndexKeys& keys,
                            std::int64_t length, int selectionBlock, float* scores);
void indexerBlockScoresAvx512(const float* q, int groups, const PagedIndexKeys& keys,
                              std::int64_t length, int selectionBlock, float* scores);

using MaskedBlocksFn = void (*)(const float* q, std::ptrdiff_t qStride, int n,
                                const std::int64_t* lengths, int heads, const PagedKv& kv,
                                float scale, const std::uint8_t* mask, std::int64_t maskStride,
                                int selectionBlock, float* out, std::ptrdiff_t outStride,
                                float* scratch, int headBegin, int headEnd);
void attendMaskedBlocksScalar(const float* q, std::ptrdiff_t qStride, int n,
                              const std::int64_t* lengths, int heads, const PagedKv& kv,
                              float scale, const std::uint8_t* mask, std::int64_t maskStride,
                              int selectionBlock, float* out, std::ptrdiff_t outStride,
                              float* scratch, int headBegin, int headEnd);
void attendMaskedBlocksAvx2(const float* q, std::ptrdiff_t qStride, int n,
                            const std::int64_t* lengths, int heads, const PagedKv& kv, float scale,
                            const std::uint8_t* mask, std::int64_t maskStride, int selectionBlock,
                            float* out, std::ptrdiff_t outStride, float* scratch, int headBegin,
                            int headEnd);
void attendMaskedBlocksAvx512(const float* q, std::ptrdiff_t qStride, int n,
                              const std::int64_t* lengths, int heads, const PagedKv& kv,
                              float scale, const std::uint8_t* mask, std::int64_t maskStride,
                              int selectionBlock, float* out, std::ptrdiff_t outStride,
                              float* scratch, int headBegin, int headEnd);

void attendBlocksScalar(const float* q, int heads, const PagedKv& kv, std::int64_t length,
                        float scale, const std::int32_t* blocks, int count, int selectionBlock,
                        float* out, float* scratch, int headBegin, int headEnd);
void attendBlocksAvx2(const float* q, int heads, const PagedKv& kv, std::int64_t length,
                      float scale, const std::int32_t* blocks, int count, int selectionBlock,
                      float* out, float* scratch, int headBegin, int headEnd);
void attendBlocksAvx512(const float* q, int heads, const PagedKv& kv, std::int64_t length,
                        float scale, const std::int32_t* blocks, int count, int selectionBlock,
                        float* out, float* scratch, int headBegin, int headEnd);
}  // namespace cpu

}  // namespace iris::kernels
