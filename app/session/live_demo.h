#pragma once
// The model bundled with Iris (resources/models/iris-tiny-cua, docs/tiny-model.md) on the bundled
// synthetic grounding tasks (resources/tasks/examples/synthetic-grounding): `iris demo --live`
// scores them through the evaluation runner, the GUI's "Try the Bundled Model" runs one as a
// session. Nothing to configure or download.
#include <filesystem>
#include <string>

#include "app/models/catalogue.h"
#include "app/session/model_choice.h"
#include "app/session/session_plan.h"
#include "base/status.h"

namespace iris::app {

inline constexpr const char* kBundledModelName = "iris-tiny-cua";
// The task run when none is named: ticking a sign-up form's terms checkbox, on a held-out page
// (a template the model was never trained on).
inline constexpr const char* kLiveDemoTask = "heldout-000000";

struct LiveDemo {
    ModelChoice model;             // Iris's engine on the bundled files
    models::CatalogueEntry entry;  // its action format and screenshots per prompt
    std::filesystem::path tasks;   // one task file, or the folder of them all
};

// dataDirectory()/tasks/examples/synthetic-grounding
std::filesystem::path liveDemoTaskFolder();

// The bundled model and the task `task` of liveDemoTaskFolder() (its file name without .json),
// or "all" for the folder. Errors name the missing task, catalogue entry or model file.
Result<LiveDemo> prepareLiveDemo(const std::string& task);

// A session of the demo's single task: its page as a URL at the task's viewport, its
// instruction and step limit, the model's action format and history. The database is left for
// the caller.
Result<SessionPlan> makeLiveDemoPlan(const LiveDemo& demo);

}  // namespace iris::app
