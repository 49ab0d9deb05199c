#pragma once
// Elapsed time for timings that are reported (step phases, latency, time to first token):
// always the monotonic clock, so a wall-clock change mid-step cannot make a phase negative.

#include <chrono>

namespace iris {

using Clock = std::chrono::steady_clock;

inline double secondsBetween(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}
inline double millisecondsBetween(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
}
inline double secondsSince(Clock::time_point start) {
    return secondsBetween(start, Clock::now());
}
inline double millisecondsSince(Clock::time_point start) {
    return millisecondsBetween(start, Clock::now());
}

}  // namespace iris
