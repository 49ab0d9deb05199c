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
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "agent/actions/action_format.h"
#include "agent/clients/model_client.h"
#include "agent/environment.h"
#include "agent/recording/recorder.h"
#include "agent/runaway_detector.h"
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
    // How the model's coordinates map to the screenshot; empty: defaultCoordinateFrame(format).
    // A ModelImage frame is resolved for each screenshot from ModelClient::imageSizeFor, so it
    // follows a screen whose size changes; each new size is recorded as a ModelImageEvent
    // (ReplayClient reports them back, so a replay maps the recorded answers alike).
    std::optional<CoordinateFrame> frame;
    bool browser = false;  // one browser page: the model may navigate
    int maxSteps = 15;
    int screenshotsInHistory = 3;
    double pauseAfterActionsMs = 0;  // let the screen settle (OSWorld's sleep_after_execution)
    std::optional<VisualGoal> goal;
    // The same actions on an unchanged screen this many steps in a row end the run
    // (agent/runaway_detector.h); 0: never.
    int runawayLimit = RunawayDetector::kDefaultLimit;
};

enum class LoopEnd { Done, Failed, MaxSteps, NoImprovement, Stopped, Error };
std::string_view loopEndName(LoopEnd end);  // "done", "failed", "max_steps", ...

struct LoopResult {
    LoopEnd end = LoopEnd::Error;
    int steps = 0;
    std::string message;          // the model's done/fail message, or the error
    std::optional<double> score;  // visual goal: the best score reached
    // Set when runawayLimit ended the run (end Stopped): what was repeated, e.g. "click(640,
    // 400) repeated 5 times on an unchanged screen".
    std::string runaway;
};

// What the loop reports after each step (progress in the CLI and GUI).
struct StepReport {
    int index = 0;
    std::string thought;
    std::vector<Action> actions;
    std::vector<std::string> problems;  // parse errors, refusals, failed actions
    std::optional<double> score;
    std::string verdict;  // visual goal: whether this step's edits were kept or reverted, and why
    std::string answer;   // the model's text
    std::shared_ptr<const EncodedImage> screenshot;  // what the model saw
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

    // Thread-safe. While paused the loop finishes the step in flight and then waits before the
    // next one (the person can take over the page or desktop meanwhile); resuming observes the
    // screen afresh. A stop request ends a pause.
    void setPaused(bool paused);
    bool paused() const;

    // Set before run(): asked for consent on the loop's thread; sees the model's answer as it
    // streams in (on the loop's thread).
    void setConsentAsker(ConsentAsker asker) { m_askConsent = std::move(asker); }
    void setTextStream(TextStream onText) { m_onText = std::move(onText); }

private:
    struct Render {
        Observation observation;
        std::optional<VisualComparison> comparison;
    };
    // run()'s state across steps, and one step's as its phases build it (agent_loop.cpp).
    struct Run;
    struct Step;
    using StepEnd = std::optional<LoopResult>;  // set when the loop ends at this phase

    // The prompt's fixed parts (project files, target image) and the first observation.
    Status prepareRun(Run& run);
    // One step's phases, in order.
    StepEnd runStep(Run& run, int index, const std::function<void(const StepReport&)>& onStep);
    StepEnd holdForPauseOrStop(Run& run, int index);
    StepEnd askModel(Run& run, Step& step);  // encode the screenshot, prompt, call the model
    void parseAnswer(Run& run, Step& step);
    StepEnd act(Run& run, Step& step);         // execute, settle, reload after file edits
    StepEnd judgeEdits(Run& run, Step& step);  // the next observation; keep or revert edits
    void remember(Run& run, Step& step);       // the step joins the prompt's history
    StepEnd endAfter(const Run& run, const Step& step) const;  // done, fail, stop, goal

    Status lookAgain(Run& run);  // observe into run.render, adding to run.carriedTimings
    Result<Render> observe(StepTimings& timings);
    void recordEvent(const SessionEvent& event);  // when there is a recorder; failures ignored
    // The frame to parse an answer about a width x height screenshot in (ModelImage resolved).
    CoordinateFrame frameFor(int width, int height, int stepIndex);
    std::string executeActions(const std::vector<Action>& actions, StepReport& report,
                               std::vector<ActionOutcome>& outcomes, std::vector<FileEdit>& edits,
                               bool& filesChanged);

    Environment& m_environment;
    ModelClient& m_client;
    SafetyPolicy m_safety;
    Workspace* m_workspace;
    Recorder* m_recorder;
    LoopOptions m_options;
    // Blocks while paused; false when a stop request came meanwhile.
    bool waitWhilePaused();

    ConsentAsker m_askConsent;
    TextStream m_onText;
    std::atomic<bool> m_stop{false};
    mutable std::mutex m_pauseMutex;
    std::condition_variable m_pauseChanged;
    bool m_paused = false;
    // The screenshot size the last model-image event was recorded for.
    std::optional<std::pair<int, int>> m_modelImageScreen;
};

}  // namespace iris::agent
