#include "app/session/session_plan.h"

#include <utility>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "agent/image_codec.h"
#include "agent/prompt_builder.h"
#include "agent/recording/redactor.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

std::string projectUrl(const fs::path& folder) {
    std::string url = "file://" + folder.string();
    if (!url.ends_with('/')) url += '/';
    return url;
}

constexpr std::size_t kMaxSnapshotBytes = 4u << 20;

}  // namespace

std::string coordinateFrameText(const agent::CoordinateFrame& frame) {
    switch (frame.kind) {
        case agent::CoordinateFrame::Kind::ScreenshotPixels:
            return "pixels";
        case agent::CoordinateFrame::Kind::Relative1000:
            return "relative1000";
        case agent::CoordinateFrame::Kind::ModelImage:
            return "auto";
        case agent::CoordinateFrame::Kind::ResizedImage:
            break;
    }
    return "resized:" + std::to_string(frame.width) + "x" + std::to_string(frame.height);
}

agent::SessionStatus sessionStatusOf(agent::LoopEnd end) {
    switch (end) {
        case agent::LoopEnd::Done:
            return agent::SessionStatus::Done;
        case agent::LoopEnd::Failed:
            return agent::SessionStatus::Failed;
        case agent::LoopEnd::MaxSteps:
            return agent::SessionStatus::MaxSteps;
        case agent::LoopEnd::NoImprovement:
            return agent::SessionStatus::NoImprovement;
        case agent::LoopEnd::Stopped:
            return agent::SessionStatus::Stopped;
        case agent::LoopEnd::Error:
            break;
    }
    return agent::SessionStatus::Error;
}

nlohmann::json sessionConfig(const SessionPlan& plan, const agent::Workspace* workspace) {
    nlohmann::json config = {
        {"env", environmentText(plan.environment)},
        {"viewport",
         std::to_string(plan.environment.width) + "x" + std::to_string(plan.environment.height)},
        {"coords", coordinateFrameText(
                       plan.loop.frame.value_or(agent::defaultCoordinateFrame(plan.loop.format)))},
        {"max_steps", plan.loop.maxSteps},
        {"screenshots_in_history", plan.loop.screenshotsInHistory},
        {"runaway_limit", plan.loop.runawayLimit},
        {"sleep_after_execution_ms", plan.loop.pauseAfterActionsMs},
        {"browser", plan.loop.browser},
    };
    if (plan.loop.goal) {
        config["visual_goal"] = {{"good_enough", plan.loop.goal->goodEnough},
                                 {"patience", plan.loop.goal->patience}};
    }
    if (workspace) {
        // The project as it was before the agent touched it: replay starts from here.
        nlohmann::json files = nlohmann::json::object();
        std::size_t total = 0;
        Result<std::vector<agent::ProjectFile>> listing = workspace->snapshot();
        for (const agent::ProjectFile& file :
             listing ? *listing : std::vector<agent::ProjectFile>{}) {
            if (!file.text) continue;
            Result<std::string> content = workspace->readFile(file.path);
            if (!content || (total += content->size()) > kMaxSnapshotBytes) {
                config["project_files_incomplete"] = true;
                break;
            }
            files[file.path] = *content;
        }
        config["project_files"] = std::move(files);
    }
    return config;
}

Status restoreProjectFiles(const nlohmann::json& config, const fs::path& folder) {
    const auto files = config.find("project_files");
    if (files == config.end() || !files->is_object() ||
        config.value("project_files_incomplete", false))
        return Status::unsupported("the recording holds no complete copy of its web project");
    Result<agent::Workspace> workspace = agent::Workspace::open(folder);
    IRIS_RETURN_IF_ERROR(workspace.status());
    for (const auto& [path, content] : files->items()) {
        if (!content.is_string())
            return Status::corrupt("project_files." + path + ": expected a string");
        IRIS_RETURN_IF_ERROR(workspace->writeFile(path, content.get<std::string>()));
    }
    return Status::ok();
}

namespace {

// The visual goal's target mockup, as the recorded session sent it with its first request.
std::optional<cv::Mat> recordedTarget(const agent::SessionRecord& recording) {
    if (recording.steps.empty()) return std::nullopt;
    bool next = false;
    for (const agent::ChatMessage& message : recording.steps[0].request.messages) {
        for (const agent::ContentPart& part : message.content) {
            if (next && part.isImage()) {
                Result<cv::Mat> image = agent::decodeImage(part.image->bytes, "target");
                if (image) return *image;
            }
            next = !part.isImage() && part.text == agent::kTargetCaption;
        }
    }
    return std::nullopt;
}

}  // namespace

