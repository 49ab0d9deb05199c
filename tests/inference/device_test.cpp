// --device (inference/backend/device.h): parsing, the decision for every combination of what was
// asked, what CUDA offers and the architecture, and the engine's behaviour on this machine (the
// auto fallback line, the error for an explicit cuda that cannot be used).
#include "inference/backend/device.h"

#include <gtest/gtest.h>

#include "inference/engine.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"

namespace iris::inference {
namespace {

TEST(ParseDevice, TakesAutoCpuCudaAndCudaN) {
    struct Case {
        const char* text;
        DeviceKind kind;
        int index;
    };
    for (const Case& c : {Case{"auto", DeviceKind::Auto, 0}, Case{"cpu", DeviceKind::Cpu, 0},
                          Case{"cuda", DeviceKind::Cuda, 0}, Case{"cuda:0", DeviceKind::Cuda, 0},
                          Case{"cuda:3", DeviceKind::Cuda, 3}}) {
        const Result<DeviceChoice> d = parseDevice(c.text);
        ASSERT_TRUE(d) << c.text;
        EXPECT_EQ(d->kind, c.kind) << c.text;
        EXPECT_EQ(d->index, c.index) << c.text;
    }
    EXPECT_EQ(deviceText(*parseDevice("cuda")), "cuda:0");
}

TEST(ParseDevice, RefusesAnythingElseNamingTheOptionAndText) {
    for (const char* text : {"", "gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", "cpu:0"}) {
        const Result<DeviceChoice> d = parseDevice(text);
        ASSERT_FALSE(d) << text;
        EXPECT_EQ(d.status().code(), StatusCode::InvalidArgument);
        EXPECT_NE(d.status().message().find("--device '" + std::string(text) + "'"),
                  std::string::npos)
            << d.status().message();
    }
}

const CudaAvailability kUsable{true, ""};
const CudaAvailability kNoDriver{true,
                                 "no usable CUDA device (CUDA driver version is "
                                 "insufficient for CUDA runtime version)"};
const CudaAvailability kNotBuilt{false, "this build of Iris has no CUDA"};

TEST(ResolveDevice, AutoTakesAUsableGpuForTheDenseArchitectures) {
    for (const char* arch : {"qwen2", "qwen2vl", "qwen3"}) {
        const Result<ResolvedDevice> d = resolveDevice(*parseDevice("auto"), arch, kUsable);
        ASSERT_TRUE(d);
        EXPECT_TRUE(d->cuda) << arch;
        EXPECT_TRUE(d->note.empty());
    }
    const Result<ResolvedDevice> second = resolveDevice(*parseDevice("cuda:1"), "qwen2", kUsable);
    ASSERT_TRUE(second);
    EXPECT_TRUE(second->cuda);
    EXPECT_EQ(second->index, 1);
}

TEST(ResolveDevice, AutoFallsBackToTheCpuWithOneLineSayingWhy) {
    for (const CudaAvailability& cuda : {kNoDriver, kNotBuilt}) {
        const Result<ResolvedDevice> d = resolveDevice(*parseDevice("auto"), "qwen2", cuda);
        ASSERT_TRUE(d);
        EXPECT_FALSE(d->cuda);
        EXPECT_EQ(d->note, "running on the CPU: " + cuda.problem);
        EXPECT_EQ(d->note.find('\n'), std::string::npos);
    }
    const Result<ResolvedDevice> other = resolveDevice(*parseDevice("auto"), "llama", kUsable);
    ASSERT_TRUE(other);
    EXPECT_FALSE(other->cuda);
    EXPECT_EQ(other->note, "running on the CPU: architecture 'llama' has no CUDA path");
}

TEST(ResolveDevice, ExplicitCudaThatCannotRunIsAnErrorNamingTheReason) {
    const Result<ResolvedDevice> noGpu = resolveDevice(*parseDevice("cuda"), "qwen2", kNoDriver);
    ASSERT_FALSE(noGpu);
    EXPECT_EQ(noGpu.status().code(), StatusCode::Unsupported);
    EXPECT_EQ(noGpu.status().message(), "--device cuda:0: " + kNoDriver.problem);
    const Result<ResolvedDevice> other = resolveDevice(*parseDevice("cuda:0"), "llama", kUsable);
    ASSERT_FALSE(other);
    EXPECT_NE(other.status().message().find("architecture 'llama' has no CUDA path"),
              std::string::npos)
        << other.status().message();
}

TEST(ResolveDevice, CpuIsTheCpuWithoutANote) {
    const Result<ResolvedDevice> d = resolveDevice(*parseDevice("cpu"), "qwen2", kNoDriver);
    ASSERT_TRUE(d);
    EXPECT_FALSE(d->cuda);
    EXPECT_TRUE(d->note.empty());
}

class EngineDevice : public ::testing::Test {
protected:
    Result<std::unique_ptr<Engine>> load(const char* device) {
        testing::TinyModelSpec spec;
        spec.vocab = 288;
        spec.withTokenizer = true;
        EngineOptions options;
        options.threads = 1;
        options.device = *parseDevice(device);
        return Engine::load(m_scratch.write("tiny.gguf", testing::makeTinyModel(spec)), options);
    }
    testing::ScratchDir m_scratch{"iris-device-test"};
};

// What this machine offers decides the expectations; without a usable GPU (every CI machine)
// they are the fallback line and the error.
TEST_F(EngineDevice, AutoWithoutAGpuRunsOnTheCpuAndSaysWhy) {
    const CudaAvailability cuda = probeCuda(0);
    if (cuda.problem.empty()) GTEST_SKIP() << "a usable GPU is present: auto takes it";
    Result<std::unique_ptr<Engine>> engine = load("auto");
    ASSERT_TRUE(engine) << engine.status().message();
    EXPECT_EQ((*engine)->deviceName(), "cpu");
    EXPECT_EQ((*engine)->deviceNote(), "running on the CPU: " + cuda.problem);
    if (!cuda.compiledIn) {
        EXPECT_NE(cuda.problem.find("no CUDA"), std::string::npos);
    }
}

TEST_F(EngineDevice, ExplicitCudaWithoutAGpuFailsToLoadNamingTheReason) {
    const CudaAvailability cuda = probeCuda(0);
    if (cuda.problem.empty()) GTEST_SKIP() << "a usable GPU is present";
    Result<std::unique_ptr<Engine>> engine = load("cuda");
    ASSERT_FALSE(engine);
    EXPECT_EQ(engine.status().code(), StatusCode::Unsupported);
    EXPECT_NE(engine.status().message().find(cuda.problem), std::string::npos)
        << engine.status().message();
}

TEST_F(EngineDevice, CpuSaysNothing) {
    Result<std::unique_ptr<Engine>> engine = load("cpu");
    ASSERT_TRUE(engine) << engine.status().message();
    EXPECT_EQ((*engine)->deviceName(), "cpu");
    EXPECT_TRUE((*engine)->deviceNote().empty());
}

}  // namespace
}  // namespace iris::inference
