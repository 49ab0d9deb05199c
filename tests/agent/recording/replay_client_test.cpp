#include "agent/recording/replay_client.h"

#include <gtest/gtest.h>

#include "tests/agent/recording/recording_fixtures.h"

namespace iris::agent {
namespace {

using namespace recording_test;  // NOLINT(google-build-using-namespace)

SessionRecord recordedSession(int steps) {
    SessionRecord record;
    record.summary.id = 12;
    for (int i = 0; i < steps; ++i)
        record.steps.push_back(makeStep(i));
    return record;
}

TEST(ReplayClient, AnswersWithTheRecordedResponsesInOrder) {
    ReplayClient client(recordedSession(3));
    EXPECT_EQ(client.describe(), "replay 12");
    for (int i = 0; i < 3; ++i) {
        auto response = client.complete(ChatRequest{});
        ASSERT_TRUE(response) << response.status().message();
        EXPECT_EQ(response->text, makeStep(i).response->text);
        EXPECT_EQ(response->toolCalls[0].arguments, makeStep(i).response->toolCalls[0].arguments);
    }
    auto past = client.complete(ChatRequest{});
    ASSERT_FALSE(past);
    EXPECT_EQ(past.status().code(), StatusCode::OutOfRange);
    EXPECT_EQ(past.status().message(), "recording 12 has only 3 model calls; call 4 has no answer");
}

TEST(ReplayClient, SkipsStepsWhoseModelCallFailed) {
    SessionRecord record = recordedSession(7);
    record.steps[2].response.reset();
    ReplayClient client(record);
    EXPECT_EQ(client.remaining(), 6u);
    (void)client.complete({});
    (void)client.complete({});
    EXPECT_EQ(client.complete({})->text, makeStep(3).response->text);
}

TEST(ReplayClient, StartsAtAGivenStep) {
    ReplayClient client(recordedSession(5), 3);
    EXPECT_EQ(client.describe(), "replay 12 from step 3");
    EXPECT_EQ(client.complete({})->text, makeStep(3).response->text);
    EXPECT_EQ(client.complete({})->text, makeStep(4).response->text);
    EXPECT_EQ(client.complete({}).status().message(),
              "recording 12 has only 2 model calls from step 3 on; call 3 has no answer");
}

TEST(ReplayClient, StreamsTheTextAndHonoursCancellation) {
    ReplayClient client(recordedSession(2));
    std::string streamed;
    auto first = client.complete({}, [&](std::string_view delta) {
        streamed += delta;
        return true;
    });
    ASSERT_TRUE(first);
    EXPECT_EQ(streamed, makeStep(0).response->text);
    auto cancelled = client.complete({}, [](std::string_view) { return false; });
    EXPECT_EQ(cancelled.status().code(), StatusCode::Cancelled);
    // A cancelled call does not use up the answer.
    EXPECT_EQ(client.complete({})->text, makeStep(1).response->text);
}

}  // namespace
}  // namespace iris::agent