Result<SessionPlan> planFromRecording(const agent::SessionRecord& recording) {
    const nlohmann::json& config = recording.config;
    SessionPlan plan;
    const std::string env = config.value("env", "");
    // A web project is rebuilt from the recorded files, wherever the original folder went.
    Result<EnvironmentSpec> environment =
        env.starts_with("web:") ? Result<EnvironmentSpec>(EnvironmentSpec{
                                      EnvironmentSpec::Kind::WebProject, env.substr(4), 1280, 800})
                                : parseEnvironmentSpec(env);
    if (!environment)
        return Status::unsupported("the recording's environment '" + env +
                                   "' cannot be rebuilt: " + environment.status().message());
    plan.environment = *environment;
    if (Result<std::pair<int, int>> size = parseSize(config.value("viewport", "")); size) {
        plan.environment.width = size->first;
        plan.environment.height = size->second;
    }
    Result<agent::ActionFormat> format =
        agent::actionFormatFromName(recording.summary.actionFormat);
    IRIS_RETURN_IF_ERROR(format.status());
    plan.loop.format = *format;
    plan.loop.instruction = recording.summary.instruction;
    // Without "coords" (iris eval's recordings) the loop took the format's default frame.
    using FrameKind = agent::CoordinateFrame::Kind;
    const std::string coords = config.value("coords", "");
    if (coords == "pixels") {
        plan.loop.frame = agent::CoordinateFrame{FrameKind::ScreenshotPixels, 0, 0};
    } else if (coords == "relative1000") {
        plan.loop.frame = agent::CoordinateFrame{FrameKind::Relative1000, 0, 0};
    } else if (coords == "auto") {
        plan.loop.frame = agent::CoordinateFrame{FrameKind::ModelImage, 0, 0};
    } else if (coords.starts_with("resized:")) {
        Result<std::pair<int, int>> size = parseSize(coords.substr(8));
        IRIS_RETURN_IF_ERROR(size.status());
        plan.loop.frame =
            agent::CoordinateFrame{FrameKind::ResizedImage, size->first, size->second};
    }
    plan.loop.maxSteps = config.value("max_steps", 15);
    plan.loop.screenshotsInHistory = config.value("screenshots_in_history", 3);
    // Absent: recorded before runaway loops ended a run, so a replay never ends one either.
    plan.loop.runawayLimit = config.value("runaway_limit", 0);
    plan.loop.pauseAfterActionsMs = config.value("sleep_after_execution_ms", 0.0);
    plan.loop.browser = config.value("browser", false);
    if (const auto goal = config.find("visual_goal"); goal != config.end()) {
        std::optional<cv::Mat> target = recordedTarget(recording);
        if (!target)
            return Status::corrupt(
                "the recording's target mockup is missing from its first request");
        plan.loop.goal = agent::VisualGoal{*target, goal->value("good_enough", 0.99),
                                           goal->value("patience", 3)};
    }
    return plan;
}

Result<PreparedSession> prepareSession(const SessionPlan& plan) {
    PreparedSession prepared;
    Result<std::unique_ptr<agent::Environment>> environment = makeEnvironment(plan.environment);
    IRIS_RETURN_IF_ERROR(environment.status());
    prepared.environment = std::move(*environment);
    if (Status reset = prepared.environment->reset(); !reset.isOk())
        return reset.withContext(prepared.environment->describe() + ": ");

    prepared.safety.desktop = plan.environment.kind == EnvironmentSpec::Kind::Desktop ||
                              plan.environment.kind == EnvironmentSpec::Kind::PrivateDesktop;
    prepared.safety.shellAllowed = plan.allowShell;
    prepared.safety.secrets = agent::Redactor::fromEnvironment().secrets();
    if (plan.environment.kind == EnvironmentSpec::Kind::WebProject) {
        Result<agent::Workspace> workspace = agent::Workspace::open(plan.environment.location);
        IRIS_RETURN_IF_ERROR(workspace.status());
        prepared.workspace.emplace(std::move(*workspace));
        prepared.safety.fileActionsAllowed = true;
        prepared.safety.projectUrl = projectUrl(prepared.workspace->root());
    }
    return prepared;
}

}  // namespace iris::app
