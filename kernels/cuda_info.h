#pragma once
// Whether the CUDA kernels were compiled in, and which GPUs this process can use.

#include <string>
#include <vector>

namespace iris::kernels {

struct CudaInfo {
    bool compiledIn = false;           // built with IRIS_CUDA
    std::string compilerVersion;       // nvcc version, e.g. "13.0.48"; empty when not compiled in
    std::string architectures;         // CMake CUDA architectures, e.g. "90a-real 80-virtual"
    std::string runtimeStatus;         // "ok", or why no device can be used ("no CUDA driver", ...)
    std::vector<std::string> devices;  // "NVIDIA H200 (sm_90, 139 GiB)" for each usable device
};

// Asks the CUDA runtime (when compiled in) on every call; never fails, never aborts.
CudaInfo cudaInfo();

}  // namespace iris::kernels
