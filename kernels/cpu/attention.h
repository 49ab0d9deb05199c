#pragma once
// The CPU variants behind kernels::attendRows and attendPaged, for tests and benchmarks.

#include <cstdint>

#include "kernels/attention.h"
#include "kernels/cpu/dispatch.h"

namespace iris::kernels::cpu {

// A rows kernel (kernels::attendRows) and the head-range form over it (kernels::attendPaged).
using AttendRowsFn = void (*)(const AttentionRow* rows, int count, const PagedKv& kv, int kvHead,
                              float scale, float* scratch);
using AttendFn = void (*)(const float* q, int heads, const PagedKv& kv, std::int64_t length,
                          float scale, float* out, float* scratch, int headBegin, int headEnd);

// The rows a variant takes per call, the same for every variant so that any of them can be
// given the tiles one builds: four of the widest vectors' lanes (a prefill tile of a GQA group
// of 7 heads then holds 9 tokens, 63 rows).
inline constexpr int kAttendTile = 64;
// Keys (and values) a variant widens to f32 at a time: 32 rows of a head stay in L1.
inline constexpr int kKeyBlock = 32;

void attendRowsScalar(const AttentionRow* rows, int count, const PagedKv& kv, int kvHead,
                      float scale, float* scratch);
void attendRowsAvx2(const AttentionRow* rows, int count, const PagedKv& kv, int kvHead, float scale,
                    float* scratch);
void attendRowsAvx512(const AttentionRow* rows, int count, const PagedKv& kv, int kvHead,
                      float scale, float* scratch);

// The head-range form over `rows`: each group's heads in tiles of kAttendTile.
void attendHeads(AttendRowsFn rows, const float* q, int heads, const PagedKv& kv,
                 std::int64_t length, float scale, float* out, int headBegin, int headEnd);

void attendScalar(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                  float* out, float* scratch, int headBegin, int headEnd);
void attendAvx2(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                float* out, float* scratch, int headBegin, int headEnd);
void attendAvx512(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                  float* out, float* scratch, int headBegin, int headEnd);

}  // namespace iris::kernels::cpu
