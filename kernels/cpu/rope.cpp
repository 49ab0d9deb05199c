#include "kernels/rope.h"

namespace iris::kernels {

void ropeNeox(float* x, int heads, int headDim, int rotDims, const float* cos, const float* sin) {
    const int half = rotDims / 2;
    for (int h = 0; h < heads; ++h) {
        float* v = x + h * headDim;
        for (int i = 0; i < half; ++i) {
            const float a = v[i], b = v[i + half];
            v[i] = a * cos[i] - b * sin[i];
            v[i + half] = a * sin[i] + b * cos[i];
        }
    }
}

}  // namespace iris::kernels
