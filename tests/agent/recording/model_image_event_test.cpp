// The model-image frame as a session records it: typed data for programs, a sentence for people,
// and for recordings made before events had data, the sentence read back by one legacy reader.
#include "agent/recording/model_image_event.h"

#include <gtest/gtest.h>

#include "agent/recording/replay_client.h"

namespace iris::agent {
namespace {

const ModelImageEvent kFrame{1920, 1080, {1932, 1092}};

TEST(ModelImageEvent, IsRecordedAsDataWithASentenceForPeople) {
    const SessionEvent event = kFrame.toEvent(3);
    EXPECT_EQ(event.stepIndex, 3);
    EXPECT_EQ(event.kind, ModelImageEvent::kKind);
    EXPECT_EQ(event.message, "the 1920x1080 screenshot is shown to the model as 1932x1092");
    EXPECT_EQ(event.data, nlohmann::json::parse(R"({"screen": {"width": 1920, "height": 1080},
                                                    "image": {"width": 1932, "height": 1092}})"));
}

TEST(ModelImageEvent, IsReadFromItsDataNotItsMessage) {
    SessionEvent event = kFrame.toEvent(0);
    event.message = "the 800x600 screenshot is shown to the model as 812x588";
    EXPECT_EQ(ModelImageEvent::fromEvent(event), kFrame);
}

TEST(ModelImageEvent, AnEventWithoutDataIsReadFromTheLegacySentence) {
    const SessionEvent legacy(0, 0, std::string(ModelImageEvent::kKind),
                              "the 1920x1080 screenshot is shown to the model as 1932x1092");
    EXPECT_EQ(ModelImageEvent::fromEvent(legacy), kFrame);
    EXPECT_EQ(parseLegacyModelImageMessage(legacy.message), kFrame);
}

TEST(ModelImageEvent, RefusesOtherKindsAndMalformedFrames) {
    SessionEvent other = kFrame.toEvent(0);
    other.kind = "info";
    EXPECT_FALSE(ModelImageEvent::fromEvent(other));

    SessionEvent noImage = kFrame.toEvent(0);
    noImage.data.erase("image");
    EXPECT_FALSE(ModelImageEvent::fromEvent(noImage));
    SessionEvent textWidth = kFrame.toEvent(0);
    textWidth.data["screen"]["width"] = "1920";
    EXPECT_FALSE(ModelImageEvent::fromEvent(textWidth));
    SessionEvent notAnObject = kFrame.toEvent(0);
    notAnObject.data = nlohmann::json::array({1920, 1080});
    EXPECT_FALSE(ModelImageEvent::fromEvent(notAnObject));

    for (const char* message :
         {"", "the 1920x1080 screenshot", "the 1920x1080 screenshot is shown to the model as 1932",
          "the 1920x1080 screenshot is shown to the model as 1932x1092 (resized)",
          "the 1920 by 1080 screenshot is shown to the model as 1932x1092"}) {
        EXPECT_FALSE(parseLegacyModelImageMessage(message)) << message;
    }
}

TEST(ModelImageEvent, AReplayReadsRecordingsFromBeforeAndAfterTheData) {
    SessionRecord recording;
    recording.events.emplace_back(0, 0, std::string(ModelImageEvent::kKind),
                                  "the 1920x1080 screenshot is shown to the model as 1932x1092");
    recording.events.push_back(ModelImageEvent{1280, 800, {1288, 812}}.toEvent(1));
    recording.events.emplace_back(1, 0, "info",
                                  "the 640x480 screenshot is shown to the model as 644x476");
    const ReplayClient replay(recording);
    EXPECT_EQ(replay.imageSizeFor(1920, 1080), (inference::ImageSize{1932, 1092}));
    EXPECT_EQ(replay.imageSizeFor(1280, 800), (inference::ImageSize{1288, 812}));
    EXPECT_EQ(replay.imageSizeFor(640, 480), std::nullopt);
}

}  // namespace
}  // namespace iris::agent
