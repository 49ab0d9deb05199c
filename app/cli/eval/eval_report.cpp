#include "app/cli/eval/eval_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli/eval/eval_stats.h"
#include "base/strings.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;

std::string shortNumber(double value) {
    char text[32];
    if (std::fabs(value) >= 10000)
        std::snprintf(text, sizeof text, "%.0fk", value / 1000);
    else if (std::fabs(value) >= 100 || value == std::floor(value))
        std::snprintf(text, sizeof text, "%.0f", value);
    else
        std::snprintf(text, sizeof text, "%.2g", value);
    return text;
}

std::string anchorOf(const TaskResult& task) {
    std::string anchor = "task-";
    for (const char c : task.file)
        anchor += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    if (task.attempt) anchor += "-attempt-" + std::to_string(task.attempt);
    return anchor;
}

// "domain/id", with " #r" for attempt r > 0 of --repeat.
std::string labelOf(const TaskResult& task) {
    return task.domain + "/" + task.id +
           (task.attempt ? " #" + std::to_string(task.attempt) : std::string());
}

// One line of traj.jsonl per action (agent/recording/osworld_export.h).
std::vector<nlohmann::json> readTrajectory(const fs::path& file) {
    std::vector<nlohmann::json> lines;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        try {
            lines.push_back(nlohmann::json::parse(line));
        } catch (const nlohmann::json::exception&) {
            lines.push_back({{"error", "unreadable line"}});
        }
    }
    return lines;
}

std::string relativeLink(const fs::path& target, const fs::path& pageDir) {
    std::error_code error;
    const fs::path base = fs::weakly_canonical(pageDir, error);
    const fs::path full = fs::weakly_canonical(target, error);
    fs::path relative = full.lexically_relative(base);
    if (relative.empty()) relative = full;
    // Percent-encode what a URL path may not hold as it is.
    std::string out;
    for (const unsigned char c : relative.generic_string()) {
        if (std::isalnum(c) || std::string_view("/-_.~@").find(char(c)) != std::string_view::npos) {
            out += char(c);
        } else {
            char hex[4];
            std::snprintf(hex, sizeof hex, "%%%02X", c);
            out += hex;
        }
    }
    return out;
}

