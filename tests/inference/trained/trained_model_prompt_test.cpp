// The prompt the tiny model is trained on (scripts/training/prompt.py, rendered into
// data/reference.json by make_parity_fixture.py) is the one Iris's agent writes for it: the
// `uitars` action format, one screenshot in the history (--history 1), successful steps without
// feedback, through the chat template the exported file selects (docs/tiny-model.md section 3).
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/clients/local_engine_client.h"
#include "agent/prompt_builder.h"
#include "inference/chat_template.h"
#include "inference/gguf/gguf_file.h"

namespace iris::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(TrainedModelPrompt, AgentRendersTheTrainingPrompt) {
    const fs::path data = fs::path(IRIS_SOURCE_ROOT) / "tests/inference/trained/data";
    std::ifstream in(data / "reference.json");
    const json reference = json::parse(in);
    Result<inference::GgufFile> file =
        inference::GgufFile::open(data / reference["model"].get<std::string>());
    ASSERT_TRUE(file) << file.status().message();
    Result<inference::ChatTemplate> chatTemplate = inference::ChatTemplate::forModel(*file);
    ASSERT_TRUE(chatTemplate) << chatTemplate.status().message();

    auto screenshot = std::make_shared<EncodedImage>();
    screenshot->mimeType = "image/png";
    screenshot->bytes = {1};
    ASSERT_FALSE(reference["prompt_cases"].empty());
    for (const json& c : reference["prompt_cases"]) {
        PromptSettings settings;
        settings.format = ActionFormat::UiTars;
        settings.instruction = c["instruction"].get<std::string>();
        settings.screenWidth = 1280;
        settings.screenHeight = 800;
        settings.browser = true;
        settings.screenshotsInHistory = 1;
        std::vector<StepMemory> history;
        for (const json& answer : c["history"]) {
            StepMemory step;
            step.screenshot = screenshot;
            step.answer.text = answer.get<std::string>();
            history.push_back(step);
        }
        StepMemory current;
        current.screenshot = screenshot;
        Result<std::string> rendered =
            renderPrompt(*chatTemplate, buildChatRequest(settings, history, current));
        ASSERT_TRUE(rendered) << rendered.status().message();
        EXPECT_EQ(*rendered, c["prompt"].get<std::string>()) << "history " << history.size();
    }
}

}  // namespace
}  // namespace iris::agent
