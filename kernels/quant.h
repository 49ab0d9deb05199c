#pragma once
// Converting rows between f32 and the weight types: dequantisation (to read any computable
// type) and quantisation (to make test models and tools). Rows hold `count` values, a multiple
// of the type's block size; src and dst must not overlap.

#include <cstdint>

#include "kernels/tensor_type.h"

namespace iris::kernels {

// dst[i] = value i of the row at `src` (f32, f16, bf16 and the legacy and K quantised types;
// tensorTypeInfo(type).computable). Bit-exact with ggml's dequantize_row_*.
void dequantizeRow(TensorType type, const void* src, float* dst, std::int64_t count);

// Whether quantizeRow handles `type`: every computable type.
bool canQuantize(TensorType type);

// Writes `count` values of `src` as `type` to `dst` (rowBytes(type, count) bytes), rounding to
// nearest. f16/bf16 and the legacy types follow ggml's reference quantisers exactly; the K types
// use a straightforward per-sub-block min/max fit (not llama.cpp's iterative search), which is
// what test models need.
void quantizeRow(TensorType type, const float* src, void* dst, std::int64_t count);

}  // namespace iris::kernels
