#include "agent/agent_loop.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "agent/image_codec.h"
#include "tests/agent/loop/fake_environment.h"
#include "tests/inference/models/scratch_dir.h"

namespace iris::agent {
namespace {

using testing::FakeEnvironment;
using testing::MemoryRecorder;
using testing::ScriptedClient;
using testing::toolCall;

namespace fs = std::filesystem;

LoopOptions toolOptions(int maxSteps = 10) {
    LoopOptions options;
    options.instruction = "test task";
    options.format = ActionFormat::ToolCalls;
    options.maxSteps = maxSteps;
    return options;
}

// `scratch` made a project folder holding color.txt = "b g r".
fs::path makeProject(const inference::testing::ScratchDir& scratch, const std::string& colour) {
    std::ofstream(scratch.path() / "color.txt") << colour;
    return scratch.path();
}

std::string readText(const fs::path& path) {
    std::ifstream file(path);
    return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

TEST(AgentLoop, ExecutesActionsAndEndsWhenTheModelSaysDone) {
    FakeEnvironment environment;
    ScriptedClient client({toolCall("click", R"({"x": 10, "y": 20})"),
                           toolCall("done", R"({"message": "clicked it"})")});
    MemoryRecorder recorder;
    AgentLoop loop(environment, client, SafetyPolicy({}), nullptr, &recorder, toolOptions());
    int reports = 0;
    const LoopResult result = loop.run([&](const StepReport&) { ++reports; });

    EXPECT_EQ(result.end, LoopEnd::Done) << result.message;
    EXPECT_EQ(result.steps, 2);
    EXPECT_EQ(result.message, "clicked it");
    EXPECT_EQ(reports, 2);
    ASSERT_EQ(environment.executed.size(), 1u);
    EXPECT_EQ(environment.executed[0], Action(Click{Point{10, 20}, MouseButton::Left, 1}));
    ASSERT_EQ(recorder.steps.size(), 2u);
    Result<cv::Mat> recorded = decodeImage(recorder.steps[0].observationPng, "step 0");
    ASSERT_TRUE(recorded) << recorded.status().message();
    EXPECT_EQ(recorded->cols, 64);
    EXPECT_EQ(recorded->rows, 48);
    EXPECT_EQ(recorder.steps[0].actions.size(), 1u);
    EXPECT_EQ(recorder.steps[1].index, 1);
}

TEST(AgentLoop, KeepsTheStepWhoseActionsRanWhenTheScreenIsGoneAfterThem) {
    FakeEnvironment environment;
    environment.failObservationsAfter = 1;  // the screen goes after the first step's actions
    ScriptedClient client({toolCall("click", R"({"x": 10, "y": 20})")});
    MemoryRecorder recorder;
    AgentLoop loop(environment, client, SafetyPolicy({}), nullptr, &recorder, toolOptions());
    const LoopResult result = loop.run();

    EXPECT_EQ(result.end, LoopEnd::Error);
    EXPECT_NE(result.message.find("output FAKE-1 is gone"), std::string::npos) << result.message;
    EXPECT_EQ(environment.executed.size(), 1u);
    ASSERT_EQ(recorder.steps.size(), 1u);  // the click and its answer are recorded
    EXPECT_EQ(recorder.steps[0].actions.size(), 1u);
    EXPECT_TRUE(recorder.steps[0].response.has_value());
}

TEST(AgentLoop, FeedsAnUnparseableAnswerBackToTheModelAndGoesOn) {
    FakeEnvironment environment;
    ScriptedClient client({"I think I should click somewhere.",
                           "<tool_call>{\"name\": \"click\", \"arguments\": {\"x\": }</tool_call>",
                           toolCall("done", "{}")});
    AgentLoop loop(environment, client, SafetyPolicy({}), nullptr, nullptr, toolOptions());
    const LoopResult result = loop.run();
    EXPECT_EQ(result.end, LoopEnd::Done) << result.message;
    ASSERT_EQ(client.requests.size(), 3u);
    EXPECT_NE(testing::lastUserText(client.requests[1]).find("no action"), std::string::npos)
        << testing::lastUserText(client.requests[1]);
    EXPECT_NE(testing::lastUserText(client.requests[2]).find("Could not parse"), std::string::npos)
        << testing::lastUserText(client.requests[2]);
    EXPECT_TRUE(environment.executed.empty());
}

TEST(AgentLoop, RunsNothingOfAnAnswerThatOnlyPartlyParses) {
    FakeEnvironment environment;
    ScriptedClient client({toolCall("click", R"({"x": 5, "y": 5})") +
                               toolCall("type_text", R"({"txt": "no such field"})"),
                           toolCall("done", "{}")});
    AgentLoop loop(environment, client, SafetyPolicy({}), nullptr, nullptr, toolOptions());
    const LoopResult result = loop.run();
    EXPECT_EQ(result.end, LoopEnd::Done);
    EXPECT_TRUE(environment.executed.empty());
    EXPECT_NE(testing::lastUserText(client.requests[1]).find("Nothing was executed"),
              std::string::npos);
}

TEST(AgentLoop, StopsAtTheStepLimit) {
    FakeEnvironment environment;
    ScriptedClient client({toolCall("click", R"({"x": 1, "y": 1})")});
    AgentLoop loop(environment, client, SafetyPolicy({}), nullptr, nullptr, toolOptions(3));
    const LoopResult result = loop.run();
    EXPECT_EQ(result.end, LoopEnd::MaxSteps);
    EXPECT_EQ(result.steps, 3);
    EXPECT_EQ(environment.executed.size(), 3u);
}

// The same click on a screen that never changes: the run ends at the limit-th repeat, says what
// was repeated and records it; with the limit off it runs to its step limit.
TEST(AgentLoop, EndsARunawayLoopOfTheSameActionOnAnUnchangedScreen) {
    FakeEnvironment environment;
    ScriptedClient client({toolCall("click", R"({"x": 1, "y": 1})")});
    MemoryRecorder recorder;
    LoopOptions options = toolOptions(10);
    options.runawayLimit = 4;
    AgentLoop loop(environment, client, SafetyPolicy({}), nullptr, &recorder, options);
    const LoopResult result = loop.run();
    EXPECT_EQ(result.end, LoopEnd::Stopped);
    EXPECT_EQ(result.steps, 4);
    EXPECT_EQ(environment.executed.size(), 4u);
    EXPECT_NE(result.runaway.find("repeated 4 times on an unchanged screen"), std::string::npos)
        << result.runaway;
    EXPECT_EQ(result.message, "runaway loop: " + result.runaway);
    ASSERT_FALSE(recorder.events.empty());
    EXPECT_EQ(recorder.events.back().kind, "stop");

    FakeEnvironment again;
    options.runawayLimit = 0;
    AgentLoop unlimited(again, client, SafetyPolicy({}), nullptr, nullptr, options);
    const LoopResult toTheEnd = unlimited.run();
    EXPECT_EQ(toTheEnd.end, LoopEnd::MaxSteps);
    EXPECT_EQ(toTheEnd.steps, 10);
    EXPECT_TRUE(toTheEnd.runaway.empty());
}

TEST(AgentLoop, AStopRequestHaltsTheStepInFlight) {
    FakeEnvironment environment;
    ScriptedClient client({toolCall("click", R"({"x": 1, "y": 1})")});
    client.blockUntilCancelled = true;
    MemoryRecorder recorder;
    AgentLoop loop(environment, client, SafetyPolicy({}), nullptr, &recorder, toolOptions());
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        loop.requestStop();
    });
    const LoopResult result = loop.run();
    stopper.join();
    EXPECT_EQ(result.end, LoopEnd::Stopped);
    EXPECT_EQ(result.steps, 1);
    EXPECT_TRUE(environment.executed.empty());
    ASSERT_EQ(recorder.steps.size(), 1u);  // the interrupted step is kept, with why
    EXPECT_FALSE(recorder.steps[0].modelError.empty());
}

TEST(AgentLoop, WaitsWhilePausedAndLooksAgainOnResume) {
    FakeEnvironment environment;
    ScriptedClient client({toolCall("click", R"({"x": 1, "y": 1})"), toolCall("done", "{}")});
    AgentLoop loop(environment, client, SafetyPolicy({}), nullptr, nullptr, toolOptions());
    loop.setPaused(true);
    std::thread resumer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(80));
        EXPECT_TRUE(client.requests.empty()) << "the loop asked the model while paused";
        loop.setPaused(false);
    });
    const LoopResult result = loop.run();
    resumer.join();
    EXPECT_EQ(result.end, LoopEnd::Done);
    EXPECT_EQ(environment.observations, 4);  // start, after resuming, after each of 2 steps
}

