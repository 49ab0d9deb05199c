#pragma once
// Runaway loops: an agent that does the same thing on the same screen again and again (clicking
// a button that does nothing, pressing a key that changes nothing) until its step limit. The eval
// runner stops such a task after `limit` repeats and flags it (app/cli/eval/task_runner.cpp).
//
// "The same screen" is judged on a coarse grayscale print of the screenshot: the screen is cut
// into cells of about 20 x 20 pixels (64 columns), each cell's mean gray level is compared, and
// two screens are the same when at most 1% of the cells moved by more than 16 levels (of 255).
// A blinking caret or a ticking clock touches a handful of cells, and noise in the rendering none;
// a page that scrolled, navigated or opened a dialog moves hundreds. (SSIM over the whole image,
// agent/visual/ssim.h, would also ignore a caret, but its mean hides where the change is and it
// costs a full-resolution pass per step; the cell print is a few microseconds and easy to state.)
// The print of each repeat is compared with the first screen of the streak, so that a screen
// drifting a little every step still counts as a change once the drift adds up.
//
// "The same action": the step's parsed actions (agent/actions/action.h) in their JSON form, which
// is canonical (fields sorted by name); a click at (640, 400) and one at (641, 400) differ.
// Steps without actions (answers that did not parse) are not actions: they end a streak.
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "agent/actions/action.h"

namespace iris::agent {

// The coarse grayscale print of a screenshot (8-bit BGR, BGRA or gray); empty for an empty image.
cv::Mat screenPrint(const cv::Mat& screenshot);

// Whether two prints show the same screen (see above). Prints of different sizes never do.
bool sameScreen(const cv::Mat& print, const cv::Mat& other);

// The step's actions as one canonical string (their JSON forms joined by newlines).
std::string canonicalActions(const std::vector<Action>& actions);

class RunawayDetector {
public:
    static constexpr int kDefaultLimit = 5;

    // `limit` repeats in a row make a runaway loop; 0 (or less) never reports one.
    explicit RunawayDetector(int limit = kDefaultLimit) : m_limit(limit) {}

    // One step: the screenshot its actions were chosen on, and the actions. Returns what was
    // seen ("click(640, 400) repeated 5 times on an unchanged screen") on the step that makes
    // the limit-th repeat, and on every further repeat.
    std::optional<std::string> observe(const cv::Mat& screenshot,
                                       const std::vector<Action>& actions);

    int repeats() const { return m_repeats; }  // the current streak's length (0: none)

private:
    int m_limit;
    int m_repeats = 0;
    cv::Mat m_firstPrint;   // the streak's first screen
    std::string m_actions;  // the streak's actions, canonical
    std::string m_described;
};

}  // namespace iris::agent
