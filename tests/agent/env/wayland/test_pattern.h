#pragma once
// The picture the test Wayland client draws: a colour for every buffer pixel that differs from
// its neighbours in every channel, so that a shifted, scaled, flipped or channel-swapped capture
// cannot match it.
#include <cstdint>

namespace iris::agent::testing {

struct Rgb {
    std::uint8_t r, g, b;
};

inline Rgb patternAt(int x, int y) {
    return {static_cast<std::uint8_t>(x * 7 + y * 3),
            static_cast<std::uint8_t>((x ^ y) + 17 * (y >> 8)),
            static_cast<std::uint8_t>(x * 3 + y * 11 + (x >> 8) * 40)};
}

}  // namespace iris::agent::testing