TEST(AgentLoop, AStopRequestEndsAPause) {
    FakeEnvironment environment;
    ScriptedClient client({toolCall("done", "{}")});
    AgentLoop loop(environment, client, SafetyPolicy({}), nullptr, nullptr, toolOptions());
    loop.setPaused(true);
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        loop.requestStop();
    });
    const LoopResult result = loop.run();
    stopper.join();
    EXPECT_EQ(result.end, LoopEnd::Stopped);
    EXPECT_TRUE(client.requests.empty());
}

TEST(AgentLoop, AsksConsentForEveryActionWhenConfigured) {
    FakeEnvironment environment;
    ScriptedClient client(
        {toolCall("click", R"({"x": 1, "y": 1})") + toolCall("click", R"({"x": 2, "y": 2})"),
         toolCall("done", "{}")});
    SafetyOptions safety;
    safety.confirmEveryAction = true;
    AgentLoop loop(environment, client, SafetyPolicy(safety), nullptr, nullptr, toolOptions());
    int asked = 0;
    loop.setConsentAsker([&](const Action& action, const std::string&) {
        ++asked;
        return std::get<Click>(action).at->x == 2;  // refuse the first, allow the second
    });
    EXPECT_EQ(loop.run().end, LoopEnd::Done);
    EXPECT_EQ(asked, 2);
    ASSERT_EQ(environment.executed.size(), 1u);
    EXPECT_EQ(std::get<Click>(environment.executed[0]).at->x, 2);
}

