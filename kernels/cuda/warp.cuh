#pragma once
// Warp-wide reductions the CUDA kernels share: every lane of a full warp takes part and every
// lane gets the result (butterfly exchanges through __shfl_xor_sync).

namespace iris::kernels::cuda {

inline constexpr int kWarp = 32;

template <class T>
__device__ inline T warpSum(T v) {
    for (int offset = kWarp / 2; offset > 0; offset /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ inline float warpMax(float v) {
    for (int offset = kWarp / 2; offset > 0; offset /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

}  // namespace iris::kernels::cuda
