#include "app/serve/openai_server.h"

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "app/serve/openai_response.h"

namespace iris::app::serve {
namespace {

using Clock = std::chrono::steady_clock;

// What the log line of the request on this thread says. httplib runs the routing, the handler,
// a streamed body's provider and the logger on the connection's thread, in that order.
struct RequestTrace {
    Clock::time_point start;
    std::int64_t promptTokens = -1;  // -1: not a completion
    std::int64_t generatedTokens = -1;
};
thread_local RequestTrace t_trace;

// Equal strings in time that depends on their lengths only, so that a wrong key's timing says
// nothing about how much of it was right.
bool constantTimeEquals(std::string_view a, std::string_view b) {
    unsigned char difference = a.size() == b.size() ? 0 : 1;
    const std::size_t n = std::max(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        difference |= static_cast<unsigned char>(x ^ y);
    }
    return difference == 0;
}

void setJson(httplib::Response& response, int status, const std::string& body) {
    response.status = status;
    response.set_content(body, "application/json");
}

// The error JSON for statuses httplib itself answers (no route, a body over the limit).
void describeError(httplib::Response& response) {
    if (!response.body.empty()) return;
    switch (response.status) {
        case 404:
            setJson(response, 404, errorJson("no such route", "invalid_request_error", {},
                                             "not_found"));
            break;
        case 413:
            setJson(response, 413,
                     errorJson("the request body is larger than the server accepts (--max-body-mb)",
                               "invalid_request_error", {}, "request_too_large"));
            break;
        default:
            setJson(response, response.status,
                    errorJson("HTTP " + std::to_string(response.status), "invalid_request_error"));
    }
}

void logLine(const httplib::Request& request, const httplib::Response& response) {
    const double seconds = std::chrono::duration<double>(Clock::now() - t_trace.start).count();
    std::string tokens;
    if (t_trace.promptTokens >= 0) {
        tokens = " prompt " + std::to_string(t_trace.promptTokens) + " generated " +
                 std::to_string(std::max<std::int64_t>(t_trace.generatedTokens, 0));
    }
    std::fprintf(stderr, "iris serve: %s %s %d%s %.3f s\n", request.method.c_str(),
                 request.path.c_str(), response.status, tokens.c_str(), seconds);
}

}  // namespace

void OpenAiServer::noteTokens(std::int64_t prompt, std::int64_t generated) {
    t_trace.promptTokens = prompt;
    t_trace.generatedTokens = generated;
}

OpenAiServer::OpenAiServer(ServerOptions options)
    : m_options(std::move(options)), m_http(std::make_unique<httplib::Server>()) {
    std::random_device random;
    char salt[16];
    std::snprintf(salt, sizeof salt, "%08x", random());
    m_idSalt = salt;
    m_startedAt = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    installRoutes();
}

OpenAiServer::~OpenAiServer() {
    stop();
}

bool OpenAiServer::authorized(const httplib::Request& request) const {
    if (m_options.apiKey.empty()) return true;
    const std::string header = request.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (!std::string_view(header).starts_with(kBearer)) return false;
    return constantTimeEquals(std::string_view(header).substr(kBearer.size()), m_options.apiKey);
}

void OpenAiServer::installRoutes() {
    const int threads = m_options.httpThreads;
    m_http->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    m_http->set_payload_max_length(m_options.maxBodyBytes);
    // cpp-httplib's default sets SO_REUSEPORT, which lets a second server bind the same port and
    // silently take half of the connections; SO_REUSEADDR alone still allows a restart while the
    // last run's connections linger in TIME_WAIT, and a port in use is then an error.
    m_http->set_socket_options([this](int socket) {
        const int yes = 1;
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        m_listenSocket = socket;
    });
    m_http->set_pre_routing_handler([this](const httplib::Request& request,
                                           httplib::Response& response) {
        t_trace = {Clock::now(), -1, -1};
        if (authorized(request)) return httplib::Server::HandlerResponse::Unhandled;
        setJson(response, 401,
                errorJson("a valid API key is required: send 'Authorization: Bearer <key>'",
                          "invalid_request_error", {}, "invalid_api_key"));
        return httplib::Server::HandlerResponse::Handled;
    });
    m_http->set_error_handler([](const httplib::Request&, httplib::Response& response) {
        describeError(response);
    });
    // Counted once the response is complete and before httplib writes it: counted in the
    // logger (which runs after the bytes went out), a client that read an answer could ask
    // /metrics before its response was counted.
    m_http->set_post_routing_handler([this](const httplib::Request&, httplib::Response& response) {
        m_metrics.countResponse(response.status);
    });
    m_http->set_logger([this](const httplib::Request& request, const httplib::Response& response) {
        if (m_options.logRequests) logLine(request, response);
    });
    m_http->Get("/health", [this](const httplib::Request&, httplib::Response& response) {
        health(response);
    });
    m_http->Get("/v1/models", [this](const httplib::Request&, httplib::Response& response) {
        models(response);
    });
    m_http->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
        const inference::Scheduler* scheduler = m_schedulerView.load();
        const std::optional<inference::SchedulerStats> stats =
            scheduler != nullptr ? std::optional(scheduler->stats()) : std::nullopt;
        response.set_content(m_metrics.prometheusText(stats ? &*stats : nullptr),
                             "text/plain; version=0.0.4");
    });
    m_http->Post("/v1/chat/completions",
                 [this](const httplib::Request& request, httplib::Response& response) {
                     chatCompletions(request, response);
                 });
    m_http->Post("/v1/completions",
                 [this](const httplib::Request& request, httplib::Response& response) {
                     completions(request, response);
                 });
}