constexpr std::string_view kStyle = R"(
details.task { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; margin: 8px 0; padding: 8px 12px; }
details.task summary { cursor: pointer; }
.step { display: flex; gap: 12px; border-top: 1px solid #f1f5f9; padding: 8px 0; }
.step img { width: 320px; height: auto; border: 1px solid #e5e7eb; flex: none; }
.step pre { white-space: pre-wrap; word-break: break-word; margin: 0; font-size: 12px; }
)";

std::string scoreClass(const TaskResult& task) {
    if (!task.score) return task.status == TaskStatus::Unsupported ? "warn" : "bad";
    return *task.score >= 1.0 ? "ok" : (*task.score > 0 ? "warn" : "bad");
}

std::string scoreText(const TaskResult& task) {
    return task.score ? fixedPoint(*task.score, 3) : std::string(taskStatusName(task.status));
}

// The report's sections, top to bottom: reportHtml() writes them in this order.

void writeRunHeading(std::ostream& html, const RunSettings& settings) {
    html << "<h1>Evaluation of " << htmlEscape(settings.model) << "</h1>"
         << "<p class=\"muted\">" << htmlEscape(settings.modelDescription) << " &middot; "
         << "tasks " << htmlEscape(settings.tasksPath) << " &middot; action format "
         << htmlEscape(settings.actionFormat) << " &middot; max steps "
         << (settings.maxSteps > 0 ? std::to_string(settings.maxSteps) : std::string("per task"))
         << " &middot; sleep after action " << shortNumber(settings.sleepAfterActionS)
         << " s &middot; parallel " << settings.parallel << "</p>\n";
}

void writeRateCards(std::ostream& html, const RunSummary& summary) {
    html << "<div class=\"cards\">"
         << "<div class=\"card\"><div class=\"muted\">Success rate over attempted tasks</div>"
         << "<div class=\"big\">" << percentText(summary.rateAttempted()) << "</div>"
         << "<div class=\"muted\">" << shortNumber(summary.scoreSum) << " / " << summary.attempted
         << " attempted (OSWorld's show_result)</div></div>"
         << "<div class=\"card\"><div class=\"muted\">Success rate over all tasks</div>"
         << "<div class=\"big\">" << percentText(summary.rateAll()) << "</div>"
         << "<div class=\"muted\">" << shortNumber(summary.scoreSum) << " / " << summary.tasks
         << " tasks; not attempted count as 0</div></div>"
         << "<div class=\"card\"><div class=\"muted\">Not scored</div><div class=\"big\">"
         << summary.tasks - summary.attempted << "</div><div class=\"muted\">"
         << summary.unsupported << " unsupported, " << summary.errors << " errors, "
         << summary.stopped << " stopped</div></div></div>\n";
}

void writeDomainTable(std::ostream& html, const RunSummary& summary) {
    html << "<h2>Per domain</h2><table><tr><th>domain</th><th>tasks</th><th>attempted</th>"
            "<th>score sum</th><th>success (attempted)</th><th>success (all)</th></tr>";
    for (const DomainSummary& domain : summary.domains) {
        html << "<tr><td>" << htmlEscape(domain.domain) << "</td><td class=\"num\">" << domain.tasks
             << "</td><td class=\"num\">" << domain.attempted << "</td><td class=\"num\">"
             << fixedPoint(domain.scoreSum, 3) << "</td><td class=\"num\">"
             << (domain.attempted ? percentText(domain.scoreSum / domain.attempted) : "&ndash;")
             << "</td><td class=\"num\">"
             << (domain.tasks ? percentText(domain.scoreSum / domain.tasks) : "&ndash;")
             << "</td></tr>";
    }
    html << "</table>\n";
}

// Histograms of the tasks that ran (neither unsupported nor failed before their first step).
void writeDistributions(std::ostream& html, const RunResults& results) {
    std::vector<double> steps, tokens, latency;
    for (const TaskResult& task : results.tasks) {
        if (task.status == TaskStatus::Unsupported || (!task.score && task.steps == 0)) continue;
        steps.push_back(task.steps);
        tokens.push_back(double(task.promptTokens + task.completionTokens));
        for (const double ms : task.stepLatencyMs)
            latency.push_back(ms / 1000.0);
    }
    html << "<h2>Distributions</h2><div class=\"charts\">"
         << histogramSvg(steps, 10, "Steps per task", "steps")
         << histogramSvg(tokens, 10, "Tokens per task", "prompt + completion tokens")
         << histogramSvg(latency, 12, "Model latency per step", "seconds") << "</div>\n";
}

void writeTaskTable(std::ostream& html, const RunResults& results) {
    html << "<h2>Tasks</h2><table><tr><th>task</th><th>status</th><th>score</th><th>steps</th>"
            "<th>tokens</th><th>time</th><th>note</th></tr>";
    for (const TaskResult& task : results.tasks) {
        html << "<tr><td><a href=\"#" << anchorOf(task) << "\">" << htmlEscape(labelOf(task))
             << "</a></td><td>" << taskStatusName(task.status) << "</td><td class=\"num "
             << scoreClass(task) << "\">" << scoreText(task) << "</td><td class=\"num\">"
             << task.steps << "</td><td class=\"num\">" << task.promptTokens + task.completionTokens
             << "</td><td class=\"num\">" << fixedPoint(task.durationS, 1) << " s</td><td>"
             << htmlEscape(task.error.empty() ? task.reason : task.error);
        for (const std::string& flag : task.flags)
            html << "<br><span class=\"bad\">flagged: " << htmlEscape(flag) << "</span>";
        html << "</td></tr>";
    }
    html << "</table>\n";
}

// The evaluator's per-metric table from the task's evaluation.json, when there is one.
void writeMetrics(std::ostream& html, const fs::path& taskDir) {
    std::ifstream evaluation(taskDir / "evaluation.json");
    if (!evaluation) return;
    try {
        const nlohmann::json details = nlohmann::json::parse(evaluation);
        html << "<table><tr><th>#</th><th>func</th><th>result</th><th>expected</th>"
                "<th>score</th><th>note</th></tr>";
        for (const nlohmann::json& metric : details.value("metrics", nlohmann::json::array())) {
            const nlohmann::json score = metric.value("score", nlohmann::json());
            html << "<tr><td>" << metric.value("index", 0) << "</td><td>"
                 << htmlEscape(metric.value("func", "")) << "</td><td>"
                 << htmlEscape(metric.value("result_type", "") + ": " + metric.value("result", ""))
                 << "</td><td>"
                 << htmlEscape(metric.value("expected_type", "") + ": " +
                               metric.value("expected", ""))
                 << "</td><td class=\"num\">"
                 << (score.is_number() ? fixedPoint(score.get<double>(), 3) : "&ndash;")
                 << "</td><td>" << htmlEscape(metric.value("note", "")) << "</td></tr>";
        }
        html << "</table>";
    } catch (const nlohmann::json::exception&) {
        html << "<p class=\"bad\">evaluation.json is not readable</p>";
    }
}

// One row per line of the task's traj.jsonl: the screenshot, the action, and the model's answer
// once per step.
void writeTrajectory(std::ostream& html, const fs::path& taskDir, const fs::path& pageDir) {
    const std::vector<nlohmann::json> trajectory = readTrajectory(taskDir / "traj.jsonl");
    int shownStep = -1;
    for (const nlohmann::json& line : trajectory) {
        if (line.contains("error") || line.contains("Error")) {
            html << "<p class=\"bad\">" << htmlEscape(line.dump()) << "</p>";
            continue;
        }
        const int step = line.value("step_num", 0);
        const std::string shot = line.value("screenshot_file", "");
        const nlohmann::json action = line.value("action", nlohmann::json());
        html << "<div class=\"step\">";
        if (!shot.empty())
            html << "<a href=\"" << relativeLink(taskDir / shot, pageDir) << "\"><img src=\""
                 << relativeLink(taskDir / shot, pageDir)
                 << "\" loading=\"lazy\" alt=\"screen after step " << step << "\"></a>";
        html << "<div><b>step " << step << "</b> <code>"
             << htmlEscape(action.is_string() ? action.get<std::string>() : action.dump())
             << "</code>";
        if (step != shownStep) {  // the response is shared by a step's actions
            const nlohmann::json response = line.value("response", nlohmann::json());
            html << "<pre>"
                 << htmlEscape(response.is_string() ? response.get<std::string>()
                                                    : response.dump(2))
                 << "</pre>";
            shownStep = step;
        }
        html << "</div></div>";
    }
    if (trajectory.empty()) html << "<p class=\"muted\">no trajectory recorded</p>";
}

// A task's section: its outcome, the evaluator's details and the trajectory.
void writeTaskDetails(std::ostream& html, const TaskResult& task, const fs::path& dir,
                      const fs::path& pageDir) {
    html << "<details class=\"task\" id=\"" << anchorOf(task) << "\"><summary><h3 "
         << "style=\"display:inline\">" << htmlEscape(labelOf(task)) << "</h3> <span class=\""
         << scoreClass(task) << "\">" << scoreText(task) << "</span> <span class=\"muted\">"
         << htmlEscape(task.file) << ", " << task.steps << " steps, loop "
         << htmlEscape(task.loopEnd)
         << (task.session ? ", session " + std::to_string(task.session) : std::string())
         << (task.endpoint.empty() ? std::string() : ", endpoint " + htmlEscape(task.endpoint))
         << "</span></summary>";
    if (!task.error.empty()) html << "<p class=\"bad\">" << htmlEscape(task.error) << "</p>";
    for (const std::string& flag : task.flags)  // runaway_loop, reward_hacking (hygiene.h)
        html << "<p class=\"bad\">Flagged, scored 0: " << htmlEscape(flag) << "</p>";
    if (!task.reason.empty()) html << "<p>Evaluator: " << htmlEscape(task.reason) << "</p>";
    if (!task.message.empty()) html << "<p>Agent: " << htmlEscape(task.message) << "</p>";
    if (task.resultDir.empty()) {
        html << "</details>\n";
        return;
    }
    const fs::path taskDir = dir / task.resultDir;
    writeMetrics(html, taskDir);
    writeTrajectory(html, taskDir, pageDir);
    if (fs::exists(taskDir / "recording.mp4"))
        html << "<p><a href=\"" << relativeLink(taskDir / "recording.mp4", pageDir)
             << "\">recording.mp4</a></p>";
    html << "</details>\n";
}

}  // namespace

