#pragma once
// Element-wise activations of the feed-forward blocks.

#include <cstdint>

namespace iris::kernels {

// out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + e^-x). out may be gate or up.
void swiglu(const float* gate, const float* up, float* out, std::int64_t n);

}  // namespace iris::kernels
