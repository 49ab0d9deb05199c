#pragma once
// Element-wise activations of the feed-forward blocks and projectors, and the exponentials of a
// softmax. Each runs on the calling thread (callers split long arrays between threads); out may
// equal the input in every function. swiglu and expShiftSum run the variant for activeIsa(): the
// AVX2 one evaluates exp with a degree-6 polynomial after range reduction (relative error below
// 2e-7 against std::exp, which the scalar reference calls); the others are scalar loops.

#include <cstdint>

namespace iris::kernels {

// out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + e^-x). out may be gate or up.
void swiglu(const float* gate, const float* up, float* out, std::int64_t n);

// x[i] = exp(x[i] - shift); returns the sum of the new x[i] (a softmax's denominator, before the
// division). Arguments below -87 give 0 or the smallest normal floats, never NaN.
float expShiftSum(float* x, std::int64_t n, float shift);

// out[i] = silu(x[i]) = x[i] / (1 + e^-x[i]).
void silu(const float* x, float* out, std::int64_t n);

// out[i] = gelu(x[i]) with the tanh approximation that ggml_gelu (and so llama.cpp's projectors)
// uses: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). It differs from the exact GELU by at
// most about 5e-4 absolute; ggml additionally looks it up in an f16 table, which Iris does not.
void gelu(const float* x, float* out, std::int64_t n);

// out[i] = 0.5 x (1 + erf(x / sqrt 2)): the exact GELU of PyTorch's nn.GELU() (what Hugging Face
// runs in the Qwen2.5-VL merger).
void geluErf(const float* x, float* out, std::int64_t n);

// out[i] = gelu(gate[i]) * up[i] (tanh approximation as gelu()): the gated MLP of vision towers
// whose mmproj does not set clip.use_silu.
void geglu(const float* gate, const float* up, float* out, std::int64_t n);

}  // namespace iris::kernels
