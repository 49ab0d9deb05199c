#pragma once
// A ModelClient that answers with Iris's own inference engine, in process, through the serving
// engine (inference::Scheduler). Several clients may share one scheduler, so one copy of the
// weights serves an agent session, an evaluation's parallel tasks and the GUI at once; each
// turn computes only the prompt tokens after the longest prefix the scheduler's prefix cache
// already holds (the agent's history grows at the end, so that is usually the previous turn).
#include <atomic>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agent/clients/model_client.h"
#include "inference/engine.h"
#include "inference/scheduler.h"

namespace iris::agent {

struct LocalEngineSettings {
    // Sampling beyond what a ChatRequest says (temperature, top-p and seed come from it).
    inference::SamplingParams sampling;
};

// One thread calls complete() on a client (clients sharing a scheduler may each be driven by
// their own thread at once); cancel() may come from any thread and takes effect at the
// scheduler's next step.
class LocalEngineClient final : public ModelClient {
public:
    // Loads the model file (errors name it) and starts a scheduler of its own for this client.
    static Result<std::unique_ptr<LocalEngineClient>> open(const std::filesystem::path& modelPath,
                                                           const inference::EngineOptions& options,
                                                           LocalEngineSettings settings = {});
    // Takes a loaded engine (with no open Session) and starts a scheduler of its own on it;
    // `name` is what describe() and ChatResponse::model report.
    static Result<std::unique_ptr<LocalEngineClient>> create(
        std::unique_ptr<inference::Engine> engine, std::string name,
        LocalEngineSettings settings = {});
    // A client of a running scheduler that other clients may share; the client keeps it alive.
    static std::unique_ptr<LocalEngineClient> attach(
        std::shared_ptr<inference::Scheduler> scheduler, std::string name,
        LocalEngineSettings settings = {});
    ~LocalEngineClient() override;

    // Images go to the engine's vision tower in message order, each where the chat template puts
    // its placeholder. Unsupported for images when the engine has no projector (--mmproj);
    // InvalidArgument for an undecodable image, a tool schema or tool-call arguments that are not
    // JSON objects; OutOfRange when the prompt does not fit in the context; Cancelled.
    Result<ChatResponse> complete(const ChatRequest& request,
                                  const TextStream& onText = {}) override;
    void cancel() override;
    std::string describe() const override;
    // With a vision tower: smartResize with the engine's image options (its pixel budget and the
    // tower's patch and merge sizes), as complete() preprocesses screenshots. nullopt without one
    // or for a size the resize refuses.
    std::optional<inference::ImageSize> imageSizeFor(int width, int height) const override;

    // The prompt tokens of the last complete() whose K/V came from the prefix cache (an earlier
    // turn's, this client's or another's), and the images it sent through the vision tower (the
    // others were cached by content).
    std::int64_t lastReusedTokens() const { return m_lastReused; }
    int lastImagesEncoded() const { return m_lastImagesEncoded; }
    // The loaded model's const parts (tokenizer, chat template, options), safe from any thread.
    const inference::Engine& engine() const { return m_scheduler->engine(); }
    const std::shared_ptr<inference::Scheduler>& scheduler() const { return m_scheduler; }

private:
    Result<std::vector<std::shared_ptr<const inference::ImagePatches>>> prepareImages(
        const std::vector<std::shared_ptr<const EncodedImage>>& images);

    LocalEngineClient(std::shared_ptr<inference::Scheduler> scheduler, std::string name,
                      LocalEngineSettings settings);

    std::shared_ptr<inference::Scheduler> m_scheduler;
    std::string m_name;
    LocalEngineSettings m_settings;
    std::int64_t m_lastReused = 0;
    int m_lastImagesEncoded = 0;
    std::atomic<bool> m_cancelled{false};
    // Preprocessed images by the EncodedImage they came from: a conversation's history holds the
    // same screenshot objects turn after turn, so each is decoded and resized once.
    struct PreparedImage {
        std::weak_ptr<const EncodedImage> source;
        std::shared_ptr<const inference::ImagePatches> patches;
    };
    std::vector<PreparedImage> m_prepared;
};

// The engine's prompt for `request`: the messages and tools rendered with the model's chat
// template, with the generation prompt. Exposed so that tests and tools can see what is sent.
Result<std::string> renderPrompt(const inference::ChatTemplate& chatTemplate,
                                 const ChatRequest& request);

// The engine's request for `request` (prompt and images only): the rendered prompt tokenised with
// special tokens recognised, and `images` (request's images prepared by the engine, in message
// order) where the template put their placeholders. Unsupported when the vocabulary has no
// placeholder token; InvalidArgument when the counts differ.
Result<inference::GenerateRequest> promptRequest(
    const inference::Engine& engine, const ChatRequest& request,
    std::span<const std::shared_ptr<const inference::ImagePatches>> images);

}  // namespace iris::agent
