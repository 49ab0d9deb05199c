#include "app/session/live_demo.h"

#include "agent/actions/action_format.h"
#include "agent/eval/task.h"
#include "app/session/data_paths.h"
#include "inference/chat_template.h"

namespace iris::app {

namespace fs = std::filesystem;

fs::path liveDemoTaskFolder() {
    return dataDirectory() / "tasks" / "examples" / "synthetic-grounding";
}

Result<LiveDemo> prepareLiveDemo(const std::string& task) {
    LiveDemo demo;
    demo.tasks = task == "all" ? liveDemoTaskFolder() : liveDemoTaskFolder() / (task + ".json");
    std::error_code error;
    if (!fs::exists(demo.tasks, error)) {
        return Status::notFound(demo.tasks.string() + ": no such bundled task (the names are the " +
                                ".json files of " + liveDemoTaskFolder().string() + ", or all)");
    }
    const fs::path modelsFolder = dataDirectory() / "models";
    Result<models::Catalogue> catalogue = models::loadCatalogue(modelsFolder / "catalogue.json");
    IRIS_RETURN_IF_ERROR(catalogue.status());
    const models::CatalogueEntry* entry = catalogue->find(kBundledModelName);
    if (!entry || !entry->bundled)
        return Status::notFound(modelsFolder.string() + "/catalogue.json: no bundled model '" +
                                kBundledModelName + "'");
    Result<models::BundledFiles> files = models::bundledModelFiles(*entry, modelsFolder);
    IRIS_RETURN_IF_ERROR(files.status());
    demo.entry = *entry;
    demo.model.backend = ModelChoice::Backend::LocalEngine;
    demo.model.modelPath = files->model;
    demo.model.mmprojPath = files->mmproj;
    demo.model.imageMaxPixels = entry->maxPixels;
    demo.model.chatTemplate = inference::chatTemplateKindFromName(entry->chatTemplate);
    return demo;
}

Result<SessionPlan> makeLiveDemoPlan(const LiveDemo& demo) {
    Result<agent::eval::Task> task = agent::eval::loadTask(demo.tasks);
    IRIS_RETURN_IF_ERROR(task.status());
    Result<agent::ActionFormat> format = agent::actionFormatFromName(demo.entry.actionFormat);
    IRIS_RETURN_IF_ERROR(format.status());
    const fs::path page = demo.tasks.parent_path() / task->iris.project / task->iris.startPage;
    SessionPlan plan;
    plan.environment = {EnvironmentSpec::Kind::Url, "file://" + fs::absolute(page).string(),
                        task->iris.viewportWidth, task->iris.viewportHeight};
    plan.loop.instruction = task->instruction;
    plan.loop.format = *format;
    plan.loop.browser = true;
    if (demo.entry.history > 0) plan.loop.screenshotsInHistory = demo.entry.history;
    if (task->iris.maxSteps > 0) plan.loop.maxSteps = task->iris.maxSteps;
    return plan;
}

}  // namespace iris::app