TEST(AgentLoop, RefusesFileActionsWithoutAWorkspaceAndTypingSecrets) {
    FakeEnvironment environment;
    ScriptedClient client({toolCall("write_file", R"({"path": "a.txt", "content": "x"})") +
                               toolCall("type_text", R"({"text": "key: sk-test-0123456789"})"),
                           toolCall("done", "{}")});
    SafetyOptions safety;
    safety.secrets = {"sk-test-0123456789"};
    MemoryRecorder recorder;
    AgentLoop loop(environment, client, SafetyPolicy(safety), nullptr, &recorder, toolOptions());
    const LoopResult result = loop.run();
    EXPECT_EQ(result.end, LoopEnd::Done);
    EXPECT_TRUE(environment.executed.empty());
    ASSERT_EQ(recorder.steps[0].results.size(), 2u);
    EXPECT_FALSE(recorder.steps[0].results[0].ok);
    EXPECT_FALSE(recorder.steps[0].results[1].ok);
    const std::string feedback = testing::lastUserText(client.requests[1]);
    EXPECT_NE(feedback.find("refused"), std::string::npos) << feedback;
}

TEST(AgentLoop, KeepsEditsThatImproveTheRenderAndRevertsOnesThatDoNot) {
    const inference::testing::ScratchDir scratch("iris_loop_test_improve");
    const fs::path project = makeProject(scratch, "0 0 0");
    Result<Workspace> workspace = Workspace::open(project);
    ASSERT_TRUE(workspace) << workspace.status().message();
    FakeEnvironment environment(project);
    ScriptedClient client({
        toolCall("write_file", R"({"path": "color.txt", "content": "100 50 25"})"),
        toolCall("write_file", R"({"path": "color.txt", "content": "5 5 5"})"),  // worse
        toolCall("write_file", R"({"path": "color.txt", "content": "200 100 50"})"),
        toolCall("click", R"({"x": 1, "y": 1})"),
    });
    MemoryRecorder recorder;
    LoopOptions options = toolOptions();
    options.goal = VisualGoal{cv::Mat(48, 64, CV_8UC3, cv::Scalar(200, 100, 50)), 0.99, 3};
    SafetyOptions safety;
    safety.fileActionsAllowed = true;
    AgentLoop loop(environment, client, SafetyPolicy(safety), &*workspace, &recorder, options);
    std::vector<std::string> afterEachStep;
    const LoopResult result = loop.run(
        [&](const StepReport&) { afterEachStep.push_back(readText(project / "color.txt")); });

    EXPECT_EQ(result.end, LoopEnd::Done) << result.message;
    EXPECT_EQ(result.steps, 3);
    ASSERT_TRUE(result.score);
    EXPECT_GE(*result.score, 0.99);
    ASSERT_EQ(afterEachStep.size(), 3u);
    EXPECT_EQ(afterEachStep[0], "100 50 25");
    EXPECT_EQ(afterEachStep[1], "100 50 25");  // the worse edit was reverted
    EXPECT_EQ(afterEachStep[2], "200 100 50");
    bool reverted = false;
    for (const SessionEvent& event : recorder.events)
        reverted |= event.kind == "revert";
    EXPECT_TRUE(reverted);
    for (const SessionEvent& event : recorder.events) {
        if (event.kind != "revert") continue;
        // The verdict as data: the score fell, and the kept edit's revision was restored.
        const nlohmann::json& score = event.data.at("score");
        EXPECT_GT(score.at("from").get<double>(), score.at("to").get<double>());
        ASSERT_FALSE(recorder.steps[0].edits.empty());
        EXPECT_EQ(event.data.at("restored_revision"), recorder.steps[0].edits[0].revision);
    }
    EXPECT_NE(testing::lastUserText(client.requests[2]).find("reverted"), std::string::npos);
    EXPECT_FALSE(recorder.steps[0].edits.empty());
    EXPECT_NE(recorder.steps[0].edits[0].diff.find("+100 50 25"), std::string::npos)
        << recorder.steps[0].edits[0].diff;
}

TEST(AgentLoop, GivesUpAfterEditsInARowThatDoNotImprove) {
    const inference::testing::ScratchDir scratch("iris_loop_test_patience");
    const fs::path project = makeProject(scratch, "200 100 40");
    Result<Workspace> workspace = Workspace::open(project);
    ASSERT_TRUE(workspace);
    FakeEnvironment environment(project);
    ScriptedClient client({toolCall("write_file", R"({"path": "color.txt", "content": "0 0 0"})"),
                           toolCall("write_file", R"({"path": "color.txt", "content": "9 9 9"})")});
    LoopOptions options = toolOptions();
    options.goal = VisualGoal{cv::Mat(48, 64, CV_8UC3, cv::Scalar(200, 100, 50)), 0.999, 2};
    SafetyOptions safety;
    safety.fileActionsAllowed = true;
    AgentLoop loop(environment, client, SafetyPolicy(safety), &*workspace, nullptr, options);
    const LoopResult result = loop.run();
    EXPECT_EQ(result.end, LoopEnd::NoImprovement) << result.message;
    EXPECT_EQ(result.steps, 2);
    EXPECT_EQ(readText(project / "color.txt"), "200 100 40");
}

}  // namespace
}  // namespace iris::agent