Result<int> OpenAiServer::start() {
    const std::string where = m_options.host + ":" + std::to_string(m_options.port);
    int port = m_options.port;
    if (port == 0) {
        port = m_http->bind_to_any_port(m_options.host);
        if (port < 0) return Status::ioError("cannot listen on " + where);
    } else if (!m_http->bind_to_port(m_options.host, port)) {
        return Status::ioError("cannot listen on " + where +
                               " (in use, or not an address of this machine)");
    }
    // cpp-httplib listens with a backlog of 5 connections. Agent clients connect in bursts (64
    // sessions, each opening a connection per request), and a full accept queue drops the
    // handshake, so clients wait a second or more for the SYN to be resent and the load test
    // lost requests. Listening again on the bound socket raises the limit (Linux allows it).
    if (m_listenSocket >= 0) ::listen(m_listenSocket, SOMAXCONN);
    auto ended = std::make_shared<std::atomic<bool>>(false);
    m_thread = std::thread([this, ended] {
        m_http->listen_after_bind();
        ended->store(true);
    });
    // cpp-httplib's stop() does nothing until the accept loop runs (it checks is_running()),
    // so a stop() right after start() (a model that fails to load at once) would leave the
    // loop listening forever and stop()'s join hanging: start() returns once it runs.
    while (!m_http->is_running() && !ended->load())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return port;
}

void OpenAiServer::setScheduler(std::shared_ptr<inference::Scheduler> scheduler) {
    std::lock_guard lock(m_mutex);
    if (m_stopping || m_scheduler != nullptr) return;  // the caller's scheduler ends here
    m_scheduler = std::move(scheduler);
    m_schedulerView = m_scheduler.get();
}

void OpenAiServer::stop() {
    // Not under m_mutex: handlers take it, and the HTTP pool drains only when they return.
    std::lock_guard stopping(m_stopMutex);
    if (m_stopping.exchange(true)) return;
    // Streams see m_stopping and end with an error chunk once their generation, cancelled by
    // shutdown(), reports back; then no handler waits and the HTTP pool can drain.
    // A shared scheduler runs on for its other clients: follow() cancels this server's
    // generations once it sees m_stopping.
    inference::Scheduler* scheduler = m_schedulerView.load();
    if (scheduler != nullptr && m_options.shutdownSchedulerOnStop) scheduler->shutdown();
    {
        // Bounded: a client that reads nothing can hold its stream's headers in the socket.
        std::unique_lock lock(m_streamsMutex);
        m_streamsChanged.wait_for(lock, std::chrono::seconds(2),
                                  [&] { return m_streamsStarting == 0; });
    }
    m_http->stop();
    if (m_thread.joinable()) m_thread.join();
    std::lock_guard lock(m_mutex);
    m_schedulerView = nullptr;
    m_scheduler.reset();
}

void OpenAiServer::health(httplib::Response& response) const {
    std::lock_guard lock(m_mutex);
    if (m_stopping) return setJson(response, 503, R"({"status":"shutting_down"})");
    if (m_scheduler != nullptr) return setJson(response, 200, R"({"status":"ok"})");
    setJson(response, 503, R"({"status":"loading"})");
}

void OpenAiServer::models(httplib::Response& response) const {
    const nlohmann::json body = {
        {"object", "list"},
        {"data",
         nlohmann::json::array({{{"id", m_options.modelName},
                                 {"object", "model"},
                                 {"created", m_startedAt},
                                 {"owned_by", "iris"}}})}};
    setJson(response, 200, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace iris::app::serve
