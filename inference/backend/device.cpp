#include "inference/backend/device.h"

#include <charconv>

#include "inference/backend/cpu_backend.h"
#include "inference/backend/cuda_backend.h"
#include "kernels/cuda_info.h"

#if IRIS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace iris::inference {

Result<DeviceChoice> parseDevice(std::string_view text) {
    if (text == "auto") return DeviceChoice{DeviceKind::Auto, 0};
    if (text == "cpu") return DeviceChoice{DeviceKind::Cpu, 0};
    if (text == "cuda") return DeviceChoice{DeviceKind::Cuda, 0};
    if (text.starts_with("cuda:")) {
        const std::string_view digits = text.substr(5);
        int index = -1;
        const auto [end, error] =
            std::from_chars(digits.data(), digits.data() + digits.size(), index);
        if (error == std::errc() && end == digits.data() + digits.size() && index >= 0)
            return DeviceChoice{DeviceKind::Cuda, index};
    }
    return Status::invalidArgument("--device '" + std::string(text) +
                                   "' is not one of auto, cpu, cuda, cuda:N");
}

std::string deviceText(const DeviceChoice& choice) {
    switch (choice.kind) {
        case DeviceKind::Auto:
            return "auto";
        case DeviceKind::Cpu:
            return "cpu";
        case DeviceKind::Cuda:
            return "cuda:" + std::to_string(choice.index);
    }
    return "auto";
}

CudaAvailability probeCuda(int index) {
    const kernels::CudaInfo info = kernels::cudaInfo();
    CudaAvailability a{info.compiledIn, {}};
    if (!info.compiledIn) {
        a.problem = "this build of Iris has no CUDA (configure with IRIS_CUDA=ON and nvcc)";
        return a;
    }
    if (info.runtimeStatus != "ok") {
        // cudaInfo reports the runtime's own words: "no CUDA-capable device is detected",
        // "CUDA driver version is insufficient for CUDA runtime version" (also what a machine
        // without any NVIDIA driver gets), ...
        a.problem = "no usable CUDA device (" + info.runtimeStatus + ")";
        if (info.runtimeStatus.find("insufficient") != std::string::npos) {
            a.problem += ": no NVIDIA driver, or one older than the CUDA " +
                         info.compilerVersion + " runtime Iris was built with";
        }
        return a;
    }
    if (index >= int(info.devices.size())) {
        a.problem = "there is no CUDA device " + std::to_string(index) + " (" +
                    std::to_string(info.devices.size()) + " found)";
        return a;
    }
#if IRIS_HAVE_CUDA
    // The prefill products multiply bf16 on tensor cores (WMMA), which needs sm_80; the build
    // holds sm_90a code and compute_80 PTX, so an older GPU would fail at the first launch.
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index) != cudaSuccess ||
        major < 8) {
        a.problem = "CUDA device " + std::to_string(index) + " (" +
                    info.devices[std::size_t(index)] +
                    ") is older than compute capability 8.0, which the kernels need";
    }
#endif
    return a;
}

bool cudaRunsArchitecture(std::string_view architecture) {
    return architecture == "qwen2" || architecture == "qwen2vl" || architecture == "qwen3" ||
           architecture == "minimax-m3";
}

Result<ResolvedDevice> resolveDevice(const DeviceChoice& choice, std::string_view architecture,
                                     const CudaAvailability& cuda) {
    if (choice.kind == DeviceKind::Cpu) return ResolvedDevice{};
    const bool archOk = cudaRunsArchitecture(architecture);
    if (choice.kind == DeviceKind::Cuda) {
        if (!cuda.problem.empty())
            return Status::unsupported("--device " + deviceText(choice) + ": " + cuda.problem);
        if (!archOk) {
            return Status::unsupported(
                "--device " + deviceText(choice) + ": architecture '" + std::string(architecture) +
                "' has no CUDA path (qwen2, qwen2vl, qwen3 and minimax-m3 have one); "
                "use --device cpu");
        }
        return ResolvedDevice{true, choice.index, {}};
    }
    if (!cuda.problem.empty())
        return ResolvedDevice{false, 0, "running on the CPU: " + cuda.problem};
    if (!archOk) {
        return ResolvedDevice{false, 0,
                              "running on the CPU: architecture '" + std::string(architecture) +
                                  "' has no CUDA path"};
    }
    return ResolvedDevice{true, choice.index, {}};
}

Result<std::unique_ptr<DecoderBackend>> makeBackend(const ModelConfig& config,
                                                    const ModelBackend& where) {
    if (where.cuda) return makeCudaBackend(config, where);
    return makeCpuBackend();
}

}  // namespace iris::inference
