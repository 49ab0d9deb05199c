#pragma once
// Statistics over the attempts of `iris eval run --repeat R` (eval_results.h) and over two runs
// of the same tasks (eval_compare.h). Pure (no Qt), deterministic (the bootstrap takes a seed).
//
// Definitions used everywhere (report, terminal summary, compare):
//   - an attempt SUCCEEDS when it was scored and its score is 1 (OSWorld's scores lie in [0, 1];
//     partial scores count as failures here, while the report's "success rate" cards keep
//     OSWorld's mean score). Unscored attempts (unsupported, error, stopped) are left out, as
//     OSWorld's show_result leaves them out of its denominator.
//   - the overall success rate is successes / scored attempts over all tasks and attempts.
//   - its Wilson interval treats every scored attempt as an independent trial; the bootstrap
//     resamples TASKS (with all their attempts), since attempts of one task are correlated.
//   - pass@k of a task with n scored attempts, c of them successes, is 1 - C(n-c,k)/C(n,k) (the
//     chance that at least one of k attempts drawn without replacement succeeds); pass^k is
//     C(c,k)/C(n,k) (the chance that all k succeed). Both are averaged over the tasks with n >= k.
//   - run r is every task's attempt r; the run-to-run variance is the sample variance (n - 1
//     denominator) of the R runs' success rates.
#include <cstdint>
#include <string>
#include <vector>

#include "app/cli/eval/eval_results.h"

namespace iris::app::eval {

inline constexpr double kZ95 = 1.959963984540054;  // the 0.975 quantile of the standard normal
inline constexpr std::uint64_t kBootstrapSeed = 20260423;
inline constexpr int kBootstrapResamples = 2000;

struct Interval {
    double low = 0;
    double high = 0;
};

// Scored with a score of 1 (within rounding).
bool succeeded(const TaskResult& result);

// The Wilson score interval for `successes` of `trials`; {0, 0} when trials is 0.
Interval wilsonInterval(std::int64_t successes, std::int64_t trials, double z = kZ95);

// 1 - C(n-c,k)/C(n,k) and C(c,k)/C(n,k) for 0 <= c <= n, 1 <= k <= n, as products of ratios in
// long double (no binomial is formed, so n in the thousands is fine).
double passAtK(int n, int c, int k);
double passHatK(int n, int c, int k);

// The sample variance (n - 1 denominator); 0 for fewer than two values.
double sampleVariance(const std::vector<double>& values);

// The percentile bootstrap (2.5% and 97.5% quantiles, linear interpolation between order
// statistics) of sum(numerators) / sum(denominators) over `resamples` resamples of the units
// with replacement. A unit is one task: {successes, scored attempts} or {difference, 1}.
// Deterministic for a seed (std::mt19937_64, indices by modulo: bias below n / 2^64).
struct RatioUnit {
    double numerator = 0;
    double denominator = 0;
};
Interval bootstrapRatio(const std::vector<RatioUnit>& units, std::uint64_t seed = kBootstrapSeed,
                        int resamples = kBootstrapResamples);

// One task over all its attempts.
struct TaskFrequency {
    std::string file;
    std::string domain;
    std::string id;
    int attempts = 0;  // entries in results.json
    int scored = 0;    // attempts with a score
    int successes = 0;
    double scoreSum = 0;

    double frequency() const { return scored ? double(successes) / scored : 0; }
    double meanScore() const { return scored ? scoreSum / scored : 0; }
};
// By file, in the results' order (domain, id, file).
std::vector<TaskFrequency> taskFrequencies(const RunResults& results);

struct PassK {
    int k = 0;
    double passAt = 0;   // mean pass@k
    double passHat = 0;  // mean pass^k
    int tasks = 0;       // tasks with at least k scored attempts
};

struct RunRate {
    int attempt = 0;
    int scored = 0;
    int successes = 0;
    double rate() const { return scored ? double(successes) / scored : 0; }
};

struct RepeatStats {
    int repeat = 1;  // attempts per task: the run's --repeat, or more if results.json holds more
    std::vector<TaskFrequency> tasks;
    std::int64_t scored = 0;
    std::int64_t successes = 0;
    double rate = 0;  // successes / scored
    Interval wilson;
    Interval bootstrap;         // over tasks
    std::vector<PassK> passK;   // k = 1..repeat
    std::vector<RunRate> runs;  // attempt 0..repeat-1
    double runVariance = 0;     // of runs' rates that have scored attempts
    double runStdDev = 0;
};
RepeatStats repeatStats(const RunResults& results, std::uint64_t seed = kBootstrapSeed,
                        int resamples = kBootstrapResamples);

// The difference B - A of per-task values paired over the same tasks: the mean difference, its
// standard error sd(d) / sqrt(m), the normal interval mean +- z * se, and the paired bootstrap
// (tasks resampled, mean difference).
struct PairedDifference {
    int pairs = 0;
    double meanA = 0;
    double meanB = 0;
    double mean = 0;  // meanB - meanA
    double stdError = 0;
    Interval normal;
    Interval bootstrap;
};
PairedDifference pairedDifference(const std::vector<double>& a, const std::vector<double>& b,
                                  std::uint64_t seed = kBootstrapSeed,
                                  int resamples = kBootstrapResamples);

// Terminal lines: the success rate (score 1) of the scored attempts with its Wilson interval
// and, when tasks ran more than once, the bootstrap interval, pass@k / pass^k per k and the runs'
// rates with their variance and standard deviation.
std::string repeatStatsText(const RepeatStats& stats);

// The report's section (eval_report.h): a card with the success rate and its Wilson interval;
// with repeats also the bootstrap interval, the pass@k / pass^k table, the runs' rates with
// their variance, and a per-task table of success frequencies.
std::string successRateHtml(const RepeatStats& stats);

}  // namespace iris::app::eval
