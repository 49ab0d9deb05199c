#include "agent/grounding/task_oracle.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace iris::agent::grounding {
namespace {

// Screen coordinate -> the image pixel the model names, rounded to nearest.
int toImage(double screen, int screenSide, int imageSide) {
    return int(std::lround(screen * imageSide / screenSide));
}

double toScreen(int image, int screenSide, int imageSide) {
    return double(image) * screenSide / imageSide;
}

// The image point whose screen point lies inside `box`: the centre's, or a neighbour's when
// rounding moved it out (boxes of a few pixels on a shrunk image).
std::optional<std::pair<int, int>> clickPoint(const Rect& box, AnswerFrame frame) {
    const int cx = toImage(box.left + box.width / 2, frame.screen.width, frame.image.width);
    const int cy = toImage(box.top + box.height / 2, frame.screen.height, frame.image.height);
    for (int dy : {0, -1, 1})
        for (int dx : {0, -1, 1}) {
            const ClickPoint back{toScreen(cx + dx, frame.screen.width, frame.image.width),
                                  toScreen(cy + dy, frame.screen.height, frame.image.height)};
            if (isInside(box, back)) return std::pair{cx + dx, cy + dy};
        }
    return std::nullopt;
}

std::string point(int x, int y) {
    return "'(" + std::to_string(x) + "," + std::to_string(y) + ")'";
}

// Text inside '...': the parser reads backslash escapes.
std::string quotedContent(const std::string& text) {
    std::string out = "'";
    for (char c : text) {
        if (c == '\'' || c == '\\') out += '\\';
        out += c;
    }
    return out + "'";
}

bool fullyInView(const Rect& box, const ControlProbe& probe) {
    return box.top >= 0 && box.top + box.height <= probe.viewportHeight && box.left >= 0 &&
           box.left + box.width <= probe.viewportWidth;
}

// A scroll towards the box, at the middle of the viewport.
PlannedStep scrollTowards(const Rect& box, const ControlProbe& probe, AnswerFrame frame) {
    const bool down = box.top + box.height > probe.viewportHeight;
    const int x = toImage(probe.viewportWidth / 2.0, frame.screen.width, frame.image.width);
    const int y = toImage(probe.viewportHeight / 2.0, frame.screen.height, frame.image.height);
    PlannedStep step;
    step.answer =
        "scroll(start_box=" + point(x, y) + ", direction='" + (down ? "down" : "up") + "')";
    step.kind = StepKind::Scroll;
    return step;
}

}  // namespace

std::string probeScript(const std::string& controlId) {
    return "window.__irisProbe('" + controlId + "')";
}

Result<ControlProbe> parseControlProbe(const std::string& text) {
    try {
        const nlohmann::json json = nlohmann::json::parse(text);
        ControlProbe probe;
        if (const nlohmann::json& box = json.at("box"); !box.is_null())
            probe.box = Rect{box.at("left").get<double>(), box.at("top").get<double>(),
                             box.at("width").get<double>(), box.at("height").get<double>()};
        probe.focus = json.at("focus").get<std::string>();
        probe.viewportWidth = json.at("width").get<int>();
        probe.viewportHeight = json.at("height").get<int>();
        return probe;
    } catch (const nlohmann::json::exception& e) {
        return Status::corrupt(std::string("the page's probe: ") + e.what() + " in '" +
                               text.substr(0, 200) + "'");
    }
}

std::string probedControl(const SyntheticTask& task, std::size_t goal) {
    if (goal >= task.goals.size()) return {};
    return task.goals[goal].target;
}

Result<PlannedStep> planStep(const SyntheticTask& task, std::size_t goal, const ControlProbe& probe,
                             AnswerFrame frame) {
    PlannedStep step;
    if (goal >= task.goals.size()) {
        step.answer = "finished()";
        step.kind = StepKind::Done;
        step.done = true;
        return step;
    }
    const TaskGoal& g = task.goals[goal];
    if (g.act == TaskGoal::Act::Key) {
        step.answer = "hotkey(key='" + g.text + "')";
        step.kind = StepKind::Key;
        step.finishesGoal = true;
        return step;
    }
    if (g.act == TaskGoal::Act::Type && probe.focus == g.target) {
        step.answer = "type(content=" + quotedContent(g.text) + ")";
        step.kind = StepKind::Type;
        step.finishesGoal = true;
        return step;
    }
    if (!probe.box || probe.box->width < 1 || probe.box->height < 1)
        return Status::invalidArgument(task.id + ": control " + g.target +
                                       " is missing or has no area on the page");
    if (!fullyInView(*probe.box, probe)) return scrollTowards(*probe.box, probe, frame);
    const std::optional<std::pair<int, int>> at = clickPoint(*probe.box, frame);
    if (!at)
        return Status::invalidArgument(task.id + ": control " + g.target +
                                       " is too small to click in a " +
                                       screenSizeText(frame.image) + " image");
    step.answer = "click(start_box=" + point(at->first, at->second) + ")";
    step.kind = g.naming;
    step.finishesGoal = g.act == TaskGoal::Act::Click;
    step.target = probe.box;
    return step;
}

}  // namespace iris::agent::grounding
