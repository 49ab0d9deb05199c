#include "agent/recording/osworld_export.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/videoio.hpp>

#include "tests/agent/recording/recording_fixtures.h"

namespace iris::agent {
namespace {

using namespace recording_test;  // NOLINT(google-build-using-namespace)
namespace fs = std::filesystem;

std::vector<nlohmann::json> readLines(const fs::path& file) {
    std::ifstream in(file);
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(in, line);)
        lines.push_back(nlohmann::json::parse(line));
    return lines;
}

SessionRecord finishedSession() {
    SessionRecord record;
    record.summary.id = 3;
    record.summary.status = SessionStatus::Done;
    record.summary.score = 0.5;
    record.steps = {makeStep(0), makeStep(1), makeStep(2, true)};
    record.steps[1].actions.clear();  // a step without actions leaves no line, as in OSWorld
    return record;
}

TEST(OsworldExport, WritesTrajectoryScreenshotsVideoAndResult) {
    const fs::path dir = freshDir("osworld_export") / "chrome" / "task-1";
    const SessionRecord session = finishedSession();
    const Status status = exportOsworld(session, dir);
    ASSERT_TRUE(status.isOk()) << status.message();

    const auto lines = readLines(dir / "traj.jsonl");
    ASSERT_EQ(lines.size(), 4u);  // two actions in step 0, none in step 1, two in step 2
    EXPECT_EQ(lines[0]["step_num"], 1);
    EXPECT_EQ(lines[1]["step_num"], 1);
    EXPECT_EQ(lines[2]["step_num"], 3);
    EXPECT_EQ(lines[0]["action"], actionToJson(session.steps[0].actions[0]));
    EXPECT_EQ(lines[0]["response"], session.steps[0].response->text);
    EXPECT_EQ(lines[0]["reward"], 0);
    EXPECT_EQ(lines[0]["done"], false);
    EXPECT_EQ(lines[0]["info"], nlohmann::json::object());
    EXPECT_EQ(lines[3]["action"]["type"], "done");
    EXPECT_EQ(lines[3]["done"], true);
    EXPECT_EQ(lines[3]["info"], (nlohmann::json{{"done", true}}));
    EXPECT_NE(lines[0]["action_timestamp"], lines[1]["action_timestamp"]);
    // 1'760'000'001'500 ms is 2025-10-09 08:53:21.5 UTC: step 0's actions show step 1's screen.
    EXPECT_EQ(lines[0]["action_timestamp"], "20251009@085321500000");
    EXPECT_EQ(lines[1]["action_timestamp"], "20251009@085321500001");

    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string name = lines[i]["screenshot_file"];
        EXPECT_EQ(name, "step_" + std::to_string(lines[i]["step_num"].get<int>()) + "_" +
                            lines[i]["action_timestamp"].get<std::string>() + ".png");
        const cv::Mat image = cv::imread((dir / name).string(), cv::IMREAD_COLOR);
        ASSERT_FALSE(image.empty()) << name;
        const int shown = i < 2 ? 1 : 2;  // the screen after the step: the next observation
        EXPECT_EQ(cv::norm(image, screenshot(shown), cv::NORM_INF), 0.0) << name;
    }

    EXPECT_EQ(readBytes(dir / "result.txt"), "0.5\n");

    const fs::path video = dir / "recording.mp4";
    ASSERT_TRUE(fs::exists(video));
    EXPECT_GT(fs::file_size(video), 0u);
    // The backend that could write mp4v reads it too.
    cv::VideoCapture capture(video.string());
    ASSERT_TRUE(capture.isOpened());
    EXPECT_EQ(capture.get(cv::CAP_PROP_FRAME_COUNT), 3.0);
    EXPECT_EQ(capture.get(cv::CAP_PROP_FRAME_WIDTH), 96.0);
    cv::Mat first;
    ASSERT_TRUE(capture.read(first));
    EXPECT_EQ(first.size(), cv::Size(96, 64));
}

TEST(OsworldExport, WritesNoResultForAnUnscoredSession) {
    const fs::path dir = freshDir("osworld_unscored");
    SessionRecord session = finishedSession();
    session.summary.score.reset();
    session.summary.status = SessionStatus::Running;
    session.steps.pop_back();
    ASSERT_TRUE(exportOsworld(session, dir).isOk());
    EXPECT_FALSE(fs::exists(dir / "result.txt"));
    const auto lines = readLines(dir / "traj.jsonl");
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[1]["done"], false);  // a running session has not ended
}

TEST(OsworldExport, MarksAFailActionAsOSWorldDoes) {
    const fs::path dir = freshDir("osworld_fail");
    SessionRecord session = finishedSession();
    session.steps.back().actions = {Fail{"cannot be done"}};
    session.summary.score = 1.0;
    ASSERT_TRUE(exportOsworld(session, dir).isOk());
    const auto lines = readLines(dir / "traj.jsonl");
    EXPECT_EQ(lines.back()["info"], (nlohmann::json{{"fail", true}}));
    EXPECT_EQ(lines.back()["done"], true);
    EXPECT_EQ(readBytes(dir / "result.txt"), "1.0\n");
}

TEST(OsworldExport, WritesScoresAsPythonDoes) {
    EXPECT_EQ(pythonFloatRepr(1.0), "1.0");
    EXPECT_EQ(pythonFloatRepr(0.0), "0.0");
    EXPECT_EQ(pythonFloatRepr(0.873), "0.873");
    EXPECT_EQ(pythonFloatRepr(1.0 / 3.0), "0.3333333333333333");
    EXPECT_EQ(pythonFloatRepr(1e-7), "1e-07");
}

}  // namespace
}  // namespace iris::agent
