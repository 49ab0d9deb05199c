#include "agent/agent_loop.h"

#include <chrono>
#include <cmath>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/image_codec.h"
#include "agent/prompt_builder.h"
#include "agent/recording/model_image_event.h"
#include "base/clock.h"

namespace iris::agent {
namespace {

std::string formatScore(double score) {
    char text[16];
    std::snprintf(text, sizeof text, "%.4f", score);
    return text;
}

// A line for the model about what an action did, when it did not simply succeed.
std::string outcomeLine(const Action& action, const ActionOutcome& outcome) {
    if (!outcome.ok) return describe(action) + " failed: " + outcome.error;
    if (!outcome.output.empty()) return describe(action) + " returned:\n" + outcome.output;
    return {};
}

}  // namespace

std::string_view loopEndName(LoopEnd end) {
    switch (end) {
        case LoopEnd::Done:
            return "done";
        case LoopEnd::Failed:
            return "failed";
        case LoopEnd::MaxSteps:
            return "max_steps";
        case LoopEnd::NoImprovement:
            return "no_improvement";
        case LoopEnd::Stopped:
            return "stopped";
        case LoopEnd::Error:
            break;
    }
    return "error";
}

AgentLoop::AgentLoop(Environment& environment, ModelClient& client, SafetyPolicy safety,
                     Workspace* workspace, Recorder* recorder, LoopOptions options)
    : m_environment(environment),
      m_client(client),
      m_safety(std::move(safety)),
      m_workspace(workspace),
      m_recorder(recorder),
      m_options(std::move(options)) {}

void AgentLoop::requestStop() {
    {
        std::lock_guard lock(m_pauseMutex);
        m_stop.store(true);
    }
    m_pauseChanged.notify_all();
    m_client.cancel();
}

void AgentLoop::setPaused(bool paused) {
    {
        std::lock_guard lock(m_pauseMutex);
        m_paused = paused;
    }
    m_pauseChanged.notify_all();
}

bool AgentLoop::paused() const {
    std::lock_guard lock(m_pauseMutex);
    return m_paused;
}

bool AgentLoop::waitWhilePaused() {
    std::unique_lock lock(m_pauseMutex);
    m_pauseChanged.wait(lock, [&] { return !m_paused || m_stop.load(); });
    return !m_stop.load();
}

CoordinateFrame AgentLoop::frameFor(int width, int height, int stepIndex) {
    const CoordinateFrame frame =
        m_options.frame.value_or(defaultCoordinateFrame(m_options.format));
    if (frame.kind != CoordinateFrame::Kind::ModelImage) return frame;
    const std::optional<inference::ImageSize> image = m_client.imageSizeFor(width, height);
    if (!image) return CoordinateFrame{};  // the model saw the screenshot itself
    if (m_recorder && m_modelImageScreen != std::pair(width, height)) {
        m_modelImageScreen = std::pair(width, height);
        (void)m_recorder->recordEvent(ModelImageEvent{width, height, *image}.toEvent(stepIndex));
    }
    return {CoordinateFrame::Kind::ResizedImage, image->width, image->height};
}

Result<AgentLoop::Render> AgentLoop::observe(StepTimings& timings) {
    const Clock::time_point start = Clock::now();
    Result<Observation> observation = m_environment.observe();
    timings.captureMs += millisecondsSince(start);
    if (!observation) return observation.status();
    Render render{std::move(*observation), std::nullopt};
    if (m_options.goal) {
        Result<VisualComparison> comparison =
            compareRenders(render.observation.screenshot, m_options.goal->target);
        if (!comparison) return comparison.status().withContext("comparing with the target: ");
        render.comparison = std::move(*comparison);
    }
    return render;
}

std::string AgentLoop::executeActions(const std::vector<Action>& actions, StepReport& report,
                                      std::vector<ActionOutcome>& outcomes,
                                      std::vector<FileEdit>& edits, bool& filesChanged) {
    std::string feedback;
    for (const Action& action : actions) {
        if (m_stop.load()) break;
        if (endsEpisode(action)) {
            outcomes.push_back({});
            continue;
        }
        const SafetyDecision decision = m_safety.check(action);
        bool allowed = decision.verdict == Verdict::Allow;
        if (decision.verdict == Verdict::Ask)
            allowed = m_askConsent && m_askConsent(action, decision.reason);
        if (!allowed) {
            const std::string why = describe(action) + " refused: " + decision.reason;
            outcomes.push_back({false, why, {}});
            report.problems.push_back(why);
            feedback += why + '\n';
            continue;
        }
        ActionResult result;
        if (isFileAction(action)) {
            const int before = m_workspace ? m_workspace->revision() : 0;
            result = m_workspace ? m_workspace->execute(action)
                                 : ActionResult{Status::unsupported("no workspace"), {}, {}};
            if (m_workspace && m_workspace->revision() != before) {
                filesChanged = true;
                for (const Revision& revision : m_workspace->history()) {
                    if (revision.number <= before) continue;
                    for (const FileChange& change : revision.changes)
                        edits.push_back({change.path, revision.number, change.diff});
                }
            }
        } else {
            result = m_environment.execute(action);
        }
        ActionOutcome outcome{result.status.isOk(), result.status.message(), result.output};
        if (!outcome.ok) report.problems.push_back(describe(action) + ": " + outcome.error);
        if (std::string line = outcomeLine(action, outcome); !line.empty()) feedback += line + '\n';
        outcomes.push_back(std::move(outcome));
    }
    return feedback;
}

// What run() carries from one step to the next.
struct AgentLoop::Run {
    PromptSettings prompt;
    Render render;               // the latest observation
    StepTimings carriedTimings;  // the capture that opened the next step
    std::optional<double> best;  // visual goal: the best score so far, and its revision
    int bestRevision = 0;
    int withoutImprovement = 0;
    std::string feedback;  // for the model, with the next screenshot
    std::vector<StepMemory> history;
    RunawayDetector runaway;

