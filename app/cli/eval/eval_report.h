#pragma once
// `iris eval report`: one self-contained HTML page over a results folder (eval_results.h): the
// success rate over attempted and over all tasks (OSWorld reports both), a per-domain table,
// inline SVG histograms of steps, tokens and step latency, and one section per task with its
// trajectory (step screenshots linked relative to the page, the model's output per step) and the
// evaluator's details. Inline CSS, no scripts, nothing fetched from the network.
#include <filesystem>
#include <string>
#include <vector>

#include "app/cli/eval/eval_results.h"
#include "base/status.h"

namespace iris::app::eval {

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
