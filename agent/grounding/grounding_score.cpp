#include "agent/grounding/grounding_score.h"

#include <algorithm>
#include <cmath>

namespace iris::agent::grounding {

bool isInside(const Rect& box, ClickPoint point) {
    return point.x >= box.left && point.x < box.left + box.width && point.y >= box.top &&
           point.y < box.top + box.height;
}

double distanceToCentre(const Rect& box, ClickPoint point) {
    return std::hypot(point.x - (box.left + box.width / 2), point.y - (box.top + box.height / 2));
}

std::string_view pageVerdictName(PageVerdict verdict) {
    switch (verdict) {
        case PageVerdict::Hit:
            return "hit";
        case PageVerdict::Miss:
            return "miss";
        case PageVerdict::NoClick:
            return "no_click";
        case PageVerdict::ParseError:
            return "parse_error";
        case PageVerdict::ModelError:
            break;
    }
    return "model_error";
}

PageVerdict verdictFor(const Rect& box, const std::optional<ClickPoint>& click) {
    if (!click) return PageVerdict::NoClick;
    return isInside(box, *click) ? PageVerdict::Hit : PageVerdict::Miss;
}

std::optional<double> percentile(std::vector<double> values, double p) {
    if (values.empty()) return std::nullopt;
    std::sort(values.begin(), values.end());
    const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * double(values.size() - 1);
    const std::size_t below = std::size_t(std::floor(rank));
    const std::size_t above = std::min(below + 1, values.size() - 1);
    return values[below] + (rank - double(below)) * (values[above] - values[below]);
}

GroupStats summarize(std::span<const PageOutcome> outcomes) {
    GroupStats stats;
    std::vector<double> distances;
    std::vector<double> stepMs;
    std::vector<double> modelMs;
    for (const PageOutcome& o : outcomes) {
        ++stats.pages;
        switch (o.verdict) {
            case PageVerdict::Hit:
                ++stats.hits;
                break;
            case PageVerdict::Miss:
                ++stats.misses;
                break;
            case PageVerdict::NoClick:
                ++stats.noClick;
                break;
            case PageVerdict::ParseError:
                ++stats.parseErrors;
                break;
            case PageVerdict::ModelError:
                ++stats.modelErrors;
                break;
        }
        if (o.click) distances.push_back(distanceToCentre(o.target, *o.click));
        if (o.verdict != PageVerdict::ModelError) {
            stepMs.push_back(o.stepMs);
            modelMs.push_back(o.modelMs);
        }
    }
    if (stats.pages > 0) stats.hitRate = double(stats.hits) / stats.pages;
    stats.medianDistance = percentile(distances, 50);
    stats.p90Distance = percentile(distances, 90);
    stats.medianStepMs = percentile(stepMs, 50);
    stats.medianModelMs = percentile(modelMs, 50);
    return stats;
}

}  // namespace iris::agent::grounding
