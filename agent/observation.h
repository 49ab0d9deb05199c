#pragma once
// What the agent sees after each step, and how its coordinates relate to the device.
#include <cstdint>
#include <string>

#include <opencv2/core/mat.hpp>

#include "agent/actions/action.h"

namespace iris::agent {

// The screen or page as the model will see it. `screenshot` is 8-bit BGR (OpenCV's order) in
// observation pixels; `devicePixelRatio` is device pixels per observation pixel (2 on a HiDPI
// screen captured at half size), `origin` the device-pixel position of the observation's top-left
// corner (a monitor that is not the first, a window).
struct Observation {
    cv::Mat screenshot;
    double devicePixelRatio = 1.0;
    Point origin;
    std::string url;    // browser environments
    std::string title;  // page or window title
    std::string text;   // visible text (DOM innerText, accessibility tree), may be empty
    std::int64_t capturedAtMs = 0;  // wall clock, milliseconds since the epoch
};

// Observation pixels -> device pixels: scaled by the device pixel ratio, shifted by the origin.
inline Point toDevicePixels(Point p, const Observation& o) {
    return {o.origin.x + p.x * o.devicePixelRatio, o.origin.y + p.y * o.devicePixelRatio};
}

}  // namespace iris::agent
