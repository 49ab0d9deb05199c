#include "app/version.h"

#include <sstream>

#include "app/build_info.h"
#include "kernels/cpu_features.h"
#include "kernels/cuda_info.h"

namespace iris::app {

std::string versionText() {
    const kernels::CpuFeatures& cpu = kernels::cpuFeatures();
    const kernels::CudaInfo cuda = kernels::cudaInfo();
    std::ostringstream text;
    text << "iris " << kVersion << '\n'
         << "build: " << kBuildType << ", " << kCompiler
         << (kSanitizers ? ", address+undefined sanitizers" : "") << '\n'
         << "cpu: " << (cpu.brand.empty() ? std::string("unknown") : cpu.brand) << '\n'
         << "cpu features: " << kernels::cpuFeatureList(cpu) << '\n'
         << "cpu kernels: " << kernels::cpuIsaName(kernels::activeIsa())
         << " (best supported: " << kernels::cpuIsaName(kernels::highestSupportedIsa(cpu)) << ")\n";
    if (!cuda.compiledIn) {
        text << "cuda: not compiled in\n";
    } else {
        text << "cuda: compiled in (nvcc " << cuda.compilerVersion << ", " << cuda.architectures
             << "); ";
        if (cuda.devices.empty()) {
            text << "no usable device: " << cuda.runtimeStatus << '\n';
        } else {
            for (std::size_t i = 0; i < cuda.devices.size(); ++i) {
                text << (i == 0 ? "" : "; ") << "device " << i << ": " << cuda.devices[i];
            }
            text << '\n';
        }
    }
    return text.str();
}

}  // namespace iris::app
