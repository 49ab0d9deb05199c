#pragma once
// Several OpenAI-compatible servers behind one model (an evaluation's --endpoint URL1 --endpoint
// URL2 ...): which server takes the next request, which are out of rotation and when they are
// probed back in. agent/clients/pooled_client.h sends the requests; N of those (one per task)
// share one pool.
//
// Choice: among the endpoints in rotation that the request has not tried yet, the one with the
// fewest requests outstanding; ties go to the one picked least recently (never picked counts as
// oldest, then the lower index), so equal loads rotate round robin. Deterministic for a given
// order of calls.
//
// Out of rotation: an endpoint whose request failed in a way another server could answer (no
// connection, a reset, a timeout, HTTP 5xx or 429) is taken out. A prober thread asks it
// GET {base}/models after 1 s, then after 2, 4, ... up to 30 s between probes, and puts it back
// on the first 2xx. A request that has tried every endpoint in rotation may still try one that
// is out (an answer brings it back too), so a request fails only once every endpoint has failed
// it.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace iris::agent {

// Ok when the server at `baseUrl` answers; the error says what it did instead.
using HealthCheck = std::function<Status(const std::string& baseUrl)>;

struct EndpointPoolSettings {
    int probeInitialMs = 1'000;  // first probe after a take-out; doubled per failed probe
    int probeMaxMs = 30'000;
    // Empty: GET {base}/models over libcurl with the key from apiKeyEnv (as OpenAiClient sends
    // it), healthy on a 2xx within healthTimeoutMs.
    HealthCheck healthCheck;
    std::string apiKeyEnv = "IRIS_API_KEY";
    int healthTimeoutMs = 5'000;
    // False: no prober thread; probeNow() is the only way back in (tests step it by hand).
    bool startProber = true;
};

// What one endpoint looks like now (for tests, logs and the run's summary).
struct EndpointState {
    std::string baseUrl;
    bool inRotation = true;
    int outstanding = 0;        // requests picked and not yet released
    std::int64_t picks = 0;     // requests sent to it, answered or not
    std::int64_t failures = 0;  // of those, the ones that took it out of rotation
    std::int64_t probes = 0;    // health checks made while it was out
    int probeDelayMs = 0;       // out of rotation: the wait before the next probe
    std::string lastFailure;    // why it was last taken out, or the last failed probe
};

class EndpointPool {
public:
    // `baseUrls` as given (a trailing '/' is dropped); errors name the empty or repeated one.
    static Result<std::shared_ptr<EndpointPool>> make(std::vector<std::string> baseUrls,
                                                      EndpointPoolSettings settings = {});
    ~EndpointPool();  // stops the prober: waits for a health check in flight (healthTimeoutMs)
    EndpointPool(const EndpointPool&) = delete;
    EndpointPool& operator=(const EndpointPool&) = delete;

    std::size_t size() const { return m_urls.size(); }
    const std::string& baseUrl(std::size_t index) const { return m_urls[index]; }

    // The endpoint for a request that has already tried those marked in `tried` (size()
    // entries): in rotation first (the rule above), else one out of rotation, else nullopt.
    // Counts it as outstanding until release(). Thread-safe.
    std::optional<std::size_t> pick(const std::vector<bool>& tried);

    enum class Outcome {
        Answered,  // brings an endpoint out of rotation back in
        Failed,    // the request's own failure (a bad request, a cancel): no change
        Down,      // the server failed: out of rotation, `why` kept
    };
    void release(std::size_t index, Outcome outcome, const std::string& why = {});

    // Probes every endpoint out of rotation now, on this thread, whatever its schedule.
    void probeNow();

    std::vector<EndpointState> states() const;

private:
    struct Endpoint {
        int outstanding = 0;
        std::uint64_t lastPick = 0;  // 0: never; else the pick's ticket
        bool inRotation = true;
        std::int64_t picks = 0;
        std::int64_t failures = 0;
        std::int64_t probes = 0;
        int probeDelayMs = 0;
        std::chrono::steady_clock::time_point nextProbe;
        std::string lastFailure;
    };

    EndpointPool(std::vector<std::string> baseUrls, EndpointPoolSettings settings);
    // Whether `a` is a better pick than `b` (fewer outstanding, then picked less recently).
    bool better(std::size_t a, std::size_t b) const;
    // Runs the health check of each of `indices` (without the lock) and applies the results.
    void probe(const std::vector<std::size_t>& indices);
    void proberLoop();

    const std::vector<std::string> m_urls;
    const EndpointPoolSettings m_settings;
    const HealthCheck m_check;

    mutable std::mutex m_mutex;  // guards everything below, with m_wake for the prober
    std::condition_variable m_wake;
    std::vector<Endpoint> m_endpoints;
    std::uint64_t m_tickets = 0;
    bool m_stopping = false;
    std::thread m_prober;  // last: started once the rest is set up
};

// The health check EndpointPoolSettings leaves empty: GET {baseUrl}/models, a 2xx within
// `timeoutMs`; the key read from `apiKeyEnv` goes in an Authorization header and never into
// the message.
Status checkModelsEndpoint(const std::string& baseUrl, const std::string& apiKeyEnv, int timeoutMs);

// `url` without what could be a secret (user:password@ and a ?query): what results and logs
// show of an endpoint.
std::string endpointLabel(const std::string& url);

}  // namespace iris::agent
