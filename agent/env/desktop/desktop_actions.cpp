#include "agent/env/desktop/desktop_actions.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <type_traits>

#include <opencv2/imgproc.hpp>

#include "base/utf8.h"

namespace iris::agent {
namespace {

constexpr int kMaxScrollNotches = 200;
constexpr double kMaxWaitSeconds = 600;

std::string formatPoint(Point p) {
    char text[64];
    std::snprintf(text, sizeof(text), "(%g, %g)", p.x, p.y);
    return text;
}

}  // namespace

Status checkClick(const Click& click) {
    if (click.count >= 1 && click.count <= 3) return Status::ok();
    return Status::invalidArgument("click: count must be 1, 2 or 3, not " +
                                   std::to_string(click.count));
}

Status checkScroll(const Scroll& scroll) {
    if (std::abs(scroll.dx) <= kMaxScrollNotches && std::abs(scroll.dy) <= kMaxScrollNotches)
        return Status::ok();
    return Status::invalidArgument("scroll: at most " + std::to_string(kMaxScrollNotches) +
                                   " notches per direction, not (" + std::to_string(scroll.dx) +
                                   ", " + std::to_string(scroll.dy) + ")");
}

std::optional<Status> runCommonDesktopAction(const Action& action) {
    if (isFileAction(action)) {
        return Status::unsupported(
            "file actions are carried out by the workspace, not the desktop");
    }
    return std::visit(
        [](const auto& a) -> std::optional<Status> {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, Wait>) {
                if (!(a.seconds >= 0 && a.seconds <= kMaxWaitSeconds)) {
                    return Status::invalidArgument("wait: seconds must be in [0, 600], not " +
                                                   std::to_string(a.seconds));
                }
                std::this_thread::sleep_for(std::chrono::duration<double>(a.seconds));
                return Status::ok();
            } else if constexpr (std::is_same_v<T, Done> || std::is_same_v<T, Fail>) {
                return Status::ok();
            } else if constexpr (std::is_same_v<T, Navigate>) {
                return Status::unsupported(
                    "navigate: the desktop has no address bar of its own; open a browser and "
                    "type the URL instead");
            } else {
                return std::nullopt;
            }
        },
        action);
}

Result<Point> observationToDevice(Point point, const Monitor& area, double observationScale,
                                  const char* what) {
    double width = std::round(area.width * observationScale);
    double height = std::round(area.height * observationScale);
    // The far edge is accepted: models often answer with the screenshot's width itself.
    if (!(point.x >= 0 && point.y >= 0 && point.x <= width && point.y <= height)) {
        return Status::invalidArgument(std::string(what) + ": " + formatPoint(point) +
                                       " is outside the " + formatPoint({width, height}) +
                                       " screenshot");
    }
    double ratio = 1.0 / observationScale;
    return Point{area.x + std::min(std::round(point.x * ratio), area.width - 1.0),
                 area.y + std::min(std::round(point.y * ratio), area.height - 1.0)};
}

cv::Mat shrinkForObservation(cv::Mat captured, const Monitor& area, double observationScale) {
    if (observationScale >= 1.0) return captured;
    int width = std::max(1, static_cast<int>(std::lround(area.width * observationScale)));
    int height = std::max(1, static_cast<int>(std::lround(area.height * observationScale)));
    cv::Mat shrunk;
    cv::resize(captured, shrunk, cv::Size(width, height), 0, 0, cv::INTER_AREA);
    return shrunk;
}

Result<std::vector<KeySymbol>> keysymsForText(std::string_view utf8) {
    Result<std::u32string> codePoints = utf8::decode(utf8);
    if (!codePoints) return codePoints.status().withContext("type: ");
    std::vector<KeySymbol> keysyms;
    for (std::size_t i = 0; i < codePoints->size(); ++i) {
        char32_t c = (*codePoints)[i];
        if (c == U'\r' && i + 1 < codePoints->size() && (*codePoints)[i + 1] == U'\n') continue;
        KeySymbol keysym = keysymForCodePoint(c);
        if (keysym == 0) {
            char code[16];
            std::snprintf(code, sizeof(code), "U+%04X", static_cast<unsigned>(c));
            return Status::invalidArgument("type: character " + std::string(code) +
                                           " at position " + std::to_string(i) +
                                           " is a control character with no key");
        }
        keysyms.push_back(keysym);
    }
    return keysyms;
}

}  // namespace iris::agent
