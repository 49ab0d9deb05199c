#pragma once
// A monitor: a rectangle of the X screen in device pixels.

namespace iris::agent {

struct Monitor {
    int x = 0;
    int y = 0;
    int width = 0;
    int height = 0;
    friend bool operator==(const Monitor&, const Monitor&) = default;
};

}  // namespace iris::agent
