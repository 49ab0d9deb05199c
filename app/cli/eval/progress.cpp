#include "app/cli/eval/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <ostream>

namespace iris::app::eval {

std::optional<double> estimateRemainingSeconds(const std::vector<double>& durations, int remaining,
                                               int parallel) {
    if (remaining <= 0) return 0.0;
    if (durations.empty()) return std::nullopt;
    const double mean =
        std::accumulate(durations.begin(), durations.end(), 0.0) / double(durations.size());
    const int lanes = std::max(1, std::min(parallel, remaining));
    return mean * remaining / lanes;
}

std::string formatDuration(double seconds) {
    if (!(seconds >= 0)) seconds = 0;
    const long total = std::lround(seconds);
    char text[32];
    if (total < 60) {
        std::snprintf(text, sizeof text, "%lds", total);
    } else if (total < 3600) {
        std::snprintf(text, sizeof text, "%ldm%02lds", total / 60, total % 60);
    } else {
        std::snprintf(text, sizeof text, "%ldh%02ldm", total / 3600, (total % 3600) / 60);
    }
    return text;
}

std::string progressBar(int done, int total, int width) {
    const int filled = total > 0 ? std::clamp(done * width / total, 0, width) : 0;
    return "[" + std::string(std::size_t(filled), '#') +
           std::string(std::size_t(width - filled), '.') + "]";
}

Progress::Progress(std::ostream& out, int total, int parallel, bool tty)
    : m_out(out), m_total(total), m_parallel(parallel), m_tty(tty) {}

std::string Progress::lineLocked() const {
    char rate[48] = "";
    if (m_scored > 0)
        std::snprintf(rate, sizeof rate, ", success %.1f%%", 100.0 * m_scoreSum / m_scored);
    std::string line = progressBar(m_done, m_total, 24) + " " + std::to_string(m_done) + "/" +
                       std::to_string(m_total) + " tasks" + rate;
    if (m_running > 0) line += ", " + std::to_string(m_running) + " running";
    const std::optional<double> eta =
        estimateRemainingSeconds(m_durations, m_total - m_done, m_parallel);
    line += eta ? ", ETA " + formatDuration(*eta) : std::string(", ETA --");
    return line;
}

std::string Progress::line() const {
    std::lock_guard lock(m_mutex);
    return lineLocked();
}

void Progress::started(const std::string& task) {
    std::lock_guard lock(m_mutex);
    ++m_running;
    if (m_tty) {
        m_out << "\r\033[K" << lineLocked() << std::flush;
        m_lineOpen = true;
    } else {
        m_out << "start " << task << '\n' << std::flush;
    }
}

void Progress::finished(const std::string& task, std::optional<double> score, double seconds,
                        const std::string& note) {
    std::lock_guard lock(m_mutex);
    --m_running;
    ++m_done;
    m_durations.push_back(seconds);
    if (score) {
        ++m_scored;
        m_scoreSum += *score;
    }
    char scoreText[32] = "not scored";
    if (score) std::snprintf(scoreText, sizeof scoreText, "score %g", *score);
    std::string message = task + ": " + scoreText + " in " + formatDuration(seconds);
    if (!note.empty()) message += " (" + note + ")";
    if (m_tty) {
        // The finished task's line scrolls up; the bar stays at the bottom.
        m_out << "\r\033[K" << message << '\n' << lineLocked() << std::flush;
        m_lineOpen = true;
    } else {
        m_out << message << '\n' << lineLocked() << '\n' << std::flush;
    }
}

void Progress::close() {
    std::lock_guard lock(m_mutex);
    if (m_lineOpen) m_out << '\n' << std::flush;
    m_lineOpen = false;
}

}  // namespace iris::app::eval
