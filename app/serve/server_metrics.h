#pragma once
// What GET /metrics reports, in Prometheus's text exposition format: the server's own counters
// and latency histograms (measured per request as tokens reach the HTTP handler), and the
// scheduler's counters and state. Thread-safe.
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "inference/scheduler.h"

namespace iris::app::serve {

// A cumulative histogram of seconds with fixed upper bounds.
class Histogram {
public:
    explicit Histogram(std::vector<double> bounds);
    void observe(double seconds);
    // "name_bucket{le="..."} n" lines, then name_sum and name_count.
    void write(std::string& out, const std::string& name) const;

private:
    std::vector<double> m_bounds;
    std::vector<std::int64_t> m_counts;  // per bucket, not cumulative; the last is +Inf
    double m_sum = 0;
    std::int64_t m_count = 0;
};

class ServerMetrics {
public:
    ServerMetrics();

    void countResponse(int status);
    void countDisconnect();  // a client left and its generation was cancelled
    void observeTimeToFirstToken(double seconds);
    void observeInterTokenLatency(double seconds);

    // The whole exposition; `scheduler` is null while the model loads.
    std::string prometheusText(const inference::SchedulerStats* scheduler) const;

private:
    mutable std::mutex m_mutex;
    std::map<int, std::int64_t> m_responses;  // by HTTP status
    std::int64_t m_disconnects = 0;
    Histogram m_timeToFirstToken;
    Histogram m_interTokenLatency;
};

}  // namespace iris::app::serve
