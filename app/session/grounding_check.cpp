#include "app/session/grounding_check.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include <QObject>

#include "agent/agent_loop.h"
#include "agent/env/browser/browser_environment.h"
#include "agent/env/browser/gui_thread_environment.h"
#include "agent/recording/recorder.h"
#include "app/session/grounding_browsers.h"
#include "app/session/session_plan.h"
#include "base/temporary_folder.h"
#include "inference/vision/image_preprocess.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;
namespace gr = agent::grounding;

// Keeps the one step's record: the parse error and the actions as the parser read them, apart
// from refusals and failed actions (which StepReport::problems mixes in).
class StepCapture final : public agent::Recorder {
public:
    Status recordStep(const agent::StepRecord& step) override {
        m_step = step;
        return Status::ok();
    }
    Status recordEvent(const agent::SessionEvent&) override { return Status::ok(); }
    const std::optional<agent::StepRecord>& step() const { return m_step; }

private:
    std::optional<agent::StepRecord> m_step;
};

// The target's box as the browser laid it out.
Result<gr::Rect> measureTarget(agent::GuiThreadEnvironment& browser) {
    const std::string script = "(() => { const r = document.querySelector('" +
                               std::string(gr::kTargetSelector) +
                               "').getBoundingClientRect(); return {left: r.left, top: r.top, "
                               "width: r.width, height: r.height}; })()";
    Result<std::string> text = evaluateInPage(browser, script);
    IRIS_RETURN_IF_ERROR(text.status().withContext("measuring the target: "));
    try {
        const nlohmann::json box = nlohmann::json::parse(*text);
        return gr::Rect{box.at("left").get<double>(), box.at("top").get<double>(),
                        box.at("width").get<double>(), box.at("height").get<double>()};
    } catch (const nlohmann::json::exception& e) {
        return Status::internal(std::string("measuring the target: ") + e.what());
    }
}

// Where the step clicked: the first click with a point, or a click at the pointer after a move.
std::optional<gr::ClickPoint> clickOf(const std::vector<agent::Action>& actions) {
    std::optional<agent::Point> pointer;
    for (const agent::Action& action : actions) {
        if (const auto* move = std::get_if<agent::MoveTo>(&action)) pointer = move->to;
        if (const auto* click = std::get_if<agent::Click>(&action)) {
            if (click->at) return gr::ClickPoint{click->at->x, click->at->y};
            if (pointer) return gr::ClickPoint{pointer->x, pointer->y};
        }
    }
    return std::nullopt;
}

std::string actionsText(const std::vector<agent::Action>& actions) {
    if (actions.empty()) return "no action";
    std::string text;
    for (const agent::Action& action : actions)
        text += (text.empty() ? "" : ", ") + agent::describe(action);
    return text;
}

agent::CoordinateFrame frameFor(const GroundingCheckOptions& options, gr::ScreenSize screen) {
    if (options.resizedFramePerScreen) {
        const inference::ImagePreprocessOptions budget;  // as `iris run --coords resized`
        Result<inference::ImageSize> size =
            inference::smartResize(screen.width, screen.height, budget);
        if (size) return {agent::CoordinateFrame::Kind::ResizedImage, size->width, size->height};
    }
    return options.frame.value_or(agent::defaultCoordinateFrame(options.format));
}

Status checkScreens(const std::vector<gr::ScreenSize>& screens) {
    for (const gr::ScreenSize& screen : screens) {
        if (screen.width < 480 || screen.height < 360 ||
            screen.width > agent::BrowserEnvironment::kMaxViewportSide ||
            screen.height > agent::BrowserEnvironment::kMaxViewportSide)
            return Status::invalidArgument("screen " + gr::screenSizeText(screen) +
                                           ": sizes from 480x360 to 8192x8192 are checked");
    }
    return Status::ok();
}

// One agent-loop step on the page: the instruction, the format and frame, one screenshot.
agent::LoopOptions stepOptions(const GroundingCheckOptions& options,
                               const gr::GroundingPage& page) {
    agent::LoopOptions loop;
    loop.instruction = page.instruction;
    loop.format = options.format;
    loop.frame = frameFor(options, page.screen);
    loop.browser = true;
    loop.maxSteps = 1;
    loop.screenshotsInHistory = 1;
    return loop;
}

