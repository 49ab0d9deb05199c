// EngineOptions::onLoadProgress: rising fractions that end at exactly 1 once the engine is ready,
// phase ends at the shares the weight bytes give (counted here from the parsed file), and no 1
// after a load that fails.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include "inference/engine.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"

namespace iris::inference {
namespace {

namespace fs = std::filesystem;

class EngineLoadProgressTest : public ::testing::Test {
protected:
    void SetUp() override {
        testing::TinyModelSpec spec;
        spec.vocab = 288;
        spec.withTokenizer = true;
        spec.hidden = 128;
        spec.headDim = 32;
        spec.ffn = 256;
        spec.layers = 4;
        spec.weightType = kernels::TensorType::Q8_0;  // repacked on load
        m_bytes = testing::makeTinyModel(spec);
        m_path = m_scratch.write("tiny.gguf", m_bytes);
    }

    // The weight bytes, summed from the tensor table without the engine.
    std::uint64_t weightBytes() const {
        Result<GgufFile> parsed = GgufFile::parse(m_bytes, "tiny");
        EXPECT_TRUE(parsed) << parsed.status().message();
        std::uint64_t sum = 0;
        if (parsed) {
            for (const GgufTensor& tensor : parsed->tensors())
                sum += tensor.data.size();
        }
        return sum;
    }

    static EngineOptions recording(std::vector<double>& seen) {
        EngineOptions options;
        options.threads = 1;
        options.contextSize = 64;
        options.onLoadProgress = [&seen](double fraction) { seen.push_back(fraction); };
        return options;
    }

    static void expectRising(const std::vector<double>& seen) {
        for (std::size_t i = 0; i < seen.size(); ++i) {
            EXPECT_GT(seen[i], 0.0) << "report " << i;
            EXPECT_LE(seen[i], 1.0) << "report " << i;
            if (i > 0) {
                EXPECT_GT(seen[i], seen[i - 1]) << "report " << i;
            }
        }
    }

    testing::ScratchDir m_scratch{"iris_load_progress"};
    fs::path m_path;
    std::vector<std::byte> m_bytes;
};

TEST_F(EngineLoadProgressTest, RisesToOneOnlyWhenTheEngineIsReady) {
    std::vector<double> seen;
    Result<std::unique_ptr<Engine>> engine = Engine::load(m_path, recording(seen));
    ASSERT_TRUE(engine) << engine.status().message();
    // One report per tensor read in at least for the larger ones, then the end of the reading,
    // then the ready engine.
    ASSERT_GE(seen.size(), 5u);
    expectRising(seen);
    EXPECT_EQ(seen.back(), 1.0);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1.0), 1);
    // Without a projector, reading the weights in is exactly half of the work (each byte is read
    // in once and built once): bytes / (2 * bytes) is 0.5 in binary floating point.
    ASSERT_GT(weightBytes(), 0u);
    EXPECT_NE(std::find(seen.begin(), seen.end(), 0.5), seen.end())
        << "no report at the end of the reading";
    // The loaded engine works.
    Result<std::unique_ptr<Session>> session = (*engine)->newSession();
    ASSERT_TRUE(session) << session.status().message();
}

TEST_F(EngineLoadProgressTest, NeverReachesOneWhenTheLoadFails) {
    std::vector<double> seen;
    EngineOptions options = recording(seen);
    // The language model given as its own projector: refused after the model is built.
    options.mmprojPath = m_path;
    Result<std::unique_ptr<Engine>> engine = Engine::load(m_path, options);
    ASSERT_FALSE(engine);
    EXPECT_NE(engine.status().message().find("not a vision projector"), std::string::npos)
        << engine.status().message();
    ASSERT_FALSE(seen.empty());
    expectRising(seen);
    EXPECT_LT(seen.back(), 1.0);
    // The projector's work is estimated from its file size before it is opened, so the model is
    // done at weights / (weights + projector file size).
    const double weights = double(weightBytes());
    const double modelDone = weights / (weights + double(m_bytes.size()));
    EXPECT_DOUBLE_EQ(seen.back(), modelDone);
}

TEST_F(EngineLoadProgressTest, ReportsNothingAfterAMissingFile) {
    std::vector<double> seen;
    Result<std::unique_ptr<Engine>> engine =
        Engine::load(m_scratch.path() / "missing.gguf", recording(seen));
    EXPECT_FALSE(engine);
    EXPECT_TRUE(seen.empty());
}

}  // namespace
}  // namespace iris::inference
