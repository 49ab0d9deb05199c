#pragma once
// `iris eval report`: one self-contained HTML page over a results folder (eval_results.h): the
// success rate over attempted and over all tasks (OSWorld reports both), a per-domain table,
// inline SVG histograms of steps, tokens and step latency, and one section per task with its
// trajectory (step screenshots linked relative to the page, the model's output per step) and the
// evaluator's details. Inline CSS, no scripts, nothing fetched from the network.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/eval/eval_results.h"
#include "base/status.h"

namespace iris::app::eval {

// The CSS the report and `iris eval compare`'s page share: page, headings, cards, tables, charts
// and the ok / bad / warn colours of scores.
inline constexpr std::string_view kReportStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; color: #1f2937; margin: 0; background: #f8fafc; }
main { max-width: 1100px; margin: 0 auto; padding: 24px; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 32px 0 8px; }
h3 { font-size: 15px; margin: 0; }
.muted { color: #6b7280; } .big { font-size: 30px; font-weight: 600; }
.cards { display: flex; gap: 16px; flex-wrap: wrap; margin: 16px 0; }
.card { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; padding: 12px 16px; min-width: 200px; }
table { border-collapse: collapse; background: #fff; width: 100%; }
th, td { border: 1px solid #e5e7eb; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f1f5f9; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; gap: 16px; flex-wrap: wrap; }
.charts svg { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; }
.ok { color: #047857; } .bad { color: #b91c1c; } .warn { color: #b45309; }
)";

struct Histogram {
    std::vector<double> edges;  // bins + 1 ascending edges; value v is in bin i when
                                // edges[i] <= v < edges[i+1] (the last bin includes its end)
    std::vector<int> counts;
};
// `bins` equal-width bins from min to max of `values` (one bin of width 1 when they are all
// equal); empty when `values` is.
Histogram histogram(const std::vector<double>& values, int bins);

// An inline <svg> bar chart of `values` in `bins` bins, titled, with the axis in `unit`.
std::string histogramSvg(const std::vector<double>& values, int bins, const std::string& title,
                         const std::string& unit);

// The page for `results` read from `dir`; links to files under `dir` are relative to
// `pageDir` (where the page will be written).
std::string reportHtml(const RunResults& results, const std::filesystem::path& dir,
                       const std::filesystem::path& pageDir);

// `target` as a link from a page in `pageDir`: relative, percent-encoded.
std::string reportLink(const std::filesystem::path& target, const std::filesystem::path& pageDir);

// Reads dir/results.json, writes the page to `output`; returns the terminal summary
// (summaryText()).
Result<std::string> writeReport(const std::filesystem::path& dir,
                                const std::filesystem::path& output);

}  // namespace iris::app::eval
