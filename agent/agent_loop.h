#pragma once
// The agent loop: observe, prompt, call the model, parse, check safety, execute, record; until the
// model says done or fail, the step limit, a stop request (honoured within one step) or an error.
// With a visual goal it is also the visual-feedback loop of a web project: after every edit the
// page is re-rendered and scored against the target; an edit that does not improve the score is
// reverted, and the loop ends after `patience` edits in a row without improvement.
//
// The loop talks only to interfaces (Environment, ModelClient, Recorder, Workspace); it never
// touches SQLite, HTTP or Qt. One loop runs on one thread; requestStop() may come from any.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "agent/actions/action_format.h"
#include "agent/clients/model_client.h"
#include "agent/environment.h"
#include "agent/recording/recorder.h"
#include "agent/safety_policy.h"
#include "agent/visual/visual_diff.h"
#include "agent/workspace/workspace.h"

namespace iris::agent {

struct VisualGoal {
    cv::Mat target;            // BGR mockup, compared with the rendered page
    double goodEnough = 0.99;  // stop with Done once the score reaches this
    int patience = 3;          // edits in a row without improvement before giving up
};

struct LoopOptions {
    std::string instruction;
    ActionFormat format = ActionFormat::ToolCalls;
    CoordinateFrame frame;  // how the model's coordinates map to the screenshot
    bool browser = false;   // one browser page: the model may navigate
    int maxSteps = 15;
    int screenshotsInHistory = 3;
    double pauseAfterActionsMs = 0;  // let the screen settle (OSWorld's sleep_after_execution)
    std::optional<VisualGoal> goal;
};

enum class LoopEnd { Done, Failed, MaxSteps, NoImprovement, Stopped, Error };
std::string_view loopEndName(LoopEnd end);  // "done", "failed", "max_steps", ...

struct LoopResult {
    LoopEnd end = LoopEnd::Error;
    int steps = 0;
    std::string message;          // the model's done/fail message, or the error
    std::optional<double> score;  // visual goal: the best score reached
};

// What the loop reports after each step (progress in the CLI and GUI).
struct StepReport {
    int index = 0;
    std::string thought;
    std::vector<Action> actions;
    std::vector<std::string> problems;  // parse errors, refusals, failed actions
    std::optional<double> score;
    std::string verdict;  // visual goal: whether this step's edits were kept or reverted, and why
    StepTimings timings;
};

// Asked when the safety policy wants a person's consent; no asker means refuse.
using ConsentAsker = std::function<bool(const Action& action, const std::string& reason)>;

class AgentLoop {
public:
    // `workspace` and `recorder` may be null (no file actions; nothing recorded).
    AgentLoop(Environment& environment, ModelClient& client, SafetyPolicy safety,
              Workspace* workspace, Recorder* recorder, LoopOptions options);

    LoopResult run(const std::function<void(const StepReport&)>& onStep = {});

    // Thread-safe. The step in flight ends early (its model call is cancelled) and no further
    // step starts.
    void requestStop();

    void setConsentAsker(ConsentAsker asker) { m_askConsent = std::move(asker); }

private:
    struct Render {
        Observation observation;
        std::optional<VisualComparison> comparison;
    };
    Result<Render> observe(StepTimings& timings);
    std::string executeActions(const std::vector<Action>& actions, StepReport& report,
                               std::vector<ActionOutcome>& outcomes, std::vector<FileEdit>& edits,
                               bool& filesChanged);

    Environment& m_environment;
    ModelClient& m_client;
    SafetyPolicy m_safety;
    Workspace* m_workspace;
    Recorder* m_recorder;
    LoopOptions m_options;
    ConsentAsker m_askConsent;
    std::atomic<bool> m_stop{false};
};

}  // namespace iris::agent
