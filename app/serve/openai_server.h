#pragma once
// `iris serve`'s HTTP server: an OpenAI-compatible API (POST /v1/chat/completions,
// POST /v1/completions, GET /v1/models) over a Scheduler, with GET /health and GET /metrics.
// cpp-httplib runs the connections, one thread each from a fixed pool; every completion is one
// scheduler request, read token by token on its connection's thread.
//
// Security: with an API key, every request must carry "Authorization: Bearer <key>" (compared
// in constant time; the key is never logged). Bodies over maxBodyBytes get 413. Each request is
// logged as one line on stderr: method, path, status, tokens, seconds; never bodies or headers.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "app/serve/server_metrics.h"
#include "base/status.h"
#include "inference/scheduler.h"

namespace httplib {
class Server;
struct Request;
struct Response;
class DataSink;
}  // namespace httplib

namespace iris::app::serve {

struct GenerationSettings;

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                             // 0: any free port (start() says which)
    std::string apiKey;                          // empty: no key asked for
    std::size_t maxBodyBytes = std::size_t(64) << 20;
    std::string modelName = "iris";              // what /v1/models and responses call it
    int httpThreads = 8;                         // connections served at once
    int retryAfterSeconds = 1;                   // sent with 429
    bool logRequests = true;
    // stop() shuts the scheduler down (every generation of it ends). False for a scheduler that
    // other clients in the process share (app/session/engine_sharing.h): stop() then cancels only
    // this server's generations and leaves the scheduler running for them.
    bool shutdownSchedulerOnStop = true;
};

class OpenAiServer {
public:
    explicit OpenAiServer(ServerOptions options);
    // stop(), if not done yet.
    ~OpenAiServer();
    OpenAiServer(const OpenAiServer&) = delete;
    OpenAiServer& operator=(const OpenAiServer&) = delete;

    // Binds and serves on a thread of its own; the port bound. IoError naming host and port.
    // Until setScheduler(), /health says 503 "loading" and completions get 503; from stop() on,
    // 503 "shutting_down".
    Result<int> start();
    // Hands in the loaded model's scheduler (once; thread-safe). The server holds it until stop().
    void setScheduler(std::shared_ptr<inference::Scheduler> scheduler);
    // Ends streams in flight with an error chunk, cancels every generation, stops listening and
    // joins. Idempotent; thread-safe.
    void stop();

    // The scheduler once set, else null (tests read its stats and fill its queue).
    inference::Scheduler* scheduler() const { return m_schedulerView.load(); }

private:
    struct Job;

    // What this thread's request log line says about tokens.
    static void noteTokens(std::int64_t prompt, std::int64_t generated);
    void installRoutes();
    bool authorized(const httplib::Request& request) const;
    void health(httplib::Response& response) const;
    void models(httplib::Response& response) const;
    void chatCompletions(const httplib::Request& request, httplib::Response& response);
    void completions(const httplib::Request& request, httplib::Response& response);

    // completions' shared steps (openai_server_jobs.cpp).
    inference::Scheduler* ready(httplib::Response& response) const;
    void fail(httplib::Response& response, const Status& status) const;
    std::shared_ptr<Job> submit(httplib::Response& response, inference::GenerateRequest request,
                                const GenerationSettings& settings, const char* idPrefix);
    // The generation's tokens to onText (when set) until it ends; cancels it once onText says
    // false or `connected` does (asked every kPoll while no token comes).
    Result<inference::GenerateResult> follow(Job& job,
                                             const std::function<bool(std::string_view)>& onText,
                                             const std::function<bool()>& connected);
    void answerChat(Job& job, const httplib::Request& request, httplib::Response& response);
    bool streamChat(Job& job, httplib::DataSink& sink);
    void answerCompletion(Job& job, const httplib::Request& request,
                          httplib::Response& response);
    bool streamCompletion(Job& job, httplib::DataSink& sink);
    // Answers with Server-Sent Events written by `write` (streamChat or streamCompletion).
    void stream(httplib::Response& response, std::shared_ptr<Job> job,
                bool (OpenAiServer::*write)(Job&, httplib::DataSink&));
    // The job's stream is under way (its provider called) or will never be (its response
    // dropped): it no longer holds up stop().
    void streamStarted(Job& job);
    bool streamFailed(Job& job, httplib::DataSink& sink,
                      const Result<inference::GenerateResult>& result);

    ServerOptions m_options;
    std::unique_ptr<httplib::Server> m_http;
    int m_listenSocket = -1;  // the socket bind_to_port last prepared: the bound one, once bound
    std::thread m_thread;
    ServerMetrics m_metrics;
    std::atomic<bool> m_stopping{false};
    std::atomic<std::uint64_t> m_nextId{0};
    std::string m_idSalt;  // per server start, so ids differ across restarts
    std::int64_t m_startedAt = 0;

    // Streams from their submit to httplib's first call of their content provider. stop() waits
    // for them before it closes the listening socket: httplib calls no provider once that is
    // closed, and such a client would get an empty 200 instead of the shutting_down event.
    std::mutex m_streamsMutex;
    std::condition_variable m_streamsChanged;
    int m_streamsStarting = 0;

    std::mutex m_stopMutex;      // one stop() at a time
    mutable std::mutex m_mutex;  // guards m_scheduler
    std::shared_ptr<inference::Scheduler> m_scheduler;
    std::atomic<inference::Scheduler*> m_schedulerView{nullptr};
};

}  // namespace iris::app::serve
