#include "app/cli/eval/eval_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "app/cli/eval/eval_report.h"
#include "base/strings.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;

// An axis or bin edge: three significant digits (latencies are fractions of a second).
std::string edge(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
}

// A difference of rates in percentage points, signed.
std::string points(double difference) {
    char text[48];
    std::snprintf(text, sizeof text, "%+.2f", difference * 100.0);
    return text;
}

TaskChange changeOf(const TaskPair& pair) {
    if (!pair.b) return TaskChange::OnlyA;
    if (!pair.a) return TaskChange::OnlyB;
    if (!pair.a->scored || !pair.b->scored) return TaskChange::Unscored;
    const bool before = taskSucceeds(*pair.a), after = taskSucceeds(*pair.b);
    if (before != after) return after ? TaskChange::Fixed : TaskChange::Broken;
    return std::fabs(pair.a->meanScore() - pair.b->meanScore()) > 1e-9 ? TaskChange::Changed
                                                                       : TaskChange::Same;
}

// The last screenshot of a trajectory: its traj.jsonl's last line that names one.
std::string finalScreenshot(const fs::path& taskDir) {
    std::ifstream in(taskDir / "traj.jsonl");
    std::string line, last;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        try {
            const nlohmann::json json = nlohmann::json::parse(line);
            if (const auto shot = json.find("screenshot_file");
                shot != json.end() && shot->is_string() && !shot->get<std::string>().empty())
                last = shot->get<std::string>();
        } catch (const nlohmann::json::exception&) {
        }
    }
    return last;
}

constexpr std::string_view kStyle = R"(
.flip { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; margin: 8px 0; padding: 8px 12px; }
.pair { display: flex; gap: 12px; } .pair figure { margin: 0; flex: 1; }
.pair img { width: 100%; height: auto; border: 1px solid #e5e7eb; }
)";

void writeHeading(std::ostream& html, const RunResults& a, const fs::path& dirA,
                  const RunResults& b, const fs::path& dirB, const Comparison& comparison) {
    const PairedDifference& d = comparison.difference;
    html << "<h1>Comparison: " << htmlEscape(a.settings.model) << " vs "
         << htmlEscape(b.settings.model)
         << "</h1><p class=\"muted\">A = " << htmlEscape(dirA.string()) << " ("
         << htmlEscape(a.settings.modelDescription)
         << ") &middot; B = " << htmlEscape(dirB.string()) << " ("
         << htmlEscape(b.settings.modelDescription) << ")</p>\n"
         << "<div class=\"cards\"><div class=\"card\"><div class=\"muted\">A: mean score over "
         << d.pairs << " paired tasks</div><div class=\"big\">" << percentText(d.meanA)
         << "</div></div><div class=\"card\"><div class=\"muted\">B: mean score over " << d.pairs
         << " paired tasks</div><div class=\"big\">" << percentText(d.meanB)
         << "</div></div><div class=\"card\"><div class=\"muted\">B &minus; A</div><div "
            "class=\"big\">"
         << points(d.mean) << " pts</div><div class=\"muted\">95% CI " << points(d.normal.low)
         << " to " << points(d.normal.high) << " (paired SE " << fixedPoint(d.stdError * 100, 2)
         << " pts); " << points(d.bootstrap.low) << " to " << points(d.bootstrap.high)
         << " (paired bootstrap)</div></div></div>\n"
         << "<p>" << comparison.fixed << " fixed (fail in A, success in B), " << comparison.broken
         << " broken, " << comparison.changed << " with another score, " << comparison.onlyA
         << " only in A, " << comparison.onlyB << " only in B, " << comparison.unscored
         << " not scored in one of them.</p>\n";
}