Histogram histogram(const std::vector<double>& values, int bins) {
    Histogram h;
    if (values.empty() || bins < 1) return h;
    const auto [lowIt, highIt] = std::minmax_element(values.begin(), values.end());
    double low = *lowIt, high = *highIt;
    if (high == low) {
        bins = 1;
        high = low + 1;
    }
    const double width = (high - low) / bins;
    for (int i = 0; i <= bins; ++i)
        h.edges.push_back(i == bins ? high : low + width * i);
    h.counts.assign(std::size_t(bins), 0);
    for (const double v : values) {
        int bin = int((v - low) / width);
        bin = std::clamp(bin, 0, bins - 1);
        // Rounding may put a value on a bin edge into the bin below.
        while (bin + 1 < bins && v >= h.edges[std::size_t(bin) + 1])
            ++bin;
        ++h.counts[std::size_t(bin)];
    }
    return h;
}

std::string histogramSvg(const std::vector<double>& values, int bins, const std::string& title,
                         const std::string& unit) {
    constexpr int kWidth = 340, kHeight = 200, kLeft = 36, kBottom = 36, kTop = 28, kRight = 28;
    std::ostringstream svg;
    svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\""
        << kHeight << "\" viewBox=\"0 0 " << kWidth << ' ' << kHeight << "\" role=\"img\">"
        << "<title>" << htmlEscape(title) << "</title>"
        << "<text x=\"" << kLeft << "\" y=\"18\" font-size=\"13\" font-weight=\"600\">"
        << htmlEscape(title) << "</text>";
    const Histogram h = histogram(values, bins);
    if (h.counts.empty()) {
        svg << "<text x=\"" << kLeft
            << "\" y=\"100\" font-size=\"12\" fill=\"#6b7280\">no "
               "data</text></svg>";
        return svg.str();
    }
    const int maxCount = *std::max_element(h.counts.begin(), h.counts.end());
    const double plotW = kWidth - kLeft - kRight, plotH = kHeight - kTop - kBottom;
    const double barW = plotW / double(h.counts.size());
    for (std::size_t i = 0; i < h.counts.size(); ++i) {
        const double barH = maxCount ? plotH * h.counts[i] / maxCount : 0;
        const double x = kLeft + barW * double(i);
        const double y = kTop + plotH - barH;
        svg << "<rect x=\"" << fixedPoint(x + 1, 1) << "\" y=\"" << fixedPoint(y, 1)
            << "\" width=\"" << fixedPoint(std::max(1.0, barW - 2), 1) << "\" height=\""
            << fixedPoint(barH, 1) << "\" fill=\"#3b82f6\"><title>" << shortNumber(h.edges[i])
            << "-" << shortNumber(h.edges[i + 1]) << ' ' << htmlEscape(unit) << ": " << h.counts[i]
            << "</title></rect>";
        if (h.counts[i] > 0)
            svg << "<text x=\"" << fixedPoint(x + barW / 2, 1) << "\" y=\"" << fixedPoint(y - 3, 1)
                << "\" font-size=\"10\" text-anchor=\"middle\">" << h.counts[i] << "</text>";
    }
    const double axisY = kTop + plotH;
    svg << "<line x1=\"" << kLeft << "\" y1=\"" << axisY << "\" x2=\"" << kWidth - kRight
        << "\" y2=\"" << axisY << "\" stroke=\"#9ca3af\"/>";
    // Edge labels: first, middle and last.
    const std::size_t n = h.edges.size();
    for (const std::size_t i : {std::size_t(0), n / 2, n - 1}) {
        svg << "<text x=\"" << fixedPoint(kLeft + barW * double(i), 1) << "\" y=\"" << axisY + 14
            << "\" font-size=\"10\" text-anchor=\"middle\">" << shortNumber(h.edges[i])
            << "</text>";
    }
    svg << "<text x=\"" << kLeft + plotW / 2 << "\" y=\"" << kHeight - 6
        << "\" font-size=\"11\" text-anchor=\"middle\" fill=\"#6b7280\">" << htmlEscape(unit)
        << " (" << values.size() << " values)</text></svg>";
    return svg.str();
}

