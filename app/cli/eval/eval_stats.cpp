#include "app/cli/eval/eval_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <sstream>

#include "base/strings.h"

namespace iris::app::eval {
namespace {

// The q-quantile of sorted values, interpolating linearly between order statistics.
double quantile(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return 0;
    const double position = q * double(sorted.size() - 1);
    const auto below = std::size_t(std::floor(position));
    const std::size_t above = std::min(below + 1, sorted.size() - 1);
    const double weight = position - double(below);
    return sorted[below] + (sorted[above] - sorted[below]) * weight;
}

}  // namespace

bool succeeded(const TaskResult& result) {
    return result.score && *result.score >= 1.0 - 1e-9;
}

Interval wilsonInterval(std::int64_t successes, std::int64_t trials, double z) {
    if (trials <= 0) return {};
    const auto n = static_cast<long double>(trials);
    const long double p = static_cast<long double>(successes) / n;
    const long double z2 = static_cast<long double>(z) * z;
    const long double denominator = 1 + z2 / n;
    const long double center = (p + z2 / (2 * n)) / denominator;
    const long double half =
        static_cast<long double>(z) / denominator * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
    // The bounds are exactly 0 at c = 0 and 1 at c = n; rounding would leave a hair off.
    return {successes <= 0 ? 0.0 : double(std::max<long double>(0, center - half)),
            successes >= trials ? 1.0 : double(std::min<long double>(1, center + half))};
}

double passHatK(int n, int c, int k) {
    if (k < 1 || k > n || c < 0 || c > n) return 0;
    // C(c,k)/C(n,k) = prod_{i<k} (c-i)/(n-i): zero as soon as c < k.
    long double product = 1;
    for (int i = 0; i < k; ++i)
        product *= static_cast<long double>(c - i) / static_cast<long double>(n - i);
    return double(std::max<long double>(0, product));
}

double passAtK(int n, int c, int k) {
    if (k < 1 || k > n || c < 0 || c > n) return 0;
    // C(n-c,k)/C(n,k): every one of the k draws is a failure.
    return 1.0 - passHatK(n, n - c, k);
}

double sampleVariance(const std::vector<double>& values) {
    if (values.size() < 2) return 0;
    long double mean = 0;
    for (const double v : values)
        mean += v;
    mean /= values.size();
    long double squares = 0;
    for (const double v : values)
        squares += (v - mean) * (v - mean);
    return double(squares / (values.size() - 1));
}

Interval bootstrapRatio(const std::vector<RatioUnit>& units, std::uint64_t seed, int resamples) {
    if (units.empty() || resamples < 1) return {};
    std::mt19937_64 random(seed);
    std::vector<double> statistics;
    statistics.reserve(std::size_t(resamples));
    for (int r = 0; r < resamples; ++r) {
        long double numerator = 0, denominator = 0;
        for (std::size_t i = 0; i < units.size(); ++i) {
            const RatioUnit& unit = units[random() % units.size()];
            numerator += unit.numerator;
            denominator += unit.denominator;
        }
        if (denominator > 0) statistics.push_back(double(numerator / denominator));
    }
    std::sort(statistics.begin(), statistics.end());
    return {quantile(statistics, 0.025), quantile(statistics, 0.975)};
}

std::vector<TaskFrequency> taskFrequencies(const RunResults& results) {
    std::vector<TaskFrequency> tasks;
    std::map<std::string, std::size_t> index;
    for (const TaskResult& result : results.tasks) {
        auto [it, added] = index.emplace(result.file, tasks.size());
        if (added) tasks.push_back({result.file, result.domain, result.id});
        TaskFrequency& task = tasks[it->second];
        ++task.attempts;
        if (!result.score) continue;
        ++task.scored;
        task.scoreSum += *result.score;
        if (succeeded(result)) ++task.successes;
    }
    return tasks;
}

RepeatStats repeatStats(const RunResults& results, std::uint64_t seed, int resamples) {
    RepeatStats stats;
    stats.repeat = std::max(1, results.settings.repeat);
    for (const TaskResult& result : results.tasks)
        stats.repeat = std::max(stats.repeat, result.attempt + 1);
    stats.tasks = taskFrequencies(results);

    std::vector<RatioUnit> units;
    for (const TaskFrequency& task : stats.tasks) {
        stats.scored += task.scored;
        stats.successes += task.successes;
        if (task.scored) units.push_back({double(task.successes), double(task.scored)});
    }
    stats.rate = stats.scored ? double(stats.successes) / double(stats.scored) : 0;
    stats.wilson = wilsonInterval(stats.successes, stats.scored);
    stats.bootstrap = bootstrapRatio(units, seed, resamples);

    for (int k = 1; k <= stats.repeat; ++k) {
        PassK pass{k};
        for (const TaskFrequency& task : stats.tasks) {
            if (task.scored < k) continue;
            pass.passAt += passAtK(task.scored, task.successes, k);
            pass.passHat += passHatK(task.scored, task.successes, k);
            ++pass.tasks;
        }
        if (pass.tasks) {
            pass.passAt /= pass.tasks;
            pass.passHat /= pass.tasks;
        }
        stats.passK.push_back(pass);
    }

    stats.runs.resize(std::size_t(stats.repeat));
    for (int r = 0; r < stats.repeat; ++r)
        stats.runs[std::size_t(r)].attempt = r;
    for (const TaskResult& result : results.tasks) {
        if (!result.score) continue;
        RunRate& run = stats.runs[std::size_t(result.attempt)];
        ++run.scored;
        if (succeeded(result)) ++run.successes;
    }
    std::vector<double> rates;
    for (const RunRate& run : stats.runs)
        if (run.scored) rates.push_back(run.rate());
    stats.runVariance = sampleVariance(rates);
    stats.runStdDev = std::sqrt(stats.runVariance);
    return stats;
}

PairedDifference pairedDifference(const std::vector<double>& a, const std::vector<double>& b,
                                  std::uint64_t seed, int resamples) {
    PairedDifference out;
    const std::size_t m = std::min(a.size(), b.size());
    out.pairs = int(m);
    if (m == 0) return out;
    std::vector<double> differences;
    std::vector<RatioUnit> units;
    long double sumA = 0, sumB = 0;
    for (std::size_t i = 0; i < m; ++i) {
        sumA += a[i];
        sumB += b[i];
        differences.push_back(b[i] - a[i]);
        units.push_back({b[i] - a[i], 1});
    }
    out.meanA = double(sumA / m);
    out.meanB = double(sumB / m);
    out.mean = double((sumB - sumA) / m);
    out.stdError = std::sqrt(sampleVariance(differences) / double(m));
    out.normal = {out.mean - kZ95 * out.stdError, out.mean + kZ95 * out.stdError};
    out.bootstrap = bootstrapRatio(units, seed, resamples);
    return out;
}

std::string repeatStatsText(const RepeatStats& stats) {
    std::ostringstream out;
    out << "success (score 1): " << stats.successes << "/" << stats.scored
        << " scored attempts = " << percentText(stats.rate) << ", 95% CI "
        << percentText(stats.wilson.low) << "-" << percentText(stats.wilson.high) << " (Wilson)";
    if (stats.repeat > 1) {
        out << ", " << percentText(stats.bootstrap.low) << "-" << percentText(stats.bootstrap.high)
            << " (bootstrap over " << stats.tasks.size() << " tasks)";
    }
    out << '\n';
    if (stats.repeat <= 1) return out.str();
    out << "  k:";
    for (const PassK& pass : stats.passK)
        out << ' ' << pass.k;
    out << "\n  pass@k:";
    for (const PassK& pass : stats.passK)
        out << ' ' << percentText(pass.passAt);
    out << "\n  pass^k:";
    for (const PassK& pass : stats.passK)
        out << ' ' << percentText(pass.passHat);
    // How many tasks succeeded in 0, 1, ..., R of their attempts (tasks with all R scored).
    std::vector<int> bySuccesses(std::size_t(stats.repeat) + 1, 0);
    for (const TaskFrequency& task : stats.tasks)
        if (task.scored == stats.repeat) ++bySuccesses[std::size_t(task.successes)];
    out << "\n  tasks by successes (0.." << stats.repeat << " of " << stats.repeat << "):";
    for (const int count : bySuccesses)
        out << ' ' << count;
    out << "\n  runs:";
    for (const RunRate& run : stats.runs)
        out << ' ' << percentText(run.rate());
    out << "; variance " << fixedPoint(stats.runVariance, 6) << ", sd "
        << percentText(stats.runStdDev) << '\n';
    return out.str();
}

namespace {

void writePassTable(std::ostream& html, const RepeatStats& stats) {
    html << "<table><tr><th>k</th><th>pass@k (some of k attempts succeed)</th>"
            "<th>pass^k (all k attempts succeed)</th><th>tasks with &ge; k scored</th></tr>";
    for (const PassK& pass : stats.passK) {
        html << "<tr><td class=\"num\">" << pass.k << "</td><td class=\"num\">"
             << percentText(pass.passAt) << "</td><td class=\"num\">" << percentText(pass.passHat)
             << "</td><td class=\"num\">" << pass.tasks << "</td></tr>";
    }
    html << "</table>\n";
}

void writeRunTable(std::ostream& html, const RepeatStats& stats) {
    html << "<h3>Run to run</h3><p class=\"muted\">Run r is every task's attempt r. Variance "
         << fixedPoint(stats.runVariance, 6) << ", standard deviation "
         << percentText(stats.runStdDev)
         << " (sample, n - 1).</p><table><tr><th>run</th><th>successes</th><th>scored</th>"
            "<th>success rate</th></tr>";
    for (const RunRate& run : stats.runs) {
        html << "<tr><td class=\"num\">" << run.attempt << "</td><td class=\"num\">"
             << run.successes << "</td><td class=\"num\">" << run.scored
             << "</td><td class=\"num\">" << percentText(run.rate()) << "</td></tr>";
    }
    html << "</table>\n";
}

void writeFrequencyTable(std::ostream& html, const RepeatStats& stats) {
    html << "<h3>Per task</h3><table><tr><th>task</th><th>attempts</th><th>scored</th>"
            "<th>successes</th><th>success frequency</th><th>mean score</th></tr>";
    for (const TaskFrequency& task : stats.tasks) {
        const char* tone = !task.scored                    ? "warn"
                           : task.successes == task.scored ? "ok"
                           : task.successes == 0           ? "bad"
                                                           : "warn";
        html << "<tr><td>" << htmlEscape(task.domain + "/" + task.id) << "</td><td class=\"num\">"
             << task.attempts << "</td><td class=\"num\">" << task.scored
             << "</td><td class=\"num\">" << task.successes << "</td><td class=\"num " << tone
             << "\">" << (task.scored ? percentText(task.frequency()) : "&ndash;")
             << "</td><td class=\"num\">" << fixedPoint(task.meanScore(), 3) << "</td></tr>";
    }
    html << "</table>\n";
}

}  // namespace

std::string successRateHtml(const RepeatStats& stats) {
    std::ostringstream html;
    html << "<div class=\"cards\"><div class=\"card\"><div class=\"muted\">Success (score 1) "
            "over scored attempts</div><div class=\"big\">"
         << percentText(stats.rate) << "</div><div class=\"muted\">" << stats.successes << " / "
         << stats.scored << "; 95% CI " << percentText(stats.wilson.low) << " &ndash; "
         << percentText(stats.wilson.high) << " (Wilson)";
    if (stats.repeat > 1)
        html << ", " << percentText(stats.bootstrap.low) << " &ndash; "
             << percentText(stats.bootstrap.high) << " (bootstrap over " << stats.tasks.size()
             << " tasks)";
    html << "</div></div></div>\n";
    if (stats.repeat <= 1) return html.str();
    html << "<h2>Repeated runs (" << stats.repeat << " attempts per task)</h2>"
         << "<p class=\"muted\">An attempt succeeds when it scores 1. pass@k = 1 - "
            "C(n-c,k)/C(n,k) and pass^k = C(c,k)/C(n,k) per task (n scored attempts, c "
            "successes), averaged over the tasks. The bootstrap resamples tasks (seed "
         << kBootstrapSeed << ", " << kBootstrapResamples << " resamples).</p>\n";
    writePassTable(html, stats);
    writeRunTable(html, stats);
    writeFrequencyTable(html, stats);
    return html.str();
}

}  // namespace iris::app::eval
