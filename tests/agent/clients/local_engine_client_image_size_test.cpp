// LocalEngineClient::imageSizeFor: the size of the image its model is shown for a screenshot is
// Qwen2.5-VL's smart resize with the engine's pixel budget and the tower's patch and merge sizes,
// computed here from the rule in docs/qwen25vl.md section 4.1; none without a vision tower.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "agent/clients/local_engine_client.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace iris::agent {
namespace {

namespace fs = std::filesystem;

// The rule, in doubles: sides rounded (half to even) to multiples of `factor`, then scaled down
// into maxPixels (floor) or up into minPixels (ceil) keeping the aspect ratio.
inference::ImageSize referenceResize(int width, int height, double minPixels, double maxPixels,
                                     int factor) {
    const double f = factor;
    double h = std::max(f, std::nearbyint(height / f) * f);
    double w = std::max(f, std::nearbyint(width / f) * f);
    if (h * w > maxPixels) {
        const double beta = std::sqrt(double(height) * width / maxPixels);
        h = std::max(f, std::floor(height / beta / f) * f);
        w = std::max(f, std::floor(width / beta / f) * f);
    } else if (h * w < minPixels) {
        const double beta = std::sqrt(minPixels / (double(height) * width));
        h = std::ceil(height * beta / f) * f;
        w = std::ceil(width * beta / f) * f;
    }
    return {int(w), int(h)};
}

class LocalEngineClientImageSizeTest : public ::testing::Test {
protected:
    void SetUp() override {
        inference::testing::TinyModelSpec spec;
        spec.arch = "qwen2vl";
        spec.vocab = 288;
        spec.withTokenizer = true;
        spec.withVisionTokens = true;
        spec.seed = 7;
        m_model = write("tiny-vl.gguf", inference::testing::makeTinyModel(spec));
        inference::testing::TinyMmprojOptions projector;
        projector.projection = 64;
        m_mmproj = write("mmproj.gguf", inference::testing::makeTinyMmproj(projector).bytes);
    }
    fs::path write(const std::string& name, const std::vector<std::byte>& bytes) {
        return m_scratch.write(name, bytes);
    }

    inference::EngineOptions options() const {
        inference::EngineOptions o;
        o.threads = 1;
        o.kvType = kernels::TensorType::F32;
        o.contextSize = 256;
        o.mmprojPath = m_mmproj;
        return o;
    }

    inference::testing::ScratchDir m_scratch{"iris_client_size"};
    fs::path m_model, m_mmproj;
};

struct Screen {
    int width;
    int height;
};

TEST_F(LocalEngineClientImageSizeTest, IsTheSmartResizeWithTheEnginesBudget) {
    // The tiny projector's patches are 14 pixels, merged 2 x 2: factor 28.
    const std::vector<Screen> screens = {{1920, 1080}, {1280, 800}, {1366, 768},
                                         {2560, 1440}, {150, 90},   {64, 48}};
    for (const auto& [minPixels, maxPixels] :
         {std::pair<std::int64_t, std::int64_t>{8 * 784, 4096 * 784}, {16 * 784, 300 * 784}}) {
        inference::EngineOptions o = options();
        o.imageMinPixels = minPixels;
        o.imageMaxPixels = maxPixels;
        Result<std::unique_ptr<LocalEngineClient>> client = LocalEngineClient::open(m_model, o);
        ASSERT_TRUE(client) << client.status().message();
        for (const Screen& s : screens) {
            const std::optional<inference::ImageSize> size =
                (*client)->imageSizeFor(s.width, s.height);
            ASSERT_TRUE(size) << s.width << "x" << s.height;
            const inference::ImageSize expected =
                referenceResize(s.width, s.height, double(minPixels), double(maxPixels), 28);
            EXPECT_EQ(size->width, expected.width)
                << s.width << "x" << s.height << " in [" << minPixels << ", " << maxPixels << "]";
            EXPECT_EQ(size->height, expected.height)
                << s.width << "x" << s.height << " in [" << minPixels << ", " << maxPixels << "]";
        }
    }
    // The reference itself, against the sizes worked out by hand from the rule.
    EXPECT_EQ(referenceResize(1920, 1080, 8 * 784, 4096 * 784, 28),
              (inference::ImageSize{1932, 1092}));
    EXPECT_EQ(referenceResize(64, 48, 8 * 784, 4096 * 784, 28), (inference::ImageSize{112, 84}));
    EXPECT_EQ(referenceResize(1920, 1080, 16 * 784, 300 * 784, 28),
              (inference::ImageSize{644, 336}));
}

TEST_F(LocalEngineClientImageSizeTest, ATextOnlyModelReportsNone) {
    inference::EngineOptions o = options();
    o.mmprojPath.clear();
    Result<std::unique_ptr<LocalEngineClient>> client = LocalEngineClient::open(m_model, o);
    ASSERT_TRUE(client) << client.status().message();
    EXPECT_EQ((*client)->imageSizeFor(1920, 1080), std::nullopt);
}

TEST_F(LocalEngineClientImageSizeTest, ASizeTheResizeRefusesReportsNone) {
    Result<std::unique_ptr<LocalEngineClient>> client = LocalEngineClient::open(m_model, options());
    ASSERT_TRUE(client) << client.status().message();
    EXPECT_EQ((*client)->imageSizeFor(4020, 20), std::nullopt);  // aspect ratio above 200
    EXPECT_EQ((*client)->imageSizeFor(0, 100), std::nullopt);
}

}  // namespace
}  // namespace iris::agent
