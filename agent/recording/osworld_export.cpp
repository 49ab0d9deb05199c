#include "agent/recording/osworld_export.h"

#include "agent/recording/chat_json.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <system_error>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

namespace iris::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Python's datetime.strftime("%Y%m%d@%H%M%S%f") of a UTC time in microseconds.
std::string osworldTimestamp(std::int64_t microseconds) {
    const std::int64_t seconds = microseconds / 1'000'000;
    const auto fraction = static_cast<int>(microseconds % 1'000'000);
    const auto time = static_cast<std::time_t>(seconds);
    std::tm utc{};
    gmtime_r(&time, &utc);
    char text[32];
    const std::size_t length = std::strftime(text, sizeof text, "%Y%m%d@%H%M%S", &utc);
    char micro[8];
    std::snprintf(micro, sizeof micro, "%06d", fraction);
    return std::string(text, length) + micro;
}

Status writeFile(const fs::path& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return Status::ioError(path.string() + ": cannot write");
    return Status::ok();
}

Status writeFile(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
    return writeFile(path,
                     std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// The model's answer as OSWorld's "response": its text, or its tool calls when it only called
// tools.
std::string responseText(const StepRecord& step) {
    if (!step.response) return step.modelError;
    if (!step.response->text.empty() || step.response->toolCalls.empty()) {
        return step.response->text;
    }
    json calls = json::array();
    for (const ToolCall& call : step.response->toolCalls) {
        calls.push_back({{"name", call.name}, {"arguments", call.arguments}});
    }
    return toJsonText(calls);
}

Status writeVideo(const SessionRecord& session, const fs::path& file) {
    std::vector<cv::Mat> frames;
    for (const StepRecord& step : session.steps) {
        if (step.observationPng.empty()) continue;
        cv::Mat frame = cv::imdecode(step.observationPng, cv::IMREAD_COLOR);
        if (frame.empty()) {
            return Status::corrupt("step " + std::to_string(step.index) +
                                   ": the observation PNG does not decode");
        }
        frames.push_back(std::move(frame));
    }
    if (frames.empty()) return Status::ok();  // nothing was observed: no video

    // Encoders want even sizes; every frame takes the first one's.
    const cv::Size size(frames.front().cols & ~1, frames.front().rows & ~1);
    if (size.width == 0 || size.height == 0) {
        return Status::invalidArgument("the screenshots are too small for a video (" +
                                       std::to_string(frames.front().cols) + "x" +
                                       std::to_string(frames.front().rows) + ")");
    }
    cv::VideoWriter writer;
    try {
        writer.open(file.string(), cv::VideoWriter::fourcc('m', 'p', '4', 'v'), 1.0, size, true);
    } catch (const cv::Exception& e) {
        return Status::unsupported(file.string() +
                                   ": OpenCV cannot write an mp4v video: " + e.what());
    }
    if (!writer.isOpened()) {
        return Status::unsupported(file.string() +
                                   ": OpenCV cannot write an mp4v video (no "
                                   "video backend with that encoder)");
    }
    for (cv::Mat& frame : frames) {
        if (frame.size() != size) cv::resize(frame, frame, size, 0, 0, cv::INTER_AREA);
        writer.write(frame);
    }
    writer.release();
    std::error_code ec;
    if (fs::file_size(file, ec) == 0 || ec) {
        return Status::ioError(file.string() + ": the video writer produced no data");
    }
    return Status::ok();
}

}  // namespace

std::string pythonFloatRepr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char text[64];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
    std::string repr(text, ec == std::errc() ? end : text);
    if (repr.find_first_of(".e") == std::string::npos) repr += ".0";
    return repr;
}

Status exportOsworld(const SessionRecord& session, const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Status::ioError(dir.string() + ": cannot create the folder: " + ec.message());

    std::string trajectory;
    const bool ended = session.summary.status != SessionStatus::Running;
    for (std::size_t i = 0; i < session.steps.size(); ++i) {
        const StepRecord& step = session.steps[i];
        const StepRecord& after = i + 1 < session.steps.size() ? session.steps[i + 1] : step;
        const std::int64_t afterMs =
            after.startedAtMs != step.startedAtMs
                ? after.startedAtMs
                : step.startedAtMs +
                      static_cast<std::int64_t>(step.timings.captureMs + step.timings.encodeMs +
                                                step.timings.modelMs + step.timings.parseMs +
                                                step.timings.executeMs);
        const std::string response = responseText(step);
        for (std::size_t k = 0; k < step.actions.size(); ++k) {
            const Action& action = step.actions[k];
            // Microseconds apart, so that every action's screenshot has its own name.
            const std::string timestamp =
                osworldTimestamp(afterMs * 1000 + static_cast<std::int64_t>(k));
            const int stepNum = step.index + 1;
            std::string screenshot;
            if (!after.observationPng.empty()) {
                screenshot = "step_" + std::to_string(stepNum) + "_" + timestamp + ".png";
                IRIS_RETURN_IF_ERROR(writeFile(dir / screenshot, after.observationPng));
            }
            const bool last = i + 1 == session.steps.size() && k + 1 == step.actions.size();
            json info = json::object();
            if (std::holds_alternative<Done>(action)) info["done"] = true;
            if (std::holds_alternative<Fail>(action)) info["fail"] = true;
            const json line = {{"step_num", stepNum},
                               {"action_timestamp", timestamp},
                               {"action", actionToJson(action)},
                               {"response", response},
                               {"reward", 0},
                               {"done", endsEpisode(action) || (last && ended)},
                               {"info", std::move(info)},
                               {"screenshot_file", screenshot}};
            trajectory += toJsonText(line) + "\n";
        }
    }
    IRIS_RETURN_IF_ERROR(writeFile(dir / "traj.jsonl", trajectory));
    if (session.summary.score) {
        IRIS_RETURN_IF_ERROR(
            writeFile(dir / "result.txt", pythonFloatRepr(*session.summary.score) + "\n"));
    }
    return writeVideo(session, dir / "recording.mp4")
        .withContext("exported " + dir.string() + " but not the video: ");
}

}  // namespace iris::agent
