#include "app/session/demo_project.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "agent/image_codec.h"
#include "agent/recording/chat_json.h"
#include "app/session/data_paths.h"
#include "app/session/json_file.h"
#include "base/temporary_folder.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

// demonstration.json: {"instruction": ..., "responses": [ChatResponse JSON, ...]}.
Status readDemonstration(DemoProject& demo) {
    const std::string path = demo.demonstrationPath.string();
    Result<nlohmann::json> read =
        readJsonFile(demo.demonstrationPath, "cannot open the demonstration");
    if (!read) return read.status();
    const nlohmann::json& json = *read;
    if (!json.is_object()) return Status::corrupt(path + ": expected a JSON object");
    demo.instruction = json.value("instruction", "");
    const nlohmann::json responses = json.value("responses", nlohmann::json::array());
    for (std::size_t i = 0; i < responses.size(); ++i) {
        Result<agent::ChatResponse> response = agent::chatResponseFromJson(responses[i]);
        if (!response) {
            return Status::corrupt(path + ": responses[" + std::to_string(i) +
                                   "]: " + response.status().message());
        }
        agent::StepRecord step;
        step.index = int(i);
        step.response = std::move(*response);
        demo.demonstration.steps.push_back(std::move(step));
    }
    if (demo.instruction.empty() || demo.demonstration.steps.empty())
        return Status::corrupt(path + ": needs 'instruction' and 'responses'");
    return Status::ok();
}

Result<fs::path> copyProject(const std::optional<fs::path>& requested, const fs::path& project) {
    fs::path dir;
    std::error_code error;
    if (requested) {
        dir = *requested;
        if (fs::exists(dir, error) && !fs::is_empty(dir, error))
            return Status::invalidArgument(dir.string() + " is not empty");
        fs::create_directories(dir, error);
        if (error) return Status::ioError(dir.string() + ": " + error.message());
    } else {
        Result<fs::path> folder = makeTemporaryFolder("iris-demo");
        if (!folder) return folder.status();
        dir = *folder;
    }
    fs::copy(project, dir, fs::copy_options::recursive, error);
    if (error) {
        return Status::ioError("copying the sample project to " + dir.string() + ": " +
                               error.message());
    }
    return fs::canonical(dir);
}

}  // namespace

Result<DemoProject> prepareDemoProject(const std::optional<fs::path>& workdir) {
    const fs::path data = dataDirectory() / "demo";
    DemoProject demo;
    demo.targetPath = data / "target.png";
    demo.demonstrationPath = data / "demonstration.json";
    Result<cv::Mat> target = agent::readImageFile(demo.targetPath.string());
    IRIS_RETURN_IF_ERROR(target.status().withContext("(is IRIS_DATA_DIR right?) "));
    demo.target = std::move(*target);
    IRIS_RETURN_IF_ERROR(readDemonstration(demo));
    Result<fs::path> copy = copyProject(workdir, data / "project");
    IRIS_RETURN_IF_ERROR(copy.status());
    demo.workdir = std::move(*copy);
    return demo;
}

SessionPlan makeDemoPlan(const DemoProject& demo, int maxSteps) {
    SessionPlan plan;
    plan.environment.kind = EnvironmentSpec::Kind::WebProject;
    plan.environment.location = demo.workdir.string();
    plan.environment.width = demo.target.cols;
    plan.environment.height = demo.target.rows;
    plan.loop.instruction = demo.instruction;
    plan.loop.format = agent::ActionFormat::ToolCalls;
    plan.loop.browser = true;
    plan.loop.maxSteps = maxSteps;
    plan.loop.goal = agent::VisualGoal{demo.target, 0.99, 3};
    return plan;
}

}  // namespace iris::app
