#pragma once
// A ModelClient that answers with a recorded session's responses, in order: replays a session
// without a model, or continues a fork from the step where it diverges.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/clients/model_client.h"
#include "agent/recording/model_image_event.h"
#include "agent/recording/recording_types.h"

namespace iris::agent {

class ReplayClient final : public ModelClient {
public:
    // The responses of `recording`'s steps from `firstStep` on; steps whose model call failed
    // have none and are skipped.
    explicit ReplayClient(const SessionRecord& recording, int firstStep = 0);

    // The next recorded response, whatever `request` is. Streams its text to `onText` in one
    // piece; returning false there cancels. Past the end: OutOfRange.
    Result<ChatResponse> complete(const ChatRequest& request,
                                  const TextStream& onText = {}) override;
    void cancel() override {}  // complete() never blocks
    std::string describe() const override;
    // The image sizes the recorded session's model was shown (its ModelImageEvents).
    std::optional<inference::ImageSize> imageSizeFor(int width, int height) const override;

    std::size_t remaining() const { return m_responses.size() - m_next; }

private:
    std::int64_t m_session = 0;
    int m_firstStep = 0;
    std::vector<ChatResponse> m_responses;
    std::size_t m_next = 0;
    std::vector<ModelImageEvent> m_images;
};

// The recorded answers for the first `count` calls, then `live`: a session forked from a step.
class ForkClient final : public ModelClient {
public:
    ForkClient(const SessionRecord& recording, int count, std::unique_ptr<ModelClient> live);

    Result<ChatResponse> complete(const ChatRequest& request,
                                  const TextStream& onText = {}) override;
    void cancel() override { m_live->cancel(); }
    std::string describe() const override { return m_live->describe(); }
    // The recorded model's while its answers are replayed, then the live client's.
    std::optional<inference::ImageSize> imageSizeFor(int width, int height) const override {
        if (m_remaining > 0) {
            if (std::optional<inference::ImageSize> size = m_replay.imageSizeFor(width, height))
                return size;
        }
        return m_live->imageSizeFor(width, height);
    }
    std::vector<std::string> endpointsUsed() const override { return m_live->endpointsUsed(); }

private:
    ReplayClient m_replay;
    int m_remaining;
    std::unique_ptr<ModelClient> m_live;
};

}  // namespace iris::agent
