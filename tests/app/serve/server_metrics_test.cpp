// The Prometheus exposition: cumulative histogram buckets against counts made by hand, and the
// scheduler's counters under their names.
#include "app/serve/server_metrics.h"

#include <gtest/gtest.h>

namespace iris::app::serve {
namespace {

TEST(Histogram, BucketsAreCumulativeWithSumAndCount) {
    Histogram histogram({0.1, 1.0});
    for (double seconds : {0.05, 0.1, 0.5, 2.0, 3.0})
        histogram.observe(seconds);
    std::string out;
    histogram.write(out, "h");
    EXPECT_EQ(out,
              "h_bucket{le=\"0.10000000000000001\"} 2\n"
              "h_bucket{le=\"1\"} 3\n"
              "h_bucket{le=\"+Inf\"} 5\n"
              "h_sum 5.6500000000000004\n"
              "h_count 5\n");
}

TEST(ServerMetrics, ReportsTheSchedulersCountersAndTheServersOwn) {
    ServerMetrics metrics;
    metrics.countResponse(200);
    metrics.countResponse(200);
    metrics.countResponse(429);
    metrics.countDisconnect();
    metrics.observeTimeToFirstToken(0.2);
    EXPECT_NE(metrics.prometheusText(nullptr).find("iris_model_loaded 0\n"), std::string::npos);
    inference::SchedulerStats stats;
    stats.requests = 7;
    stats.prefixHitTokens = 48;
    stats.kvBlocksCached = 3;
    stats.waiting = 2;
    stats.disk.hitTokens = 32;
    stats.disk.rejected = 1;
    stats.tiers.bytesIn = 4096;  // moved: in + out + host to disk
    stats.tiers.bytesOut = 1024;
    stats.tiers.diskBytesWritten = 512;
    stats.tiers.residentBytes = 65536;
    const std::string text = metrics.prometheusText(&stats);
    for (const char* line :
         {"iris_http_responses_total{code=\"200\"} 2\n", "iris_http_responses_total{code=\"429\"} 1\n",
          "iris_client_disconnects_total 1\n", "iris_time_to_first_token_seconds_count 1\n",
          "iris_model_loaded 1\n", "iris_requests_total 7\n",
          "iris_prefix_cache_hit_tokens_total 48\n", "iris_kv_blocks_cached 3\n",
          "iris_requests_waiting 2\n", "# TYPE iris_requests_running gauge\n",
          "iris_kv_disk_hit_tokens_total 32\n", "iris_kv_disk_rejected_total 1\n",
          "iris_kv_tier_moved_bytes_total 5632\n", "iris_kv_tier_resident_bytes 65536\n"}) {
        EXPECT_NE(text.find(line), std::string::npos) << line;
    }
}

}  // namespace
}  // namespace iris::app::serve
