#pragma once
// A ModelClient that answers with Iris's own inference engine, in process. It keeps one engine
// session, so each turn of a conversation computes only the tokens after the prefix it shares
// with the previous request (the agent's history grows at the end).
#include <atomic>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agent/clients/model_client.h"
#include "inference/engine.h"

namespace iris::agent {

struct LocalEngineSettings {
    // Sampling beyond what a ChatRequest says (temperature, top-p and seed come from it).
    inference::SamplingParams sampling;
};

// Like the Engine it owns, not thread-safe: one thread calls complete(); cancel() may come from
// any thread and takes effect at the next generated token.
class LocalEngineClient final : public ModelClient {
public:
    // Loads the model file (errors name it) and opens the client's session.
    static Result<std::unique_ptr<LocalEngineClient>> open(const std::filesystem::path& modelPath,
                                                           const inference::EngineOptions& options,
                                                           LocalEngineSettings settings = {});
    // Takes a loaded engine; `name` is what describe() and ChatResponse::model report.
    static Result<std::unique_ptr<LocalEngineClient>> create(
        std::unique_ptr<inference::Engine> engine, std::string name,
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

    // The prompt tokens the last complete() took from the previous turn's cache, and the images
    // it sent through the vision tower (the others were cached by content).
    std::int64_t lastReusedTokens() const { return m_lastReused; }
    int lastImagesEncoded() const { return m_lastImagesEncoded; }
    inference::Engine& engine() { return *m_engine; }

private:
    Result<std::vector<std::shared_ptr<const inference::ImagePatches>>> prepareImages(
        const std::vector<std::shared_ptr<const EncodedImage>>& images);

    LocalEngineClient(std::unique_ptr<inference::Engine> engine,
                      std::unique_ptr<inference::Session> session, std::string name,
                      LocalEngineSettings settings);

    // Declared in this order so that the session goes before the engine it refers to.
    std::unique_ptr<inference::Engine> m_engine;
    std::unique_ptr<inference::Session> m_session;
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
