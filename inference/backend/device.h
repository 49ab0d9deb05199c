#pragma once
// Which backend runs a model: `--device auto|cpu|cuda[:N]`. auto takes CUDA when Iris was built
// with it, a usable GPU is present and the architecture has a CUDA path, else the CPU with a
// one-line note saying why; an explicit `cuda` that cannot be honoured is an error naming the
// reason.

#include <string>
#include <string_view>

#include "base/status.h"

namespace iris::inference {

enum class DeviceKind { Auto, Cpu, Cuda };

struct DeviceChoice {
    DeviceKind kind = DeviceKind::Auto;
    int index = 0;  // cuda:N
};

// "auto", "cpu", "cuda" (device 0) or "cuda:N"; InvalidArgument naming the text otherwise.
Result<DeviceChoice> parseDevice(std::string_view text);
std::string deviceText(const DeviceChoice& choice);

// What CUDA offers this process, as far as the backend cares (kernels::cudaInfo() plus the
// compute capability the kernels need); tests substitute their own.
struct CudaAvailability {
    bool compiledIn = false;
    std::string problem;  // empty when device `index` can be used, else why not
};
CudaAvailability probeCuda(int index);

struct ResolvedDevice {
    bool cuda = false;
    int index = 0;
    std::string note;  // auto fell back to the CPU: the one line that says why; else empty
};

// Architectures with a CUDA path (the Qwen2 family and MiniMax-M3; their vision towers run on
// the CPU either way).
bool cudaRunsArchitecture(std::string_view architecture);

// Decides for `architecture` given what CUDA offers: Unsupported (naming the reason) when cuda
// was asked for and cannot be used.
Result<ResolvedDevice> resolveDevice(const DeviceChoice& choice, std::string_view architecture,
                                     const CudaAvailability& cuda);

}  // namespace iris::inference
