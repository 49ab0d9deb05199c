#pragma once
// Scoring the grounding self-test: where the model clicked on each page against the target's
// box as the browser rendered it, and the statistics over pages (hit rate, median and 90th
// percentile distance from the target's centre, time per step), overall and per group.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "agent/grounding/page_generator.h"

namespace iris::agent::grounding {

// A rectangle in screenshot pixels, as getBoundingClientRect reports it (fractions allowed).
struct Rect {
    double left = 0;
    double top = 0;
    double width = 0;
    double height = 0;
};

struct ClickPoint {
    double x = 0;
    double y = 0;
};

// Inside means left <= x < left + width and top <= y < top + height: a click on the pixel
// column right of the box is outside it, as the browser decides.
bool isInside(const Rect& box, ClickPoint point);
double distanceToCentre(const Rect& box, ClickPoint point);  // Euclidean, screen pixels

// How one page's step ended.
enum class PageVerdict {
    Hit,         // clicked inside the target
    Miss,        // clicked elsewhere
    NoClick,     // the answer parsed but held no click with a point
    ParseError,  // the answer could not be parsed
    ModelError,  // the model call failed (HTTP error, timeout)
};
std::string_view pageVerdictName(PageVerdict verdict);  // "hit", "miss", "no_click", ...

struct PageOutcome {
    int page = 0;
    ElementKind kind = ElementKind::Button;
    ScreenSize screen;
    Theme theme = Theme::Light;
    std::string label;
    Rect target;                      // measured in the browser after rendering
    std::optional<ClickPoint> click;  // in screenshot pixels
    PageVerdict verdict = PageVerdict::NoClick;
    std::string problem;  // the parse or model error, or what the answer did instead
    std::string answer;   // the model's text
    double stepMs = 0;    // capture, encode, model call, parse and the click
    double modelMs = 0;
};

// The verdict and distance for a click (or none) on `box`.
PageVerdict verdictFor(const Rect& box, const std::optional<ClickPoint>& click);

// The p-th percentile (0..100) of `values`, interpolating linearly between the two nearest
// ranks (rank p/100 * (n - 1) of the sorted values, as numpy's default); nullopt when empty.
std::optional<double> percentile(std::vector<double> values, double p);

struct GroupStats {
    int pages = 0;
    int hits = 0;
    int misses = 0;
    int noClick = 0;
    int parseErrors = 0;
    int modelErrors = 0;
    double hitRate = 0;  // hits / pages; 0 without pages
    // Over the pages with a click; nullopt when there is none.
    std::optional<double> medianDistance;
    std::optional<double> p90Distance;
    // Over the pages whose model call answered.
    std::optional<double> medianStepMs;
    std::optional<double> medianModelMs;
};

GroupStats summarize(std::span<const PageOutcome> outcomes);

}  // namespace iris::agent::grounding
