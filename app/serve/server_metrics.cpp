#include "app/serve/server_metrics.h"

#include <cstdio>

namespace iris::app::serve {
namespace {

std::string number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    return text;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void metric(std::string& out, const char* name, const char* type, const char* help,
            std::int64_t value) {
    header(out, name, type, help);
    out += std::string(name) + " " + std::to_string(value) + "\n";
}

void realMetric(std::string& out, const char* name, const char* type, const char* help,
                double value) {
    header(out, name, type, help);
    out += std::string(name) + " " + number(value) + "\n";
}

// The KV disk tier's counters (all zero when --kv-disk-gb is 0).
void writeKvDisk(std::string& out, const inference::KvDiskStats& d) {
    metric(out, "iris_kv_disk_hit_blocks_total", "counter", "KV blocks read back from disk.",
           d.hitBlocks);
    metric(out, "iris_kv_disk_hit_tokens_total", "counter",
           "Prompt tokens whose K/V was read from disk instead of recomputed.", d.hitTokens);
    metric(out, "iris_kv_disk_writes_total", "counter", "KV blocks saved to disk.", d.writes);
    metric(out, "iris_kv_disk_read_bytes_total", "counter", "Bytes read from the KV disk tier.",
           d.bytesRead);
    metric(out, "iris_kv_disk_written_bytes_total", "counter",
           "Bytes written to the KV disk tier.", d.bytesWritten);
    metric(out, "iris_kv_disk_rejected_total", "counter",
           "Saved KV blocks that failed their checks (removed and recomputed).", d.rejected);
    metric(out, "iris_kv_disk_write_failures_total", "counter",
           "KV blocks not saved (full disk, I/O error).", d.writeFailures);
    metric(out, "iris_kv_disk_bytes", "gauge", "Bytes in the KV disk folder.", d.bytes);
}

// MiniMax-M3's KV tiers (all zero without --kv-resident-mb). Bytes moved per decoded token:
// rate(iris_kv_tier_moved_bytes_total) / rate(iris_generated_tokens_total).
void writeKvTiers(std::string& out, const inference::KvTierStats& t) {
    metric(out, "iris_kv_tier_moved_bytes_total", "counter",
           "K/V bytes moved between the KV pool, host memory and disk.", t.bytesMoved());
    metric(out, "iris_kv_tier_fetched_total", "counter",
           "K/V pages brought into the pool for sparse attention.", t.fetched);
    metric(out, "iris_kv_tier_fetched_from_disk_total", "counter",
           "K/V pages brought into the pool from disk.", t.fetchedFromDisk);
    metric(out, "iris_kv_tier_fetched_behind_total", "counter",
           "K/V pages copied in while the model computed, before it waited for them.",
           t.fetchedBehind);
    realMetric(out, "iris_kv_tier_wait_seconds_total", "counter",
               "Time forward passes waited for K/V pages to come in.", double(t.waitNanos) * 1e-9);
    metric(out, "iris_kv_tier_disk_write_failures_total", "counter",
           "Spills the disk refused (kept in host memory).", t.diskWriteFailures);
    metric(out, "iris_kv_tier_resident_bytes", "gauge",
           "Sparse layers' K/V in the KV pool.", t.residentBytes);
    metric(out, "iris_kv_tier_host_bytes", "gauge", "Spilled K/V in host memory.", t.hostBytes);
    metric(out, "iris_kv_tier_disk_bytes", "gauge", "Spilled K/V on disk.", t.diskBytes);
}

void writeScheduler(std::string& out, const inference::SchedulerStats& s) {
    metric(out, "iris_requests_total", "counter", "Requests the scheduler accepted.", s.requests);
    metric(out, "iris_requests_finished_total", "counter",
           "Requests done (stopped, cancelled or failed).", s.finished);
    metric(out, "iris_prompt_tokens_total", "counter",
           "Prompt tokens of finished requests (text and image).", s.promptTokens);
    metric(out, "iris_generated_tokens_total", "counter", "Tokens streamed to clients.",
           s.generatedTokens);
    metric(out, "iris_prefix_cache_lookups_total", "counter",
           "Admissions that looked up the prefix cache.", s.prefixLookups);
    metric(out, "iris_prefix_cache_hit_tokens_total", "counter",
           "Prompt tokens whose K/V came from the prefix cache.", s.prefixHitTokens);
    metric(out, "iris_kv_evictions_total", "counter", "Cached KV blocks reused for other content.",
           s.evictions);
    metric(out, "iris_preemptions_total", "counter",
           "Running sequences sent back to the queue for room.", s.preemptions);
    metric(out, "iris_forward_passes_total", "counter", "Forward passes (scheduler steps).",
           s.steps);
    metric(out, "iris_kv_blocks", "gauge", "KV blocks in the pool.", s.kvBlocks);
    metric(out, "iris_kv_blocks_used", "gauge", "KV blocks held by running sequences.",
           s.kvBlocksUsed);
    metric(out, "iris_kv_blocks_cached", "gauge", "KV blocks held by no sequence, kept for reuse.",
           s.kvBlocksCached);
    metric(out, "iris_requests_waiting", "gauge", "Requests queued for admission.", s.waiting);
    metric(out, "iris_requests_running", "gauge", "Requests decoding or prefilling.", s.running);
    writeKvDisk(out, s.disk);
    writeKvTiers(out, s.tiers);
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : m_bounds(std::move(bounds)), m_counts(m_bounds.size() + 1, 0) {}

void Histogram::observe(double seconds) {
    std::size_t bucket = 0;
    while (bucket < m_bounds.size() && seconds > m_bounds[bucket])
        ++bucket;
    ++m_counts[bucket];
    m_sum += seconds;
    ++m_count;
}

void Histogram::write(std::string& out, const std::string& name) const {
    std::int64_t cumulative = 0;
    for (std::size_t i = 0; i <= m_bounds.size(); ++i) {
        cumulative += m_counts[i];
        const std::string le = i < m_bounds.size() ? number(m_bounds[i]) : "+Inf";
        out += name + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
    }
    out += name + "_sum " + number(m_sum) + "\n";
    out += name + "_count " + std::to_string(m_count) + "\n";
}

ServerMetrics::ServerMetrics()
    : m_timeToFirstToken({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      m_interTokenLatency({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}) {}

void ServerMetrics::countResponse(int status) {
    std::lock_guard lock(m_mutex);
    ++m_responses[status];
}

void ServerMetrics::countDisconnect() {
    std::lock_guard lock(m_mutex);
    ++m_disconnects;
}

void ServerMetrics::observeTimeToFirstToken(double seconds) {
    std::lock_guard lock(m_mutex);
    m_timeToFirstToken.observe(seconds);
}

void ServerMetrics::observeInterTokenLatency(double seconds) {
    std::lock_guard lock(m_mutex);
    m_interTokenLatency.observe(seconds);
}

std::string ServerMetrics::prometheusText(const inference::SchedulerStats* scheduler) const {
    std::string out;
    std::lock_guard lock(m_mutex);
    header(out, "iris_http_responses_total", "counter", "HTTP responses by status code.");
    for (const auto& [status, count] : m_responses)
        out += "iris_http_responses_total{code=\"" + std::to_string(status) + "\"} " +
               std::to_string(count) + "\n";
    metric(out, "iris_client_disconnects_total", "counter",
           "Generations cancelled because their client left.", m_disconnects);
    header(out, "iris_time_to_first_token_seconds", "histogram",
           "From the request's submission to its first token reaching the HTTP handler.");
    m_timeToFirstToken.write(out, "iris_time_to_first_token_seconds");
    header(out, "iris_inter_token_latency_seconds", "histogram",
           "Between consecutive tokens of a request, as the HTTP handler receives them.");
    m_interTokenLatency.write(out, "iris_inter_token_latency_seconds");
    metric(out, "iris_model_loaded", "gauge", "1 once the model is loaded and serving.",
           scheduler != nullptr ? 1 : 0);
    if (scheduler != nullptr) writeScheduler(out, *scheduler);
    return out;
}

}  // namespace iris::app::serve