// Shared bins for both series, A's bar and B's bar side by side in each.
std::string overlaidHistogramSvg(const std::vector<double>& a, const std::vector<double>& b,
                                 int bins, const std::string& title, const std::string& unit) {
    constexpr int kWidth = 340, kHeight = 200, kLeft = 36, kBottom = 36, kTop = 28, kRight = 28;
    std::vector<double> both = a;
    both.insert(both.end(), b.begin(), b.end());
    const Histogram shared = histogram(both, bins);
    std::ostringstream svg;
    svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\""
        << kHeight << "\" viewBox=\"0 0 " << kWidth << ' ' << kHeight << "\" role=\"img\"><title>"
        << htmlEscape(title) << "</title><text x=\"" << kLeft
        << "\" y=\"18\" font-size=\"13\" font-weight=\"600\">" << htmlEscape(title)
        << "</text><text x=\"" << kWidth - kRight << "\" y=\"18\" font-size=\"11\" "
        << "text-anchor=\"end\"><tspan fill=\"#3b82f6\">&#9632; A</tspan> <tspan "
           "fill=\"#f97316\">&#9632; B</tspan></text>";
    if (shared.counts.empty()) return svg.str() + "<text x=\"36\" y=\"100\">no data</text></svg>";
    const std::size_t n = shared.counts.size();
    auto countsOf = [&](const std::vector<double>& values) {
        std::vector<int> counts(n, 0);
        for (const double v : values) {
            std::size_t bin = 0;
            while (bin + 1 < n && v >= shared.edges[bin + 1])
                ++bin;
            ++counts[bin];
        }
        return counts;
    };
    const std::vector<int> countsA = countsOf(a), countsB = countsOf(b);
    const int maxCount = std::max(*std::max_element(countsA.begin(), countsA.end()),
                                  *std::max_element(countsB.begin(), countsB.end()));
    const double plotW = kWidth - kLeft - kRight, plotH = kHeight - kTop - kBottom;
    const double binW = plotW / double(n);
    for (std::size_t i = 0; i < n; ++i) {
        for (int side = 0; side < 2; ++side) {
            const int count = side ? countsB[i] : countsA[i];
            const double barH = maxCount ? plotH * count / maxCount : 0;
            const double x = kLeft + binW * double(i) + binW / 2 * side;
            svg << "<rect x=\"" << fixedPoint(x + 0.5, 1) << "\" y=\""
                << fixedPoint(kTop + plotH - barH, 1) << "\" width=\""
                << fixedPoint(std::max(1.0, binW / 2 - 1), 1) << "\" height=\""
                << fixedPoint(barH, 1) << "\" fill=\"" << (side ? "#f97316" : "#3b82f6")
                << "\"><title>" << (side ? "B " : "A ") << edge(shared.edges[i]) << "-"
                << edge(shared.edges[i + 1]) << ' ' << htmlEscape(unit) << ": " << count
                << "</title></rect>";
        }
    }
    const double axisY = kTop + plotH;
    svg << "<line x1=\"" << kLeft << "\" y1=\"" << axisY << "\" x2=\"" << kWidth - kRight
        << "\" y2=\"" << axisY << "\" stroke=\"#9ca3af\"/>";
    for (const std::size_t i : {std::size_t(0), n / 2, n})
        svg << "<text x=\"" << fixedPoint(kLeft + binW * double(i), 1) << "\" y=\"" << axisY + 14
            << "\" font-size=\"10\" text-anchor=\"middle\">" << edge(shared.edges[i]) << "</text>";
    svg << "<text x=\"" << kLeft + plotW / 2 << "\" y=\"" << kHeight - 6
        << "\" font-size=\"11\" text-anchor=\"middle\" fill=\"#6b7280\">" << htmlEscape(unit)
        << " (A " << a.size() << ", B " << b.size() << " values)</text></svg>";
    return svg.str();
}

struct Distributions {
    std::vector<double> steps, tokens, latency;
};

// Every attempt that ran (as the report's histograms count them).
Distributions distributionsOf(const RunResults& results) {
    Distributions d;
    for (const TaskResult& task : results.tasks) {
        if (task.status == TaskStatus::Unsupported || (!task.score && task.steps == 0)) continue;
        d.steps.push_back(task.steps);
        d.tokens.push_back(double(task.promptTokens + task.completionTokens));
        for (const double ms : task.stepLatencyMs)
            d.latency.push_back(ms / 1000.0);
    }
    return d;
}

void writeDistributions(std::ostream& html, const RunResults& a, const RunResults& b) {
    const Distributions da = distributionsOf(a), db = distributionsOf(b);
    html << "<h2>Distributions</h2><div class=\"charts\">"
         << overlaidHistogramSvg(da.steps, db.steps, 10, "Steps per attempt", "steps")
         << overlaidHistogramSvg(da.tokens, db.tokens, 10, "Tokens per attempt",
                                 "prompt + completion tokens")
         << overlaidHistogramSvg(da.latency, db.latency, 12, "Model latency per step", "seconds")
         << "</div>\n";
}

