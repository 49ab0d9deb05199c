#include "agent/clients/endpoint_pool.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>

#include <curl/curl.h>

namespace iris::agent {

Result<std::shared_ptr<EndpointPool>> EndpointPool::make(std::vector<std::string> baseUrls,
                                                         EndpointPoolSettings settings) {
    if (baseUrls.empty()) return Status::invalidArgument("no endpoint given");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < baseUrls.size(); ++i) {
        std::string& url = baseUrls[i];
        while (!url.empty() && url.back() == '/')
            url.pop_back();
        if (url.empty())
            return Status::invalidArgument("endpoint " + std::to_string(i + 1) + " is empty");
        if (!seen.insert(url).second)
            return Status::invalidArgument("endpoint " + endpointLabel(url) + " is given twice");
    }
    if (settings.probeInitialMs < 1 || settings.probeMaxMs < settings.probeInitialMs)
        return Status::invalidArgument("probe delays must be >= 1 ms and max >= initial");
    return std::shared_ptr<EndpointPool>(
        new EndpointPool(std::move(baseUrls), std::move(settings)));
}

EndpointPool::EndpointPool(std::vector<std::string> baseUrls, EndpointPoolSettings settings)
    : m_urls(std::move(baseUrls)),
      m_settings(std::move(settings)),
      m_check(m_settings.healthCheck
                  ? m_settings.healthCheck
                  : HealthCheck([env = m_settings.apiKeyEnv,
                                 timeout = m_settings.healthTimeoutMs](const std::string& url) {
                        return checkModelsEndpoint(url, env, timeout);
                    })),
      m_endpoints(m_urls.size()) {
    if (m_settings.startProber) m_prober = std::thread([this] { proberLoop(); });
}

EndpointPool::~EndpointPool() {
    {
        const std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_all();
    if (m_prober.joinable()) m_prober.join();
}

bool EndpointPool::better(std::size_t a, std::size_t b) const {
    const Endpoint& x = m_endpoints[a];
    const Endpoint& y = m_endpoints[b];
    if (x.outstanding != y.outstanding) return x.outstanding < y.outstanding;
    if (x.lastPick != y.lastPick) return x.lastPick < y.lastPick;
    return a < b;
}

std::optional<std::size_t> EndpointPool::pick(const std::vector<bool>& tried) {
    const std::lock_guard lock(m_mutex);
    std::optional<std::size_t> best;
    // In rotation first; an endpoint out of rotation only when every one in it was tried.
    for (const bool inRotation : {true, false}) {
        for (std::size_t i = 0; i < m_endpoints.size(); ++i) {
            if ((i < tried.size() && tried[i]) || m_endpoints[i].inRotation != inRotation) continue;
            if (!best || better(i, *best)) best = i;
        }
        if (best) break;
    }
    if (!best) return std::nullopt;
    Endpoint& chosen = m_endpoints[*best];
    ++chosen.outstanding;
    ++chosen.picks;
    chosen.lastPick = ++m_tickets;
    return best;
}

void EndpointPool::release(std::size_t index, Outcome outcome, const std::string& why) {
    {
        const std::lock_guard lock(m_mutex);
        Endpoint& endpoint = m_endpoints[index];
        --endpoint.outstanding;
        if (outcome == Outcome::Answered) {
            endpoint.inRotation = true;
            return;
        }
        if (outcome == Outcome::Failed) return;
        ++endpoint.failures;
        endpoint.lastFailure = why;
        // Already out (another request saw it fail first): its probe schedule stands.
        if (!endpoint.inRotation) return;
        endpoint.inRotation = false;
        endpoint.probeDelayMs = m_settings.probeInitialMs;
        endpoint.nextProbe =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(endpoint.probeDelayMs);
    }
    m_wake.notify_all();
}

void EndpointPool::probeNow() {
    std::vector<std::size_t> out;
    {
        const std::lock_guard lock(m_mutex);
        for (std::size_t i = 0; i < m_endpoints.size(); ++i)
            if (!m_endpoints[i].inRotation) out.push_back(i);
    }
    probe(out);
}

void EndpointPool::probe(const std::vector<std::size_t>& indices) {
    for (const std::size_t i : indices) {
        const Status health = m_check(m_urls[i]);
        const std::lock_guard lock(m_mutex);
        Endpoint& endpoint = m_endpoints[i];
        ++endpoint.probes;
        if (endpoint.inRotation) continue;  // an answer brought it back meanwhile
        if (health.isOk()) {
            endpoint.inRotation = true;
            continue;
        }
        endpoint.lastFailure = "health check: " + health.message();
        endpoint.probeDelayMs = std::min(m_settings.probeMaxMs, endpoint.probeDelayMs * 2);
        endpoint.nextProbe =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(endpoint.probeDelayMs);
    }
}

// Sleeps until the earliest probe is due (or for ever while every endpoint is in rotation),
// then probes the due ones without holding the lock.
void EndpointPool::proberLoop() {
    std::unique_lock lock(m_mutex);
    while (!m_stopping) {
        std::optional<std::chrono::steady_clock::time_point> earliest;
        for (const Endpoint& endpoint : m_endpoints) {
            if (!endpoint.inRotation && (!earliest || endpoint.nextProbe < *earliest))
                earliest = endpoint.nextProbe;
        }
        if (!earliest) {
            m_wake.wait(lock);
            continue;
        }
        if (std::chrono::steady_clock::now() < *earliest) {
            m_wake.wait_until(lock, *earliest);
            continue;  // woken early or on time: look again
        }
        std::vector<std::size_t> due;
        const auto now = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < m_endpoints.size(); ++i) {
            if (!m_endpoints[i].inRotation && m_endpoints[i].nextProbe <= now) due.push_back(i);
        }
        lock.unlock();
        probe(due);
        lock.lock();
    }
}

