#pragma once
// Attention of query tokens over keys and values kept in a paged cache (see
// inference/kv_cache.h for the layout), with grouped-query heads.

#include <cstddef>
#include <cstdint>

#include "kernels/tensor_type.h"

namespace iris::kernels {

// One layer's K and V pools and one sequence's block table.
//   token t of the sequence: block blockTable[t / blockSize], row t % blockSize, stored at
//   page = slotOf ? slotOf[block] : block; its K for kv head g starts at
//   keys + ((page * blockSize + row) * kvHeads + g) * headDim elements (V likewise).
// `slotOf` is the second level of KV tiers (inference/kv_tiers.h): the pool's blocks of a paged
// layer live in the slots of a smaller arena, and keys/values are the arena's.
struct PagedKv {
    const void* keys = nullptr;
    const void* values = nullptr;
    const std::int32_t* blockTable = nullptr;
    int blockSize = 0;
    int kvHeads = 0;
    int headDim = 0;
    TensorType type = TensorType::F16;  // F16 or F32
    const std::int32_t* slotOf = nullptr;

    // Where token t's block is stored (the `page` above).
    std::int64_t page(std::int64_t t) const {
        const std::int32_t block = blockTable[t / blockSize];
        return slotOf != nullptr ? slotOf[block] : block;
    }
};

// One query row of attendRows: `q` (headDim floats) attends to the first `length` tokens of the
// sequence; the result goes to `out` (headDim floats).
struct AttentionRow {
    const float* q = nullptr;
    float* out = nullptr;
    std::int64_t length = 0;
};

// Rows per attendRows call at most (the same on every CPU).
int attendRowsTile();
// Floats of scratch attendRows needs for rows of at most `maxLength` keys.
std::int64_t attendRowsScratch(int headDim, std::int64_t maxLength);

// For each of `count` <= attendRowsTile() rows, all of KV head `kvHead`:
//   out = sum_{t < length} softmax_t(scale * q . K[t, kvHead]) V[t, kvHead]
// Softmax in f32 with the max subtracted. The rows share each K and V row's load and widening:
// the query heads of a GQA group, and the tokens of one sequence in a prefill chunk (each with
// its own causal length). A row's result has the same bits whatever the other rows of the call
// (every lane sums in key order on its own, keys past its length never touch it): what makes
// the serving engine's batches invariant.
void attendRows(const AttentionRow* rows, int count, const PagedKv& kv, int kvHead, float scale,
                float* scratch);

// For query heads h in [headBegin, headEnd) of one token, through attendRows:
//   out[h] = sum_{t < length} softmax_t(scale * q[h] . K[t, g]) V[t, g],  g = h / (heads / kvHeads)
// q, out: (heads, headDim) f32. scratch is not used (kept for the callers' sake): the kernel
// keeps its own per thread.
void attendPaged(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                 float* out, float* scratch, int headBegin, int headEnd);

}  // namespace iris::kernels