    LoopResult end(LoopEnd how, int steps, std::string message) const {
        return {how, steps, std::move(message), best, {}};
    }
};

// One step as its phases build it.
struct AgentLoop::Step {
    int index = 0;
    StepRecord record;
    StepReport report;
    StepMemory memory;  // what later prompts show of this step
    ParsedStep parsed;
    std::string nextFeedback;
    bool filesChanged = false;
};

LoopResult AgentLoop::run(const std::function<void(const StepReport&)>& onStep) {
    Run run;
    run.runaway = RunawayDetector(m_options.runawayLimit);
    if (Status started = prepareRun(run); !started.isOk())
        return {LoopEnd::Error, 0, started.message(), {}, {}};
    for (int index = 0; index < m_options.maxSteps; ++index) {
        if (StepEnd end = runStep(run, index, onStep)) return *end;
    }
    return run.end(LoopEnd::MaxSteps, m_options.maxSteps, "step limit reached");
}

Status AgentLoop::prepareRun(Run& run) {
    PromptSettings& prompt = run.prompt;
    prompt.format = m_options.format;
    prompt.instruction = m_options.instruction;
    prompt.browser = m_options.browser;
    prompt.fileTools = m_workspace != nullptr;
    prompt.screenshotsInHistory = m_options.screenshotsInHistory;
    if (m_workspace) {
        Result<std::vector<ProjectFile>> files = m_workspace->snapshot();
        if (!files) return files.status().withContext("project: ");
        for (const ProjectFile& file : *files) {
            prompt.projectFiles += file.path + " (" + std::to_string(file.size) + " bytes" +
                                   (file.text ? ")\n" : ", binary)\n");
        }
    }
    if (m_options.goal) {
        Result<std::shared_ptr<const EncodedImage>> target = encodePng(m_options.goal->target);
        if (!target) return target.status().withContext("target image: ");
        prompt.target = *target;
    }
    IRIS_RETURN_IF_ERROR(lookAgain(run));
    run.bestRevision = m_workspace ? m_workspace->revision() : 0;
    if (run.render.comparison) {
        run.best = run.render.comparison->score;
        run.feedback = run.render.comparison->summary;
    }
    return Status::ok();
}

Status AgentLoop::lookAgain(Run& run) {
    Result<Render> render = observe(run.carriedTimings);
    if (!render) return render.status().withContext("observe: ");
    run.render = std::move(*render);
    return Status::ok();
}

void AgentLoop::recordEvent(const SessionEvent& event) {
    if (m_recorder) (void)m_recorder->recordEvent(event);
}

AgentLoop::StepEnd AgentLoop::runStep(Run& run, int index,
                                      const std::function<void(const StepReport&)>& onStep) {
    if (StepEnd end = holdForPauseOrStop(run, index)) return end;
    Step step;
    step.index = index;
    if (StepEnd end = askModel(run, step)) return end;
    const cv::Mat seen = run.render.observation.screenshot;  // what the actions were chosen on
    parseAnswer(run, step);
    if (StepEnd end = act(run, step)) return end;
    if (StepEnd end = judgeEdits(run, step)) {
        // The actions were carried out: the step is kept even when the screen is gone after them
        // (a desktop's output unplugged, its compositor or X server ended).
        if (m_recorder && end->end == LoopEnd::Error) (void)m_recorder->recordStep(step.record);
        return end;
    }

    const Clock::time_point start = Clock::now();
    if (m_recorder) {
        if (Status written = m_recorder->recordStep(step.record); !written.isOk())
            return run.end(LoopEnd::Error, index + 1, written.message());
    }
    step.record.timings.recordMs = millisecondsSince(start);
    step.report.timings = step.record.timings;

    remember(run, step);
    if (onStep) onStep(step.report);
    if (StepEnd end = endAfter(run, step)) return end;
    if (std::optional<std::string> repeated = run.runaway.observe(seen, step.report.actions)) {
        recordEvent({index, 0, "stop", "runaway loop: " + *repeated});
        LoopResult result = run.end(LoopEnd::Stopped, index + 1, "runaway loop: " + *repeated);
        result.runaway = *repeated;
        return result;
    }
    return std::nullopt;
}

AgentLoop::StepEnd AgentLoop::holdForPauseOrStop(Run& run, int index) {
    if (paused()) {
        if (!waitWhilePaused()) {
            recordEvent({index, 0, "stop", "stopped on request while paused"});
            return run.end(LoopEnd::Stopped, index, "stopped on request");
        }
        // The person may have changed the page or the files: look again.
        recordEvent({index, 0, "resume", "resumed after a pause"});
        if (Status looked = lookAgain(run); !looked.isOk())
            return run.end(LoopEnd::Error, index, looked.message());
    }
    if (m_stop.load()) {
        recordEvent({index, 0, "stop", "stopped on request before step " + std::to_string(index)});
        return run.end(LoopEnd::Stopped, index, "stopped on request");
    }
    return std::nullopt;
}

AgentLoop::StepEnd AgentLoop::askModel(Run& run, Step& step) {
    const int index = step.index;
    step.report.index = index;
    step.record.index = index;
    step.record.timings = run.carriedTimings;
    step.record.url = run.render.observation.url;
    step.record.title = run.render.observation.title;
    run.prompt.screenWidth = run.render.observation.screenshot.cols;
    run.prompt.screenHeight = run.render.observation.screenshot.rows;

    Clock::time_point start = Clock::now();
    Result<std::shared_ptr<const EncodedImage>> screenshot =
        encodePng(run.render.observation.screenshot);
    step.record.timings.encodeMs = millisecondsSince(start);
    if (!screenshot) return run.end(LoopEnd::Error, index, screenshot.status().message());
    step.record.observationPng = (*screenshot)->bytes;
    step.report.screenshot = *screenshot;

    step.memory = StepMemory{*screenshot, run.feedback, {}, {}};
    step.record.request = buildChatRequest(run.prompt, run.history, step.memory);

    start = Clock::now();
    Result<ChatResponse> answer = m_client.complete(step.record.request, m_onText);
    step.record.timings.modelMs = millisecondsSince(start);
    if (!answer) {
        const bool stopped = answer.status().code() == StatusCode::Cancelled || m_stop.load();
        step.record.modelError = answer.status().message();
        if (m_recorder) (void)m_recorder->recordStep(step.record);
        if (stopped) return run.end(LoopEnd::Stopped, index + 1, "stopped on request");
        return run.end(LoopEnd::Error, index + 1, "model: " + answer.status().message());
    }
    step.record.response = std::move(*answer);
    return std::nullopt;
}

void AgentLoop::parseAnswer(Run& run, Step& step) {
    const ChatResponse& answer = *step.record.response;
    const Clock::time_point start = Clock::now();
    ParseOptions parseOptions;
    parseOptions.frame = frameFor(run.prompt.screenWidth, run.prompt.screenHeight, step.index);
    parseOptions.screenWidth = run.prompt.screenWidth;
    parseOptions.screenHeight = run.prompt.screenHeight;
    step.parsed = parseModelOutput(m_options.format, answer, parseOptions);
    step.record.timings.parseMs = millisecondsSince(start);
    step.record.actions = step.parsed.actions;
    step.report.thought = step.parsed.thought;
    step.report.answer = answer.text;
    step.report.actions = step.parsed.actions;
    for (const std::string& error : step.parsed.errors) {
        if (!step.record.parseError.empty()) step.record.parseError += '\n';
        step.record.parseError += error;
        step.report.problems.push_back(error);
        step.nextFeedback += "Could not parse your answer: " + error + '\n';
    }
    if (step.parsed.actions.empty() && step.parsed.errors.empty())
        step.nextFeedback += "Your answer contained no action.\n";
    // Half an answer is not run: the actions that parsed may depend on the ones that did
    // not (click a field, then type into it).
    if (!step.parsed.errors.empty() && !step.parsed.actions.empty()) {
        step.nextFeedback += "Nothing was executed; answer again with every action well-formed.\n";
        step.parsed.actions.clear();
    }
}

AgentLoop::StepEnd AgentLoop::act(Run& run, Step& step) {
    const Clock::time_point start = Clock::now();
    step.nextFeedback += executeActions(step.parsed.actions, step.report, step.record.results,
                                        step.record.edits, step.filesChanged);
    if (m_options.pauseAfterActionsMs > 0) {
        std::this_thread::sleep_for(
            std::chrono::duration<double, std::milli>(m_options.pauseAfterActionsMs));
    }
    if (step.filesChanged) {
        if (Status reloaded = m_environment.reload(); !reloaded.isOk())
            return run.end(LoopEnd::Error, step.index + 1, "reload: " + reloaded.message());
    }
    step.record.timings.executeMs = millisecondsSince(start);
    return std::nullopt;
}

// The next observation; with a visual goal, also the verdict on this step's edits: kept when
// they raised the score, else reverted.
AgentLoop::StepEnd AgentLoop::judgeEdits(Run& run, Step& step) {
    const int steps = step.index + 1;
    run.carriedTimings = {};
    if (Status looked = lookAgain(run); !looked.isOk())
        return run.end(LoopEnd::Error, steps, looked.message());
    if (!run.render.comparison) return std::nullopt;
    const double score = run.render.comparison->score;
    step.report.score = score;
    if (step.filesChanged && run.best && score <= *run.best + 1e-6) {
        ++run.withoutImprovement;
        const std::string line = "Your edit changed the similarity from " + formatScore(*run.best) +
                                 " to " + formatScore(score) + ", so it was reverted.";
        step.nextFeedback += line + '\n';
        step.report.verdict =
            "reverted: the score fell from " + formatScore(*run.best) + " to " + formatScore(score);
        if (Status reverted = m_workspace->revertTo(run.bestRevision); !reverted.isOk())
            return run.end(LoopEnd::Error, steps, "revert: " + reverted.message());
        if (Status reloaded = m_environment.reload(); !reloaded.isOk())
            return run.end(LoopEnd::Error, steps, "reload: " + reloaded.message());
        recordEvent({step.index,
                     0,
                     "revert",
                     line,
                     {{"score", {{"from", *run.best}, {"to", score}}},
                      {"restored_revision", run.bestRevision}}});
        if (Status looked = lookAgain(run); !looked.isOk())
            return run.end(LoopEnd::Error, steps, looked.message());
    } else if (step.filesChanged) {
        run.withoutImprovement = 0;
        step.nextFeedback += "Similarity improved from " + formatScore(run.best.value_or(0)) +
                             " to " + formatScore(score) + ".\n";
        step.report.verdict = "kept: the score rose from " + formatScore(run.best.value_or(0)) +
                              " to " + formatScore(score);
        run.best = score;
        run.bestRevision = m_workspace->revision();
    }
    step.nextFeedback += run.render.comparison->summary;
    return std::nullopt;
}

// The finished step joins the history the next prompts show.
void AgentLoop::remember(Run& run, Step& step) {
    // Tool formats with call ids get their results in tool messages; the rest in the text.
    const ChatResponse& answer = *step.record.response;
    step.memory.answer = answer;
    for (std::size_t c = 0; c < answer.toolCalls.size(); ++c) {
        const ActionOutcome* outcome =
            c < step.record.results.size() ? &step.record.results[c] : nullptr;
        step.memory.toolResults.push_back(
            !outcome ? "not executed"
                     : (!outcome->ok ? "error: " + outcome->error
                                     : (outcome->output.empty() ? "ok" : outcome->output)));
    }
    run.history.push_back(std::move(step.memory));
    run.feedback = std::move(step.nextFeedback);
}

AgentLoop::StepEnd AgentLoop::endAfter(const Run& run, const Step& step) const {
    const int steps = step.index + 1;
    for (const Action& action : step.parsed.actions) {
        if (const auto* done = std::get_if<Done>(&action))
            return run.end(LoopEnd::Done, steps, done->message);
        if (const auto* fail = std::get_if<Fail>(&action))
            return run.end(LoopEnd::Failed, steps, fail->reason);
    }
    if (m_stop.load()) return run.end(LoopEnd::Stopped, steps, "stopped on request");
    if (m_options.goal && run.best && *run.best >= m_options.goal->goodEnough)
        return run.end(LoopEnd::Done, steps, "the render matches the target");
    if (m_options.goal && run.withoutImprovement >= m_options.goal->patience) {
        return run.end(
            LoopEnd::NoImprovement, steps,
            std::to_string(run.withoutImprovement) + " edits in a row did not improve the score");
    }
    return std::nullopt;
}

}  // namespace iris::agent