// Page `index` scored from its step's record: a model error, an answer that did not parse, or
// the click (if any) against the measured target.
gr::PageOutcome outcomeOf(const gr::GroundingPage& page, int index, const gr::Rect& target,
                          const agent::StepRecord& step) {
    const gr::PageElement& element = page.elements[std::size_t(page.target)];
    gr::PageOutcome outcome;
    outcome.page = index;
    outcome.kind = element.kind;
    outcome.screen = page.screen;
    outcome.theme = page.theme;
    outcome.label = element.label;
    outcome.target = target;
    if (!step.response) {
        outcome.verdict = gr::PageVerdict::ModelError;
        outcome.problem = step.modelError;
        return outcome;
    }
    outcome.answer = step.response->text;
    const agent::StepTimings& t = step.timings;
    outcome.stepMs = t.captureMs + t.encodeMs + t.modelMs + t.parseMs + t.executeMs;
    outcome.modelMs = t.modelMs;
    if (!step.parseError.empty()) {
        outcome.verdict = gr::PageVerdict::ParseError;
        outcome.problem = step.parseError;
    } else {
        outcome.click = clickOf(step.actions);
        outcome.verdict = gr::verdictFor(target, outcome.click);
        if (!outcome.click) outcome.problem = actionsText(step.actions);
    }
    return outcome;
}

}  // namespace

std::vector<gr::ScreenSize> defaultGroundingScreens(const agent::ModelClient& client) {
    std::vector<gr::ScreenSize> screens = {{1280, 800}, {1920, 1080}, {1024, 768}};
    if (std::optional<inference::ImageSize> budget = client.imageSizeFor(2560, 1600)) {
        const gr::ScreenSize size{budget->width, budget->height};
        const bool usable = size.width >= 480 && size.height >= 360;
        if (usable && std::find(screens.begin(), screens.end(), size) == screens.end())
            screens.insert(screens.begin(), size);
    }
    return screens;
}

Result<gr::GroundingReport> runGroundingCheck(agent::ModelClient& client,
                                              const GroundingCheckOptions& options,
                                              const GroundingProgress& progress,
                                              const std::atomic<bool>* stop,
                                              QObject* browserThread) {
    if (options.pages < 1) return Status::invalidArgument("pages: at least one page is needed");
    gr::PageSetOptions set;
    set.seed = options.seed;
    set.count = options.pages;
    set.screens = options.screens.empty() ? defaultGroundingScreens(client) : options.screens;
    IRIS_RETURN_IF_ERROR(checkScreens(set.screens));

    Result<TemporaryFolder> folder = TemporaryFolder::create("iris-grounding");
    IRIS_RETURN_IF_ERROR(folder.status());
    // Made on this thread when there is no other: the browsers then live here too.
    std::unique_ptr<QObject> localAnchor;
    if (!browserThread) {
        localAnchor = std::make_unique<QObject>();
        browserThread = localAnchor.get();
    }
    GroundingBrowsers browsers(browserThread);

    gr::GroundingReport report;
    report.model = client.describe();
    report.actionFormat = std::string(agent::actionFormatName(options.format));
    report.coordinateFrame = options.resizedFramePerScreen
                                 ? "resized"
                                 : coordinateFrameText(options.frame.value_or(
                                       agent::defaultCoordinateFrame(options.format)));
    report.seed = options.seed;
    report.requestedPages = options.pages;

    for (int i = 0; i < options.pages; ++i) {
        if (stop && stop->load()) {
            report.stopped = true;
            break;
        }
        const gr::GroundingPage page =
            gr::generatePage(set.seed, i, set.screens[std::size_t(i) % set.screens.size()]);
        char name[32];
        std::snprintf(name, sizeof name, "page-%04d.html", i);
        const fs::path path = folder->path() / name;
        IRIS_RETURN_IF_ERROR(writeTextFile(path, page.html));
        Result<agent::GuiThreadEnvironment*> browser = browsers.show(page.screen, path);
        IRIS_RETURN_IF_ERROR(browser.status().withContext("page " + std::to_string(i + 1) + ": "));
        Result<gr::Rect> target = measureTarget(**browser);
        IRIS_RETURN_IF_ERROR(target.status().withContext("page " + std::to_string(i + 1) + ": "));

        StepCapture capture;
        agent::AgentLoop agentLoop(**browser, client, agent::SafetyPolicy(agent::SafetyOptions{}),
                                   nullptr, &capture, stepOptions(options, page));
        const agent::LoopResult result = agentLoop.run();
        const std::optional<agent::StepRecord>& step = capture.step();
        if (result.end == agent::LoopEnd::Stopped && stop && stop->load()) {
            report.stopped = true;
            break;
        }
        // Without a record the loop failed outside the model call (the browser): not the model's
        // doing, and nothing to score.
        if (!step) return Status::ioError("page " + std::to_string(i + 1) + ": " + result.message);
        gr::PageOutcome outcome = outcomeOf(page, i, *target, *step);
        if (outcome.verdict == gr::PageVerdict::ModelError && i == 0)
            return Status::unavailable("the first page's model call failed: " + outcome.problem);
        report.pages.push_back(std::move(outcome));
        if (progress) progress(report.pages.back(), i + 1, options.pages);
    }
    return report;
}

}  // namespace iris::app
