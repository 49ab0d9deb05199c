#include "agent/runaway_detector.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace iris::agent {
namespace {

constexpr int kPrintColumns = 64;          // cells across: ~20 px at 1280 wide
constexpr double kCellTolerance = 16;      // gray levels a cell may move and stay "the same"
constexpr double kChangedFraction = 0.01;  // cells allowed to move more than that

}  // namespace

cv::Mat screenPrint(const cv::Mat& screenshot) {
    if (screenshot.empty()) return {};
    cv::Mat gray;
    if (screenshot.channels() == 4) {
        cv::cvtColor(screenshot, gray, cv::COLOR_BGRA2GRAY);
    } else if (screenshot.channels() == 3) {
        cv::cvtColor(screenshot, gray, cv::COLOR_BGR2GRAY);
    } else {
        gray = screenshot;
    }
    const int columns = std::min(kPrintColumns, gray.cols);
    const int rows = std::max(1, int(std::lround(double(gray.rows) * columns / gray.cols)));
    cv::Mat print;
    // INTER_AREA: each cell is the mean of the pixels it covers.
    cv::resize(gray, print, cv::Size(columns, rows), 0, 0, cv::INTER_AREA);
    return print;
}

bool sameScreen(const cv::Mat& print, const cv::Mat& other) {
    if (print.empty() || other.empty() || print.size() != other.size() ||
        print.type() != other.type())
        return false;
    cv::Mat difference;
    cv::absdiff(print, other, difference);
    const int changed = cv::countNonZero(difference > kCellTolerance);
    return changed <= kChangedFraction * double(print.total());
}

std::string canonicalActions(const std::vector<Action>& actions) {
    std::string out;
    for (const Action& action : actions)
        out += (out.empty() ? "" : "\n") + actionToJson(action).dump();
    return out;
}

std::optional<std::string> RunawayDetector::observe(const cv::Mat& screenshot,
                                                    const std::vector<Action>& actions) {
    if (actions.empty()) {
        m_repeats = 0;
        return std::nullopt;
    }
    cv::Mat print = screenPrint(screenshot);
    std::string canonical = canonicalActions(actions);
    if (m_repeats > 0 && canonical == m_actions && sameScreen(m_firstPrint, print)) {
        ++m_repeats;
    } else {
        m_repeats = 1;
        m_firstPrint = std::move(print);
        m_actions = std::move(canonical);
        m_described.clear();
        for (const Action& action : actions)
            m_described += (m_described.empty() ? "" : "; ") + describe(action);
    }
    if (m_limit <= 0 || m_repeats < m_limit) return std::nullopt;
    return m_described + " repeated " + std::to_string(m_repeats) + " times on an unchanged screen";
}

}  // namespace iris::agent