std::vector<EndpointState> EndpointPool::states() const {
    const std::lock_guard lock(m_mutex);
    std::vector<EndpointState> out;
    for (std::size_t i = 0; i < m_endpoints.size(); ++i) {
        const Endpoint& e = m_endpoints[i];
        out.push_back({m_urls[i], e.inRotation, e.outstanding, e.picks, e.failures, e.probes,
                       e.inRotation ? 0 : e.probeDelayMs, e.lastFailure});
    }
    return out;
}

namespace {

std::size_t discardBody(char*, std::size_t size, std::size_t count, void*) {
    return size * count;
}

}  // namespace

Status checkModelsEndpoint(const std::string& baseUrl, const std::string& apiKeyEnv,
                           int timeoutMs) {
    const std::string url = baseUrl + "/models";
    const std::string where = "GET " + endpointLabel(url) + ": ";
    // Reference-counted and thread-safe since libcurl 7.84, as in OpenAiClient.
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return Status::internal(where + "libcurl could not be initialised");
    struct Handles {
        CURL* easy = curl_easy_init();
        curl_slist* headers = nullptr;
        ~Handles() {
            curl_slist_free_all(headers);
            if (easy != nullptr) curl_easy_cleanup(easy);
            curl_global_cleanup();
        }
    } handles;
    if (handles.easy == nullptr) return Status::internal(where + "libcurl could not start");
    if (const char* key = apiKeyEnv.empty() ? nullptr : std::getenv(apiKeyEnv.c_str());
        key != nullptr && *key != '\0') {
        handles.headers = curl_slist_append(handles.headers,
                                            (std::string("Authorization: Bearer ") + key).c_str());
    }
    CURL* easy = handles.easy;
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, handles.headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &discardBody);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, long(std::max(1, timeoutMs)));
    const CURLcode done = curl_easy_perform(easy);
    // curl's messages name the host and the OS error, never a header.
    if (done != CURLE_OK) return Status::ioError(where + curl_easy_strerror(done));
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (status / 100 != 2) return Status::ioError(where + "HTTP " + std::to_string(status));
    return Status::ok();
}

std::string endpointLabel(const std::string& url) {
    std::string label = url.substr(0, url.find_first_of("?#"));
    const std::size_t scheme = label.find("://");
    const std::size_t hostStart = scheme == std::string::npos ? 0 : scheme + 3;
    const std::size_t pathStart = label.find('/', hostStart);
    const std::size_t at =
        label.rfind('@', pathStart == std::string::npos ? label.size() - 1 : pathStart);
    if (at != std::string::npos && at >= hostStart) label.erase(hostStart, at + 1 - hostStart);
    return label;
}

}  // namespace iris::agent
