#pragma once
// Deterministic sessions for the recording tests: every field of a step derives from its index,
// so a test (or a killed child process) can rebuild the step it expects.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "agent/recording/recording_types.h"
#include "agent/recording/session_store.h"

namespace iris::agent::recording_test {

// A fresh folder under the test artifacts, emptied first.
inline std::filesystem::path freshDir(const std::string& name) {
    const std::filesystem::path dir =
        std::filesystem::path(IRIS_TEST_ARTIFACTS) / "recording" / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

inline std::string readBytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A screenshot unique to `index`: a gradient, a rectangle and the index as text.
inline cv::Mat screenshot(int index, int width = 96, int height = 64) {
    cv::Mat image(height, width, CV_8UC3);
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            image.at<cv::Vec3b>(y, x) =
                cv::Vec3b(static_cast<std::uint8_t>(x * 2 + index * 7),
                          static_cast<std::uint8_t>(y * 3), static_cast<std::uint8_t>(index * 31));
        }
    }
    cv::rectangle(image, cv::Rect(5 + index % 20, 5, 20, 15), cv::Scalar(255, 255, 255), -1);
    cv::putText(image, std::to_string(index), cv::Point(40, 40), cv::FONT_HERSHEY_SIMPLEX, 0.6,
                cv::Scalar(0, 0, 0));
    return image;
}

inline std::vector<std::uint8_t> pngOf(const cv::Mat& image) {
    std::vector<std::uint8_t> png;
    cv::imencode(".png", image, png);
    return png;
}

inline std::vector<std::uint8_t> screenshotPng(int index) {
    return pngOf(screenshot(index));
}

inline std::shared_ptr<const EncodedImage> asImage(const std::vector<std::uint8_t>& png) {
    auto image = std::make_shared<EncodedImage>();
    image->mimeType = "image/png";
    image->bytes = png;
    image->width = 96;
    image->height = 64;
    return image;
}

inline SessionInfo sessionInfo(std::string instruction = "Open the settings page") {
    SessionInfo info;
    info.instruction = std::move(instruction);
    info.environment = "fake";
    info.model = "openai http://127.0.0.1:8000/v1 model=test";
    info.actionFormat = "computer_13";
    info.config = {{"max_steps", 15}, {"sleep_after_execution", 0.5}};
    return info;
}

// Step `index`: its screenshot, a request showing it (and the previous one, to exercise shared
// images), a response, two actions (the last step of a session may end it), results, an edit.
inline StepRecord makeStep(int index, bool last = false) {
    StepRecord step;
    step.index = index;
    step.startedAtMs = 1'760'000'000'000 + index * 1500;
    step.observationPng = screenshotPng(index);
    step.url = "http://localhost:8080/page" + std::to_string(index);
    step.title = "Page " + std::to_string(index);

    step.request.messages.push_back(ChatMessage::text("system", "You are a computer agent."));
    ChatMessage user = ChatMessage::text("user", "Step " + std::to_string(index));
    if (index > 0) user.content.push_back({"", asImage(screenshotPng(index - 1))});
    user.content.push_back({"", asImage(step.observationPng)});
    step.request.messages.push_back(std::move(user));
    step.request.tools.push_back({"computer", "Acts on the screen", R"({"type":"object"})"});
    step.request.maxTokens = 256;
    step.request.seed = 42;
    step.request.stop = {"</answer>"};

    ChatResponse response;
    response.text = "I will click button " + std::to_string(index);
    response.toolCalls.push_back({"call_" + std::to_string(index), "computer",
                                  R"({"action":"click","x":)" + std::to_string(10 + index) + "}"});
    response.finishReason = "tool_calls";
    response.model = "test-model";
    response.promptTokens = 1000 + index;
    response.completionTokens = 20 + index;
    response.latencyMs = 250.5 + index;
    response.timeToFirstTokenMs = 80.25;
    step.response = response;

    step.actions.push_back(Click{Point{10.0 + index, 20.5}, MouseButton::Left, 1});
    if (last) {
        step.actions.push_back(Done{"finished"});
    } else {
        step.actions.push_back(TypeText{"hello " + std::to_string(index)});
    }
    step.results = {{true, "", ""}, {index % 2 == 0, index % 2 == 0 ? "" : "window lost", ""}};
    step.edits.push_back({"src/page" + std::to_string(index) + ".html", index + 1,
                          "@@ -1 +1 @@\n-old\n+new " + std::to_string(index) + "\n"});
    step.timings = {10.0 + index, 2.0, 250.5, 0.5, 30.0, 1.25};
    return step;
}

}  // namespace iris::agent::recording_test
