#pragma once
// The grounding self-test's report: every page's outcome and the statistics over them, overall,
// per element kind and per screen size; as text for people and as JSON for programs.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/grounding/grounding_score.h"

namespace iris::agent::grounding {

struct GroundingReport {
    std::string model;            // the client's description
    std::string actionFormat;     // "tools", "uitars", ...
    std::string coordinateFrame;  // "pixels", "auto", "resized:1288x812", ...
    std::uint64_t seed = 0;
    int requestedPages = 0;
    bool stopped = false;  // ended early on request: `pages` holds those that ran
    std::vector<PageOutcome> pages;
};

struct NamedStats {
    std::string name;  // "button", "1280x800"
    GroupStats stats;
};

GroupStats overallStats(const GroundingReport& report);
// In kElementKinds order, kinds without pages left out.
std::vector<NamedStats> statsByKind(const GroundingReport& report);
// In the order the screen sizes first appear.
std::vector<NamedStats> statsByScreen(const GroundingReport& report);

// The summary and both breakdowns; with `details`, one line per page first.
std::string reportText(const GroundingReport& report, bool details);
std::string pageLine(const PageOutcome& outcome);  // one --details line, without a newline

// {"model", "seed", ..., "overall": {...}, "by_kind": {...}, "by_screen": {...}} and with
// `details` "pages": [...], keys in that order. Distances and times are null where there was
// nothing to measure.
nlohmann::ordered_json reportJson(const GroundingReport& report, bool details);

}  // namespace iris::agent::grounding
