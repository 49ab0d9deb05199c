#pragma once
// Test support for `iris serve`: a tiny random model on disk, an OpenAiServer over a Scheduler on
// 127.0.0.1 (any free port), an HTTP client, and the engine's own answer for a prompt written
// out by hand, the independent reference the server's answers are compared with.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <httplib.h>

#include "app/serve/openai_server.h"
#include "inference/engine.h"
#include "inference/scheduler.h"
#include "tests/inference/models/scratch_dir.h"

namespace iris::app::serve::testing {

// The data: payloads of a Server-Sent Events body, in order.
std::vector<std::string> sseData(const std::string& body);

class ServeFixture {
public:
    // A tiny Qwen2 model with a byte-level vocabulary (tests/inference/models/tiny_model.h).
    ServeFixture();
    ~ServeFixture();

    // Replaces the model by a tiny qwen2vl model with a tiny Qwen2.5-VL projector.
    void useVisionModel();
    inference::EngineOptions engineOptions() const;
    // Starts the server; with `load`, hands it a scheduler over a freshly loaded engine.
    void start(ServerOptions server = {}, inference::SchedulerOptions scheduler = {},
               bool load = true);
    void load(inference::SchedulerOptions scheduler = {});

    httplib::Client client() const;
    // The engine's greedy answer for `prompt` (token ids of the text, special tokens parsed) in a
    // fresh session.
    inference::GenerateResult reference(const std::string& prompt, std::int64_t maxTokens) const;
    // Replaces the model by one without an end-of-generation token (TinyModelSpec::endless): its
    // generations run to max_tokens, keeping the scheduler busy until cancelled. Sets the context
    // to kEndlessContext: a test that acts on a generation still running asks for
    // kEndlessTokens, which takes this model tens of seconds (its steps grow with the context),
    // while the test acts within milliseconds. A thousand tokens took under a second on CI, so a
    // generation bounded that low could finish before the test looked.
    void useEndlessModel();
    static constexpr std::int64_t kEndlessContext = 1 << 16;
    static constexpr std::int64_t kEndlessTokens = kEndlessContext - 64;

    std::filesystem::path modelPath;
    std::filesystem::path mmprojPath;  // empty: text only
    std::int64_t contextSize = 512;
    int maxSessions = 2;
    std::unique_ptr<OpenAiServer> server;
    int port = 0;

private:
    inference::testing::ScratchDir m_scratch{"iris_serve"};
};

// `text` as it arrives through JSON: the random byte-level model writes invalid UTF-8, which the
// server sends as U+FFFD (as every JSON encoder must).
std::string asJsonText(const std::string& text);

// The ChatML prompt of one user message under the Qwen2 template's default system message.
std::string qwenChatPrompt(const std::string& user);

}  // namespace iris::app::serve::testing