std::string scoreCell(const std::optional<TaskFrequency>& task) {
    if (!task) return "<td class=\"muted\">absent</td>";
    if (!task->scored) return "<td class=\"warn\">not scored</td>";
    std::string text = fixedPoint(task->meanScore(), 3);
    if (task->scored > 1)
        text += " (" + std::to_string(task->successes) + "/" + std::to_string(task->scored) + ")";
    return std::string("<td class=\"num ") + (taskSucceeds(*task) ? "ok" : "bad") + "\">" + text +
           "</td>";
}

// One side of a flipped task: its final screenshot and a link to its folder.
void writeSide(std::ostream& html, const char* side, const std::string& resultDir,
               const fs::path& dir, const fs::path& pageDir) {
    html << "<figure><figcaption>" << side;
    if (resultDir.empty()) {
        html << ": no result folder</figcaption></figure>";
        return;
    }
    const fs::path taskDir = dir / resultDir;
    html << ": <a href=\"" << reportLink(taskDir / "traj.jsonl", pageDir)
         << "\">trajectory</a> &middot; <a href=\"" << reportLink(taskDir, pageDir)
         << "/\">folder</a></figcaption>";
    if (const std::string shot = finalScreenshot(taskDir); !shot.empty())
        html << "<a href=\"" << reportLink(taskDir / shot, pageDir) << "\"><img src=\""
             << reportLink(taskDir / shot, pageDir) << "\" loading=\"lazy\" alt=\"" << side
             << ": final screen\"></a>";
    else
        html << "<p class=\"muted\">no screenshot recorded</p>";
    html << "</figure>";
}

void writeFlips(std::ostream& html, const Comparison& comparison, const fs::path& dirA,
                const fs::path& dirB, const fs::path& pageDir) {
    html << "<h2>Flipped tasks</h2>";
    if (comparison.fixed + comparison.broken == 0) html << "<p class=\"muted\">none</p>";
    for (const TaskPair& pair : comparison.tasks) {
        if (pair.change != TaskChange::Fixed && pair.change != TaskChange::Broken) continue;
        const bool fixedInB = pair.change == TaskChange::Fixed;
        html << "<div class=\"flip\"><b>" << htmlEscape(pair.domain + "/" + pair.id)
             << "</b> <span class=\"" << (fixedInB ? "ok" : "bad") << "\">"
             << (fixedInB ? "fails in A, succeeds in B" : "succeeds in A, fails in B")
             << "</span> <span class=\"muted\">" << htmlEscape(pair.file) << ", A "
             << fixedPoint(pair.a->meanScore(), 3) << ", B " << fixedPoint(pair.b->meanScore(), 3)
             << "</span><div class=\"pair\">";
        writeSide(html, "A", pair.resultDirA, dirA, pageDir);
        writeSide(html, "B", pair.resultDirB, dirB, pageDir);
        html << "</div></div>\n";
    }
}

void writeTaskTable(std::ostream& html, const Comparison& comparison) {
    html << "<h2>Tasks</h2><table><tr><th>task</th><th>change</th><th>A</th><th>B</th>"
            "<th>B &minus; A</th></tr>";
    for (const TaskPair& pair : comparison.tasks) {
        const bool paired = pair.a && pair.b && pair.a->scored && pair.b->scored;
        html << "<tr><td>" << htmlEscape(pair.domain + "/" + pair.id) << "</td><td>"
             << taskChangeName(pair.change) << "</td>" << scoreCell(pair.a) << scoreCell(pair.b)
             << "<td class=\"num\">"
             << (paired ? fixedPoint(pair.b->meanScore() - pair.a->meanScore(), 3) : "&ndash;")
             << "</td></tr>";
    }
    html << "</table>\n";
}

}  // namespace

std::string_view taskChangeName(TaskChange change) {
    switch (change) {
        case TaskChange::Same:
            return "same";
        case TaskChange::Changed:
            return "changed";
        case TaskChange::Fixed:
            return "fixed";
        case TaskChange::Broken:
            return "broken";
        case TaskChange::OnlyA:
            return "only_a";
        case TaskChange::OnlyB:
            return "only_b";
        case TaskChange::Unscored:
            return "unscored";
    }
    return "same";
}

bool taskSucceeds(const TaskFrequency& task) {
    return task.scored > 0 && 2 * task.successes > task.scored;
}

