#pragma once
// The correct next action of a synthetic task (task_generator.h), from what the page shows now:
// the dataset writer asks it at every step, applies its answer through real input and asks
// again, so scrolls and focus follow the rendered page rather than the generator's guesses.
// Answers are UI-TARS-1.5 calls as agent/actions/uitars_parser.cpp reads them, with points in
// the pixels of the image the model is shown (AnswerFrame::image); the click point is the centre
// of the control's box as the browser measured it (its largest client rect, since a link wrapped
// over two lines has a bounding box whose centre is on neither line), rounded to the image's
// pixel grid and moved by a pixel where rounding would leave the box.
#include <cstddef>
#include <optional>
#include <string>

#include "agent/grounding/grounding_score.h"
#include "agent/grounding/task_generator.h"
#include "base/status.h"

namespace iris::agent::grounding {

// What window.__irisProbe(id) reports: the control's box (viewport pixels; none when the
// control is missing), the focused control's id and the viewport.
struct ControlProbe {
    std::optional<Rect> box;
    std::string focus;
    int viewportWidth = 0;
    int viewportHeight = 0;
};
// The probe's JSON (as evaluateJavaScript returns it).
Result<ControlProbe> parseControlProbe(const std::string& json);
// The script that asks for it.
std::string probeScript(const std::string& controlId);

// The screenshot's size and the size of the image the model sees (equal: screen pixels).
struct AnswerFrame {
    ScreenSize screen;
    ScreenSize image;
};

struct PlannedStep {
    std::string answer;  // "click(start_box='(640,412)')"
    StepKind kind = StepKind::Done;
    bool finishesGoal = false;   // the goal is met once this answer is carried out
    bool done = false;           // the answer is finished()
    std::optional<Rect> target;  // clicks: the control's measured box
};

// The step for goal `goal` of `task` (goal == goals.size(): finished()). `probe` describes the
// goal's control (ignored for keys and finished()). InvalidArgument when the control is missing
// or has no area.
Result<PlannedStep> planStep(const SyntheticTask& task, std::size_t goal, const ControlProbe& probe,
                             AnswerFrame frame);

// The control (data-iris-id) whose probe planStep needs for goal `goal`, empty when none.
std::string probedControl(const SyntheticTask& task, std::size_t goal);

}  // namespace iris::agent::grounding
