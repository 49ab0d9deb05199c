#pragma once
// A ModelClient for any OpenAI-compatible chat-completions server (vLLM, SGLang, llama.cpp's
// server, hosted providers), over libcurl, streamed as Server-Sent Events. Failed attempts are
// retried with exponential back-off while nothing has been shown to the caller yet.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "agent/clients/model_client.h"

namespace iris::agent {

struct OpenAiSettings {
    std::string
        baseUrl;  // e.g. http://127.0.0.1:8000/v1; requests go to {baseUrl}/chat/completions
    std::string model;
    // The API key is read from this environment variable when the client is made; when it is
    // unset or empty no Authorization header is sent. The key itself is never stored elsewhere.
    std::string apiKeyEnv = "IRIS_API_KEY";
    // The key itself, used instead of apiKeyEnv when set: for a key Iris made and read from a
    // file only its user can read (a shared local engine, app/session/engine_sharing.h).
    std::string apiKey;
    int connectTimeoutMs = 10'000;
    int idleTimeoutMs = 60'000;    // no byte from the server for this long: the attempt fails
    int totalTimeoutMs = 600'000;  // the whole complete(), retries and back-off included
    int maxRetries = 4;            // attempts after the first
    int initialBackoffMs = 500;    // doubled per retry, with jitter; Retry-After wins when sent
    int maxBackoffMs = 20'000;
    bool stream = true;
};

// complete() runs one request at a time (it is not re-entrant); cancel() may come from any
// thread and makes complete() return Cancelled within about 50 ms, also during back-off.
// Errors: IoError for transport, HTTP and server-reported errors and timeouts (the message says
// which), Corrupt for a reply that breaks the protocol, InvalidArgument for a request that cannot
// be encoded, Cancelled.
class OpenAiClient final : public ModelClient {
public:
    explicit OpenAiClient(OpenAiSettings settings);
    ~OpenAiClient() override;
    OpenAiClient(const OpenAiClient&) = delete;
    OpenAiClient& operator=(const OpenAiClient&) = delete;

    Result<ChatResponse> complete(const ChatRequest& request,
                                  const TextStream& onText = {}) override;
    void cancel() override;
    std::string describe() const override;

    std::vector<std::string> endpointsUsed() const override;

    // How many HTTP attempts the last complete() made (1 + retries).
    int lastAttempts() const { return m_lastAttempts; }
    // The last complete() failed the way a server that is down or overloaded fails (no
    // connection, a reset, an idle timeout, HTTP 5xx or 429), before any text reached the
    // caller: another server could answer the same request (agent/clients/pooled_client.h).
    bool lastFailureWasServer() const { return m_lastFailureWasServer; }

private:
    struct Attempt;
    struct Curl;

    // One HTTP exchange; `retryable` says whether another attempt could succeed.
    Result<ChatResponse> attempt(const std::string& url, const std::string& body, Attempt& state,
                                 std::chrono::steady_clock::time_point deadline, bool& retryable);
    // attempt()'s phases: set up the request, run the transfer to its end (or a timeout or a
    // cancel), read the reply.
    void prepareRequest(const std::string& url, const std::string& body, Attempt& state);
    Status runTransfer(Attempt& state, std::chrono::steady_clock::time_point deadline,
                       bool& retryable);
    Result<ChatResponse> readReply(Attempt& state, bool& retryable);
    // Sleeps for `ms`; false when cancelled meanwhile.
    bool sleepUnlessCancelled(int ms);
    std::string redact(std::string text) const;

    OpenAiSettings m_settings;
    std::string m_apiKey;
    std::unique_ptr<Curl> m_curl;  // handles kept across calls, so connections are reused
    std::minstd_rand m_jitter;
    int m_lastAttempts = 0;
    bool m_lastFailureWasServer = false;
    bool m_answered = false;  // some complete() succeeded: endpointsUsed() names the server

    std::mutex m_mutex;  // guards m_inFlight and m_cancelled with m_wake
    std::condition_variable m_wake;
    bool m_inFlight = false;
    std::atomic<bool> m_cancelled{false};
};

}  // namespace iris::agent
