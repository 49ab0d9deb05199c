#include "agent/grounding/grounding_report.h"

#include <cstdio>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

namespace iris::agent::grounding {
namespace {

using Json = nlohmann::ordered_json;

std::vector<NamedStats> groupBy(const GroundingReport& report,
                                const std::vector<std::string>& names,
                                const std::function<std::string(const PageOutcome&)>& nameOf) {
    std::vector<NamedStats> groups;
    for (const std::string& name : names) {
        std::vector<PageOutcome> members;
        for (const PageOutcome& page : report.pages)
            if (nameOf(page) == name) members.push_back(page);
        if (!members.empty()) groups.push_back({name, summarize(members)});
    }
    return groups;
}

std::string fixed1(double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%.1f", value);
    return text;
}

std::string fixed0(double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%.0f", value);
    return text;
}

std::string pixels(const std::optional<double>& value) {
    return value ? fixed1(*value) : "-";
}

// "12.3 px", or "-" when there was no click to measure.
std::string withUnit(const std::optional<double>& value) {
    return value ? fixed1(*value) + " px" : "-";
}

std::string seconds(const std::optional<double>& milliseconds) {
    if (!milliseconds) return "-";
    char text[64];
    std::snprintf(text, sizeof text, "%.2f s", *milliseconds / 1000.0);
    return text;
}

std::string percent(double fraction) {
    return fixed1(fraction * 100.0) + "%";
}

std::string padded(std::string text, std::size_t width) {
    if (text.size() < width) text.append(width - text.size(), ' ');
    return text;
}

std::string rightAligned(const std::string& text, std::size_t width) {
    return text.size() < width ? std::string(width - text.size(), ' ') + text : text;
}

void printTable(std::ostringstream& out, const std::string& title,
                const std::vector<NamedStats>& groups) {
    out << padded(title, 14) << " pages  hits  hit rate  median px  p90 px  parse errors\n";
    for (const NamedStats& g : groups) {
        out << padded(g.name, 14) << rightAligned(std::to_string(g.stats.pages), 6)
            << rightAligned(std::to_string(g.stats.hits), 6)
            << rightAligned(percent(g.stats.hitRate), 10)
            << rightAligned(pixels(g.stats.medianDistance), 11)
            << rightAligned(pixels(g.stats.p90Distance), 8)
            << rightAligned(std::to_string(g.stats.parseErrors), 14) << '\n';
    }
}

Json optionalNumber(const std::optional<double>& value) {
    return value ? Json(*value) : Json(nullptr);
}

Json statsJson(const GroupStats& s) {
    return {{"pages", s.pages},
            {"hits", s.hits},
            {"misses", s.misses},
            {"no_click", s.noClick},
            {"parse_errors", s.parseErrors},
            {"model_errors", s.modelErrors},
            {"hit_rate", s.hitRate},
            {"median_distance_px", optionalNumber(s.medianDistance)},
            {"p90_distance_px", optionalNumber(s.p90Distance)},
            {"median_step_ms", optionalNumber(s.medianStepMs)},
            {"median_model_ms", optionalNumber(s.medianModelMs)}};
}

Json groupsJson(const std::vector<NamedStats>& groups) {
    Json out = Json::object();
    for (const NamedStats& g : groups)
        out[g.name] = statsJson(g.stats);
    return out;
}

}  // namespace

GroupStats overallStats(const GroundingReport& report) {
    return summarize(report.pages);
}

std::vector<NamedStats> statsByKind(const GroundingReport& report) {
    std::vector<std::string> names;
    for (ElementKind kind : kElementKinds)
        names.emplace_back(elementKindName(kind));
    return groupBy(report, names,
                   [](const PageOutcome& p) { return std::string(elementKindName(p.kind)); });
}

std::vector<NamedStats> statsByScreen(const GroundingReport& report) {
    std::vector<std::string> names;
    for (const PageOutcome& page : report.pages) {
        const std::string name = screenSizeText(page.screen);
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    return groupBy(report, names, [](const PageOutcome& p) { return screenSizeText(p.screen); });
}

std::string pageLine(const PageOutcome& o) {
    std::ostringstream line;
    line << "page " << o.page + 1 << "  " << screenSizeText(o.screen) << ' ' << themeName(o.theme)
         << "  " << elementKindName(o.kind) << " '" << o.label << "'  "
         << pageVerdictName(o.verdict);
    if (o.click) {
        line << "  clicked (" << fixed1(o.click->x) << ", " << fixed1(o.click->y) << "), "
             << fixed1(distanceToCentre(o.target, *o.click)) << " px from the centre";
    }
    line << "  target " << fixed0(o.target.left) << ',' << fixed0(o.target.top) << ' '
         << fixed0(o.target.width) << 'x' << fixed0(o.target.height);
    if (o.verdict != PageVerdict::ModelError) line << "  " << seconds(o.stepMs);
    if (!o.problem.empty()) line << "  (" << o.problem << ')';
    return line.str();
}

std::string reportText(const GroundingReport& report, bool details) {
    std::ostringstream out;
    if (details) {
        for (const PageOutcome& page : report.pages)
            out << pageLine(page) << '\n';
        out << '\n';
    }
    const GroupStats all = overallStats(report);
    out << "model: " << report.model << '\n' << "pages: " << all.pages;
    if (report.stopped) out << " of " << report.requestedPages << " (stopped)";
    out << " (seed " << report.seed << ", action format " << report.actionFormat << ", coordinates "
        << report.coordinateFrame << ")\n"
        << "hit rate: " << percent(all.hitRate) << " (" << all.hits << '/' << all.pages
        << ")  distance from the target's centre: median " << withUnit(all.medianDistance)
        << ", p90 " << withUnit(all.p90Distance) << "\n"
        << "time per step: median " << seconds(all.medianStepMs) << " (model "
        << seconds(all.medianModelMs) << ")\n"
        << "parse errors: " << all.parseErrors << "  no click: " << all.noClick
        << "  model errors: " << all.modelErrors << "\n\n";
    printTable(out, "element kind", statsByKind(report));
    out << '\n';
    printTable(out, "screen size", statsByScreen(report));
    return out.str();
}

Json reportJson(const GroundingReport& report, bool details) {
    Json out = {{"model", report.model},
                {"action_format", report.actionFormat},
                {"coordinate_frame", report.coordinateFrame},
                {"seed", report.seed},
                {"requested_pages", report.requestedPages},
                {"stopped", report.stopped},
                {"overall", statsJson(overallStats(report))},
                {"by_kind", groupsJson(statsByKind(report))},
                {"by_screen", groupsJson(statsByScreen(report))}};
    if (details) {
        Json pages = Json::array();
        for (const PageOutcome& o : report.pages) {
            Json page = {
                {"page", o.page},
                {"screen", screenSizeText(o.screen)},
                {"theme", themeName(o.theme)},
                {"kind", elementKindName(o.kind)},
                {"label", o.label},
                {"target",
                 {{"left", o.target.left},
                  {"top", o.target.top},
                  {"width", o.target.width},
                  {"height", o.target.height}}},
                {"verdict", pageVerdictName(o.verdict)},
                {"click", o.click ? Json{{"x", o.click->x}, {"y", o.click->y}} : Json(nullptr)},
                {"distance_px", o.click ? Json(distanceToCentre(o.target, *o.click)) : nullptr},
                {"step_ms", o.stepMs},
                {"model_ms", o.modelMs},
                {"problem", o.problem},
                {"answer", o.answer}};
            pages.push_back(std::move(page));
        }
        out["pages"] = std::move(pages);
    }
    return out;
}

}  // namespace iris::agent::grounding
