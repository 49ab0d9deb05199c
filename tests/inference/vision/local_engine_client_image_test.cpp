// LocalEngineClient with images, on a tiny random qwen2vl model and a tiny Qwen2.5-VL projector:
// the answer equals the engine's own for the prompt written out by hand (the ChatML text, the
// image in place of its <|image_pad|>), a later turn with the same screenshot reuses its K/V and
// runs no tower, and a broken image is named. (Lives with the vision tests because it needs their
// projector maker; it belongs with tests/agent/clients otherwise.)
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "agent/clients/local_engine_client.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace iris::agent {
namespace {

namespace fs = std::filesystem;

class LocalEngineClientImageTest : public ::testing::Test {
protected:
    void SetUp() override {
        const inference::testing::TinyModelSpec spec = inference::testing::tinyQwen2VlSpec();
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
        o.threads = 2;
        o.kvType = kernels::TensorType::F32;
        o.contextSize = 1024;
        o.mmprojPath = m_mmproj;
        return o;
    }

    static std::shared_ptr<const EncodedImage> png(int width, int height, int seed) {
        cv::Mat bgr(height, width, CV_8UC3);
        cv::randu(bgr, cv::Scalar::all(0), cv::Scalar::all(256));
        bgr.at<cv::Vec3b>(0, 0)[0] = std::uint8_t(seed);
        auto image = std::make_shared<EncodedImage>();
        image->mimeType = "image/png";
        cv::imencode(".png", bgr, image->bytes);
        image->width = width;
        image->height = height;
        return image;
    }

    inference::testing::ScratchDir m_scratch{"iris_client_image"};
    fs::path m_model, m_mmproj;
};

TEST_F(LocalEngineClientImageTest, AnswersLikeTheEngineAndReusesTheScreenshotNextTurn) {
    Result<std::unique_ptr<LocalEngineClient>> client = LocalEngineClient::open(m_model, options());
    ASSERT_TRUE(client) << client.status().message();
    const auto screenshot = png(112, 84, 1);  // 4x3 merged tokens
    ChatRequest request;
    ChatMessage user;
    user.role = "user";
    user.content.push_back({"", screenshot});
    user.content.push_back({"where is the button?", nullptr});
    request.messages.push_back(user);
    request.maxTokens = 5;
    request.temperature = 0.0;
    Result<ChatResponse> first = (*client)->complete(request);
    ASSERT_TRUE(first) << first.status().message();
    EXPECT_EQ((*client)->lastImagesEncoded(), 1);

    // The engine itself, fed the prompt written out by hand.
    Result<std::unique_ptr<inference::Engine>> engine = inference::Engine::load(m_model, options());
    ASSERT_TRUE(engine);
    const std::string before =
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "<|vision_start|>";
    const std::string after =
        "<|vision_end|>where is the button?<|im_end|>\n<|im_start|>assistant\n";
    inference::GenerateRequest direct;
    direct.prompt = (*engine)->tokenizer().encode(before, true);
    Result<std::shared_ptr<const inference::ImagePatches>> patches =
        (*engine)->prepareImage(screenshot->bytes);
    ASSERT_TRUE(patches);
    EXPECT_EQ((*patches)->tokenCount(), 12);
    direct.images.push_back({direct.prompt.size(), *patches});
    const std::vector<std::int32_t> tail = (*engine)->tokenizer().encode(after, true);
    direct.prompt.insert(direct.prompt.end(), tail.begin(), tail.end());
    direct.sampling.temperature = 0.0f;
    direct.maxTokens = 5;
    auto session = std::move(*(*engine)->newSession());
    Result<inference::GenerateResult> expected = session->generate(direct);
    ASSERT_TRUE(expected) << expected.status().message();
    EXPECT_EQ(first->text, expected->text);
    EXPECT_EQ(first->promptTokens, int(expected->promptTokens));

    // Next turn: the same screenshot object, an answer and a new question after it.
    request.messages.push_back(ChatMessage::text("assistant", first->text));
    request.messages.push_back(ChatMessage::text("user", "and now?"));
    Result<ChatResponse> second = (*client)->complete(request);
    ASSERT_TRUE(second) << second.status().message();
    EXPECT_EQ((*client)->lastImagesEncoded(), 0);
    // The prefix cache keeps whole KV blocks: at least every full block of the first prompt
    // (its text and its 12 image tokens).
    const std::int64_t block = options().kvBlockSize;
    const auto firstPrompt = std::int64_t(direct.prompt.size()) + 12;
    EXPECT_GE((*client)->lastReusedTokens(), firstPrompt / block * block);
    EXPECT_GT((*client)->lastReusedTokens(), 0);
}

TEST_F(LocalEngineClientImageTest, NamesAnImageThatIsNotAPicture) {
    Result<std::unique_ptr<LocalEngineClient>> client = LocalEngineClient::open(m_model, options());
    ASSERT_TRUE(client) << client.status().message();
    auto broken = std::make_shared<EncodedImage>();
    broken->mimeType = "image/png";
    broken->bytes = {1, 2, 3};
    ChatRequest request;
    ChatMessage user;
    user.role = "user";
    user.content.push_back({"look", nullptr});
    user.content.push_back({"", png(56, 56, 2)});
    user.content.push_back({"", broken});
    request.messages.push_back(user);
    const Result<ChatResponse> response = (*client)->complete(request);
    ASSERT_FALSE(response);
    EXPECT_EQ(response.status().code(), StatusCode::InvalidArgument);
    EXPECT_EQ(response.status().message(),
              "tiny-vl.gguf: image 2: image data (3 bytes) is not a PNG or JPEG image");
}

}  // namespace
}  // namespace iris::agent
