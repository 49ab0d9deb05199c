#include "agent/agent_loop.h"

#include <chrono>
#include <cmath>
#include <thread>

#include "agent/image_codec.h"
#include "agent/prompt_builder.h"
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
        const ModelImageEvent event{width, height, *image};
        (void)m_recorder->recordEvent(
            {stepIndex, 0, std::string(ModelImageEvent::kKind), event.text()});
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

LoopResult AgentLoop::run(const std::function<void(const StepReport&)>& onStep) {
    PromptSettings prompt;
    prompt.format = m_options.format;
    prompt.instruction = m_options.instruction;
    prompt.browser = m_options.browser;
    prompt.fileTools = m_workspace != nullptr;
    prompt.screenshotsInHistory = m_options.screenshotsInHistory;
    if (m_workspace) {
        Result<std::vector<ProjectFile>> files = m_workspace->snapshot();
        if (!files) return {LoopEnd::Error, 0, "project: " + files.status().message(), {}};
        for (const ProjectFile& file : *files) {
            prompt.projectFiles += file.path + " (" + std::to_string(file.size) + " bytes" +
                                   (file.text ? ")\n" : ", binary)\n");
        }
    }
    if (m_options.goal) {
        Result<std::shared_ptr<const EncodedImage>> target = encodePng(m_options.goal->target);
        if (!target) return {LoopEnd::Error, 0, "target image: " + target.status().message(), {}};
        prompt.target = *target;
    }

    auto record = [&](const SessionEvent& event) {
        if (m_recorder) (void)m_recorder->recordEvent(event);
    };

    StepTimings firstTimings;
    Result<Render> render = observe(firstTimings);
    if (!render) return {LoopEnd::Error, 0, "observe: " + render.status().message(), {}};

    std::optional<double> best;
    int bestRevision = m_workspace ? m_workspace->revision() : 0;
    int withoutImprovement = 0;
    std::string feedback;
    if (render->comparison) {
        best = render->comparison->score;
        feedback = render->comparison->summary;
    }

    std::vector<StepMemory> history;
    StepTimings carriedTimings = firstTimings;  // the capture that opened this step
    for (int index = 0; index < m_options.maxSteps; ++index) {
        if (paused()) {
            if (!waitWhilePaused()) {
                record({index, 0, "stop", "stopped on request while paused"});
                return {LoopEnd::Stopped, index, "stopped on request", best};
            }
            // The person may have changed the page or the files: look again.
            record({index, 0, "resume", "resumed after a pause"});
            render = observe(carriedTimings);
            if (!render)
                return {LoopEnd::Error, index, "observe: " + render.status().message(), best};
        }
        if (m_stop.load()) {
            record({index, 0, "stop", "stopped on request before step " + std::to_string(index)});
            return {LoopEnd::Stopped, index, "stopped on request", best};
        }
        StepReport report;
        report.index = index;
        StepRecord step;
        step.index = index;
        step.timings = carriedTimings;
        step.url = render->observation.url;
        step.title = render->observation.title;
        prompt.screenWidth = render->observation.screenshot.cols;
        prompt.screenHeight = render->observation.screenshot.rows;

        Clock::time_point start = Clock::now();
        Result<std::shared_ptr<const EncodedImage>> screenshot =
            encodePng(render->observation.screenshot);
        step.timings.encodeMs = millisecondsSince(start);
        if (!screenshot) return {LoopEnd::Error, index, screenshot.status().message(), best};
        step.observationPng = (*screenshot)->bytes;

        StepMemory current{*screenshot, feedback, {}, {}};
        step.request = buildChatRequest(prompt, history, current);

        start = Clock::now();
        Result<ChatResponse> answer = m_client.complete(step.request, m_onText);
        step.timings.modelMs = millisecondsSince(start);
        if (!answer) {
            const bool stopped = answer.status().code() == StatusCode::Cancelled || m_stop.load();
            step.modelError = answer.status().message();
            if (m_recorder) (void)m_recorder->recordStep(step);
            if (stopped) return {LoopEnd::Stopped, index + 1, "stopped on request", best};
            return {LoopEnd::Error, index + 1, "model: " + answer.status().message(), best};
        }
        step.response = *answer;

        start = Clock::now();
        ParseOptions parseOptions;
        parseOptions.frame = frameFor(prompt.screenWidth, prompt.screenHeight, index);
        parseOptions.screenWidth = prompt.screenWidth;
        parseOptions.screenHeight = prompt.screenHeight;
        ParsedStep parsed = parseModelOutput(m_options.format, *answer, parseOptions);
        step.timings.parseMs = millisecondsSince(start);
        step.actions = parsed.actions;
        report.thought = parsed.thought;
        report.answer = answer->text;
        report.screenshot = *screenshot;
        report.actions = parsed.actions;
        std::string nextFeedback;
        for (const std::string& error : parsed.errors) {
            if (!step.parseError.empty()) step.parseError += '\n';
            step.parseError += error;
            report.problems.push_back(error);
            nextFeedback += "Could not parse your answer: " + error + '\n';
        }
        if (parsed.actions.empty() && parsed.errors.empty())
            nextFeedback += "Your answer contained no action.\n";
        // Half an answer is not run: the actions that parsed may depend on the ones that did
        // not (click a field, then type into it).
        if (!parsed.errors.empty() && !parsed.actions.empty()) {
            nextFeedback += "Nothing was executed; answer again with every action well-formed.\n";
            parsed.actions.clear();
        }

        start = Clock::now();
        bool filesChanged = false;
        nextFeedback +=
            executeActions(parsed.actions, report, step.results, step.edits, filesChanged);
        if (m_options.pauseAfterActionsMs > 0) {
            std::this_thread::sleep_for(
                std::chrono::duration<double, std::milli>(m_options.pauseAfterActionsMs));
        }
        if (filesChanged) {
            if (Status reloaded = m_environment.reload(); !reloaded.isOk())
                return {LoopEnd::Error, index + 1, "reload: " + reloaded.message(), best};
        }
        step.timings.executeMs = millisecondsSince(start);

        // The next observation; with a visual goal, also the verdict on this step's edits.
        carriedTimings = {};
        render = observe(carriedTimings);
        if (!render)
            return {LoopEnd::Error, index + 1, "observe: " + render.status().message(), best};
        if (render->comparison) {
            const double score = render->comparison->score;
            report.score = score;
            if (filesChanged && best && score <= *best + 1e-6) {
                ++withoutImprovement;
                const std::string line = "Your edit changed the similarity from " +
                                         formatScore(*best) + " to " + formatScore(score) +
                                         ", so it was reverted.";
                nextFeedback += line + '\n';
                report.verdict = "reverted: the score fell from " + formatScore(*best) + " to " +
                                 formatScore(score);
                if (Status reverted = m_workspace->revertTo(bestRevision); !reverted.isOk())
                    return {LoopEnd::Error, index + 1, "revert: " + reverted.message(), best};
                if (Status reloaded = m_environment.reload(); !reloaded.isOk())
                    return {LoopEnd::Error, index + 1, "reload: " + reloaded.message(), best};
                record({index, 0, "revert", line});
                render = observe(carriedTimings);
                if (!render)
                    return {LoopEnd::Error, index + 1, "observe: " + render.status().message(),
                            best};
            } else if (filesChanged) {
                withoutImprovement = 0;
                nextFeedback += "Similarity improved from " + formatScore(best.value_or(0)) +
                                " to " + formatScore(score) + ".\n";
                report.verdict = "kept: the score rose from " + formatScore(best.value_or(0)) +
                                 " to " + formatScore(score);
                best = score;
                bestRevision = m_workspace->revision();
            }
            nextFeedback += render->comparison->summary;
        }

        start = Clock::now();
        if (m_recorder) {
            if (Status written = m_recorder->recordStep(step); !written.isOk())
                return {LoopEnd::Error, index + 1, written.message(), best};
        }
        step.timings.recordMs = millisecondsSince(start);
        report.timings = step.timings;

        // Tool formats with call ids get their results in tool messages; the rest in the text.
        current.answer = *answer;
        for (std::size_t c = 0; c < answer->toolCalls.size(); ++c) {
            const ActionOutcome* outcome = c < step.results.size() ? &step.results[c] : nullptr;
            current.toolResults.push_back(
                !outcome ? "not executed"
                         : (!outcome->ok ? "error: " + outcome->error
                                         : (outcome->output.empty() ? "ok" : outcome->output)));
        }
        history.push_back(std::move(current));
        feedback = std::move(nextFeedback);
        if (onStep) onStep(report);

        for (const Action& action : parsed.actions) {
            if (const auto* done = std::get_if<Done>(&action))
                return {LoopEnd::Done, index + 1, done->message, best};
            if (const auto* fail = std::get_if<Fail>(&action))
                return {LoopEnd::Failed, index + 1, fail->reason, best};
        }
        if (m_stop.load()) return {LoopEnd::Stopped, index + 1, "stopped on request", best};
        if (m_options.goal && best && *best >= m_options.goal->goodEnough) {
            return {LoopEnd::Done, index + 1, "the render matches the target", best};
        }
        if (m_options.goal && withoutImprovement >= m_options.goal->patience) {
            return {
                LoopEnd::NoImprovement, index + 1,
                std::to_string(withoutImprovement) + " edits in a row did not improve the score",
                best};
        }
    }
    return {LoopEnd::MaxSteps, m_options.maxSteps, "step limit reached", best};
}

}  // namespace iris::agent
