#pragma once
// The CPU variants behind kernels::attendPaged, for tests and benchmarks. Same contract, except
// that scratch holds (headEnd - headBegin) * length floats.

#include <cstdint>

#include "kernels/attention.h"
#include "kernels/cpu/dispatch.h"

namespace iris::kernels::cpu {

using AttendFn = void (*)(const float* q, int heads, const PagedKv& kv, std::int64_t length,
                          float scale, float* out, float* scratch, int headBegin, int headEnd);

void attendScalar(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                  float* out, float* scratch, int headBegin, int headEnd);
void attendAvx2(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                float* out, float* scratch, int headBegin, int headEnd);
void attendAvx512(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                  float* out, float* scratch, int headBegin, int headEnd);

}  // namespace iris::kernels::cpu
