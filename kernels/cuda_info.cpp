#include "kernels/cuda_info.h"

#if IRIS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace iris::kernels {

CudaInfo cudaInfo() {
    CudaInfo info;
#if IRIS_HAVE_CUDA
    info.compiledIn = true;
    info.compilerVersion = IRIS_CUDA_COMPILER_VERSION;
    info.architectures = IRIS_CUDA_ARCHITECTURES;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        info.runtimeStatus = cudaGetErrorString(err);
        return info;
    }
    info.runtimeStatus = count > 0 ? "ok" : "no CUDA device";
    for (int d = 0; d < count; ++d) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
        const double gib = double(prop.totalGlobalMem) / double(1ull << 30);
        info.devices.push_back(std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
                               std::to_string(prop.minor) + ", " + std::to_string(int(gib + 0.5)) +
                               " GiB)");
    }
#else
    info.runtimeStatus = "not compiled in";
#endif
    return info;
}

}  // namespace iris::kernels
