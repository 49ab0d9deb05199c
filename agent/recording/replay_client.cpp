#include "agent/recording/replay_client.h"

namespace iris::agent {

ReplayClient::ReplayClient(const SessionRecord& recording, int firstStep)
    : m_session(recording.summary.id), m_firstStep(firstStep) {
    for (const StepRecord& step : recording.steps) {
        if (step.index >= firstStep && step.response) m_responses.push_back(*step.response);
    }
    for (const SessionEvent& event : recording.events) {
        if (std::optional<ModelImageEvent> image = ModelImageEvent::fromEvent(event))
            m_images.push_back(*image);
    }
}

std::optional<inference::ImageSize> ReplayClient::imageSizeFor(int width, int height) const {
    for (const ModelImageEvent& event : m_images) {
        if (event.screenWidth == width && event.screenHeight == height) return event.image;
    }
    return std::nullopt;
}

Result<ChatResponse> ReplayClient::complete(const ChatRequest& /*request*/,
                                            const TextStream& onText) {
    if (m_next >= m_responses.size()) {
        std::string message = "recording " + std::to_string(m_session) + " has only " +
                              std::to_string(m_responses.size()) + " model calls";
        if (m_firstStep > 0) message += " from step " + std::to_string(m_firstStep) + " on";
        return Status::outOfRange(message + "; call " + std::to_string(m_next + 1) +
                                  " has no answer");
    }
    const ChatResponse& response = m_responses[m_next];
    if (onText && !response.text.empty() && !onText(response.text)) {
        return Status::cancelled("replay of recording " + std::to_string(m_session) + " cancelled");
    }
    ++m_next;
    return response;
}

std::string ReplayClient::describe() const {
    std::string text = "replay " + std::to_string(m_session);
    if (m_firstStep > 0) text += " from step " + std::to_string(m_firstStep);
    return text;
}

ForkClient::ForkClient(const SessionRecord& recording, int count, std::unique_ptr<ModelClient> live)
    : m_replay(recording), m_remaining(count), m_live(std::move(live)) {}

Result<ChatResponse> ForkClient::complete(const ChatRequest& request, const TextStream& onText) {
    if (m_remaining > 0) {
        --m_remaining;
        return m_replay.complete(request, onText);
    }
    return m_live->complete(request, onText);
}

}  // namespace iris::agent
