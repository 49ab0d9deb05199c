#pragma once
// The progress of an evaluation run on stderr: a bar with counts, the running success rate and
// an ETA, redrawn in place on a terminal and printed as plain lines otherwise (logs, CI).
// Thread-safe: workers report from their own threads.
#include <chrono>
#include <iosfwd>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace iris::app::eval {

// Seconds left for `remaining` tasks when tasks so far took `durations` seconds each and
// `parallel` run at once: mean duration x remaining / min(parallel, remaining). nullopt before
// the first task has finished (no basis for an estimate).
std::optional<double> estimateRemainingSeconds(const std::vector<double>& durations, int remaining,
                                               int parallel);

// "42s", "3m07s", "1h02m".
std::string formatDuration(double seconds);

// "[#######.............]" of `width` cells for done/total.
std::string progressBar(int done, int total, int width);

class Progress {
public:
    // `total` tasks to run now (those skipped on resume not counted); `tty`: redraw in place.
    Progress(std::ostream& out, int total, int parallel, bool tty);

    void started(const std::string& task);
    // One task finished: its label, the score (nullopt: not scored) and its wall time.
    void finished(const std::string& task, std::optional<double> score, double seconds,
                  const std::string& note);
    // Ends the in-place line.
    void close();

    // The line the bar shows now (for tests).
    std::string line() const;

private:
    std::string lineLocked() const;

    std::ostream& m_out;
    int m_total;
    int m_parallel;
    bool m_tty;
    mutable std::mutex m_mutex;
    int m_done = 0;
    int m_running = 0;
    double m_scoreSum = 0;
    int m_scored = 0;
    std::vector<double> m_durations;
    bool m_lineOpen = false;
};

}  // namespace iris::app::eval