std::string reportHtml(const RunResults& results, const fs::path& dir, const fs::path& pageDir) {
    const RunSummary summary = summarize(results);
    std::ostringstream html;
    html << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         << "<title>Iris evaluation: " << htmlEscape(results.settings.model) << "</title><style>"
         << kReportStyle << kStyle << "</style></head><body><main>\n";
    writeRunHeading(html, results.settings);
    writeRateCards(html, summary);
    html << successRateHtml(repeatStats(results));  // eval_stats.h: CI, pass@k, runs
    writeDomainTable(html, summary);
    writeDistributions(html, results);
    writeTaskTable(html, results);
    for (const TaskResult& task : results.tasks)
        writeTaskDetails(html, task, dir, pageDir);
    html << "</main></body></html>\n";
    return html.str();
}

std::string reportLink(const fs::path& target, const fs::path& pageDir) {
    return relativeLink(target, pageDir);
}

Result<std::string> writeReport(const fs::path& dir, const fs::path& output) {
    Result<RunResults> results = loadRunResults(dir);
    IRIS_RETURN_IF_ERROR(results.status());
    const fs::path pageDir = output.has_parent_path() ? output.parent_path() : fs::path(".");
    const std::string page = reportHtml(*results, dir, pageDir);
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    if (!out) return Status::ioError(output.string() + ": cannot write");
    out << page;
    if (!out.flush()) return Status::ioError(output.string() + ": write failed");
    return summaryText(*results);
}

}  // namespace iris::app::eval
