#pragma once
// How a session records which image its model was shown for a screenshot size: the loop writes
// one event of this kind per new size, and a replay reads them back so that the recorded answers
// (in the model image's pixels) map onto the screen as they did when the session ran.
#include <optional>
#include <string_view>

#include "agent/recording/recording_types.h"
#include "inference/vision/image_preprocess.h"

namespace iris::agent {

struct ModelImageEvent {
    static constexpr std::string_view kKind = "model_image";
    int screenWidth = 0;
    int screenHeight = 0;
    inference::ImageSize image;

    // The event to record: `data` {"screen": {"width", "height"}, "image": {"width", "height"}}
    // for programs, and for people the message "the 1920x1080 screenshot is shown to the model
    // as 1932x1092".
    SessionEvent toEvent(std::optional<int> stepIndex) const;

    // The frame a recorded event of kind kKind describes, read from its data; an event without
    // data (recorded before events had any) is read from its message by
    // parseLegacyModelImageMessage. nullopt: another kind, or data of the wrong shape.
    static std::optional<ModelImageEvent> fromEvent(const SessionEvent& event);

    friend bool operator==(const ModelImageEvent&, const ModelImageEvent&) = default;
};

// Legacy: recordings made before session schema version 3 carry the frame only as the message
// sentence (see toEvent). Read for those alone, so that old sessions replay as they ran; nothing
// writes events that need it. nullopt: not that sentence.
std::optional<ModelImageEvent> parseLegacyModelImageMessage(std::string_view message);

}  // namespace iris::agent