Comparison compareRuns(const RunResults& a, const RunResults& b, std::uint64_t seed,
                       int resamples) {
    std::map<std::tuple<std::string, std::string, std::string>, TaskPair> pairs;
    auto add = [&](const RunResults& results, bool isB) {
        for (const TaskFrequency& task : taskFrequencies(results)) {
            TaskPair& pair = pairs[{task.domain, task.id, task.file}];
            pair.file = task.file;
            pair.domain = task.domain;
            pair.id = task.id;
            (isB ? pair.b : pair.a) = task;
            if (const TaskResult* first = results.find(task.file, 0))
                (isB ? pair.resultDirB : pair.resultDirA) = first->resultDir;
        }
    };
    add(a, false);
    add(b, true);
    Comparison comparison;
    std::vector<double> scoresA, scoresB;
    for (auto& [key, pair] : pairs) {
        pair.change = changeOf(pair);
        switch (pair.change) {
            case TaskChange::Fixed:
                ++comparison.fixed;
                break;
            case TaskChange::Broken:
                ++comparison.broken;
                break;
            case TaskChange::Changed:
                ++comparison.changed;
                break;
            case TaskChange::OnlyA:
                ++comparison.onlyA;
                break;
            case TaskChange::OnlyB:
                ++comparison.onlyB;
                break;
            case TaskChange::Unscored:
                ++comparison.unscored;
                break;
            case TaskChange::Same:
                break;
        }
        if (pair.a && pair.b && pair.a->scored && pair.b->scored) {
            scoresA.push_back(pair.a->meanScore());
            scoresB.push_back(pair.b->meanScore());
        }
        comparison.tasks.push_back(std::move(pair));
    }
    comparison.difference = pairedDifference(scoresA, scoresB, seed, resamples);
    return comparison;
}

std::string comparisonHtml(const Comparison& comparison, const RunResults& a, const fs::path& dirA,
                           const RunResults& b, const fs::path& dirB, const fs::path& pageDir) {
    std::ostringstream html;
    html << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         << "<title>Iris comparison: " << htmlEscape(a.settings.model) << " vs "
         << htmlEscape(b.settings.model) << "</title><style>" << kReportStyle << kStyle
         << "</style></head><body><main>\n";
    writeHeading(html, a, dirA, b, dirB, comparison);
    writeFlips(html, comparison, dirA, dirB, pageDir);
    writeDistributions(html, a, b);
    writeTaskTable(html, comparison);
    html << "</main></body></html>\n";
    return html.str();
}

std::string comparisonText(const Comparison& comparison, const std::string& nameA,
                           const std::string& nameB) {
    const PairedDifference& d = comparison.difference;
    std::ostringstream out;
    out << "A = " << nameA << ": " << percentText(d.meanA) << "; B = " << nameB << ": "
        << percentText(d.meanB) << " (mean score over " << d.pairs << " paired tasks)\n"
        << "B - A: " << points(d.mean) << " points, 95% CI " << points(d.normal.low) << " to "
        << points(d.normal.high) << " (paired normal), " << points(d.bootstrap.low) << " to "
        << points(d.bootstrap.high) << " (paired bootstrap)\n"
        << comparison.fixed << " fixed, " << comparison.broken << " broken, " << comparison.changed
        << " changed score, " << comparison.onlyA << " only in A, " << comparison.onlyB
        << " only in B, " << comparison.unscored << " not scored in one\n";
    for (const TaskPair& pair : comparison.tasks) {
        if (pair.change == TaskChange::Same || pair.change == TaskChange::Changed) continue;
        out << "  " << taskChangeName(pair.change) << ' ' << pair.file << '\n';
    }
    return out.str();
}

Result<std::string> writeComparison(const fs::path& dirA, const fs::path& dirB,
                                    const fs::path& output) {
    Result<RunResults> a = loadRunResults(dirA);
    IRIS_RETURN_IF_ERROR(a.status());
    Result<RunResults> b = loadRunResults(dirB);
    IRIS_RETURN_IF_ERROR(b.status());
    const Comparison comparison = compareRuns(*a, *b);
    const fs::path pageDir = output.has_parent_path() ? output.parent_path() : fs::path(".");
    const std::string page = comparisonHtml(comparison, *a, dirA, *b, dirB, pageDir);
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    if (!out) return Status::ioError(output.string() + ": cannot write");
    out << page;
    if (!out.flush()) return Status::ioError(output.string() + ": write failed");
    return comparisonText(comparison, dirA.string(), dirB.string());
}

}  // namespace iris::app::eval
