#pragma once
// Attention of query tokens over keys and values kept in a paged cache (see
// inference/kv_cache.h for the layout), with grouped-query heads.

#include <cstddef>
#include <cstdint>

#include "kernels/tensor_type.h"

namespace iris::kernels {

// One layer's K and V pools and one sequence's block table.
//   token t of the sequence: block blockTable[t / blockSize], row t % blockSize; its K for kv head
//   g starts at keys + ((block * blockSize + row) * kvHeads + g) * headDim elements (V likewise).
struct PagedKv {
    const void* keys = nullptr;
    const void* values = nullptr;
    const std::int32_t* blockTable = nullptr;
    int blockSize = 0;
    int kvHeads = 0;
    int headDim = 0;
    TensorType type = TensorType::F16;  // F16 or F32
};

// For query heads h in [headBegin, headEnd):
//   out[h] = sum_{t < length} softmax_t(scale * q[h] . K[t, g]) V[t, g],  g = h / (heads / kvHeads)
// q, out: (heads, headDim) f32. scratch: (headEnd - headBegin) * length floats. Softmax in f32
// with the max subtracted. Passing all heads of one KV group at once reads its K and V once.
void attendPaged(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                 float* out, float* scratch, int headBegin, int headEnd);

}  // namespace iris::kernels
