#include "agent/clients/openai_client.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <curl/curl.h>

#include "agent/clients/endpoint_pool.h"
#include "agent/clients/openai_protocol.h"
#include "agent/clients/sse_parser.h"
#include "base/clock.h"
#include "base/strings.h"

namespace iris::agent {
namespace {

constexpr std::size_t kErrorBodyLimit = 64 * 1024;  // what is kept of a non-2xx body
constexpr std::size_t kErrorExcerpt = 300;          // what of it goes into the message
constexpr int kPollMs = 50;                         // the longest a cancel waits to be seen

// `error`'s code with another message (the message gets context and redaction).
Status sameCode(const Status& error, std::string message) {
    switch (error.code()) {
        case StatusCode::InvalidArgument:
            return Status::invalidArgument(std::move(message));
        case StatusCode::NotFound:
            return Status::notFound(std::move(message));
        case StatusCode::Corrupt:
            return Status::corrupt(std::move(message));
        case StatusCode::Unsupported:
            return Status::unsupported(std::move(message));
        case StatusCode::OutOfRange:
            return Status::outOfRange(std::move(message));
        case StatusCode::Cancelled:
            return Status::cancelled(std::move(message));
        case StatusCode::Internal:
            return Status::internal(std::move(message));
        case StatusCode::Unavailable:
            return Status::unavailable(std::move(message));
        case StatusCode::Ok:
        case StatusCode::IoError:
            break;
    }
    return Status::ioError(std::move(message));
}

}  // namespace

struct OpenAiClient::Curl {
    CURL* easy = nullptr;
    CURLM* multi = nullptr;
    bool globalInit = false;

    Curl() {
        // Reference-counted and thread-safe since libcurl 7.84.
        globalInit = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
        easy = curl_easy_init();
        multi = curl_multi_init();
    }
    ~Curl() {
        if (multi != nullptr) curl_multi_cleanup(multi);
        if (easy != nullptr) curl_easy_cleanup(easy);
        if (globalInit) curl_global_cleanup();
    }
    Curl(const Curl&) = delete;
    Curl& operator=(const Curl&) = delete;
};

// One HTTP attempt's state, shared with libcurl's callbacks (which run on complete()'s thread).
struct OpenAiClient::Attempt {
    const TextStream* onText = nullptr;
    bool sse = true;  // a streamed answer is being read (else the body is collected whole)
    bool* delivered = nullptr;  // across attempts: text reached onText
    std::optional<Clock::time_point> firstText;

    long httpStatus = 0;
    std::string contentType;
    std::optional<long> retryAfterSeconds;
    std::string body;  // a non-2xx body (capped), or a whole non-streamed answer
    std::size_t bodyBytes = 0;
    Clock::time_point lastByte;

    SseParser parser;
    ChatCompletionStream stream;
    std::vector<SseEvent> events;
    Status failure;  // set by a callback that stopped the transfer

    // What libcurl reads and writes while the transfer runs, and how it ended.
    struct Headers {
        curl_slist* list = nullptr;
        Headers() = default;
        Headers(const Headers&) = delete;
        Headers& operator=(const Headers&) = delete;
        ~Headers() { curl_slist_free_all(list); }
        void add(const std::string& header) { list = curl_slist_append(list, header.c_str()); }
    } headers;
    char curlError[CURL_ERROR_SIZE] = {};
    CURLcode done = CURLE_OK;

    bool streaming() const { return sse && httpStatus / 100 == 2; }

    static std::size_t onHeader(char* data, std::size_t size, std::size_t count, void* user) {
        Attempt& a = *static_cast<Attempt*>(user);
        const std::size_t bytes = size * count;
        a.lastByte = Clock::now();
        const std::string_view line(data, bytes);
        if (line.starts_with("HTTP/")) {  // a new response (after 100 Continue, or a redirect)
            const std::size_t space = line.find(' ');
            a.httpStatus =
                space == std::string_view::npos
                    ? 0
                    : std::strtol(std::string(line.substr(space + 1, 3)).c_str(), nullptr, 10);
            a.contentType.clear();
            a.retryAfterSeconds.reset();
            return bytes;
        }
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) return bytes;
        const std::string_view name = trim(line.substr(0, colon));
        const std::string_view value = trim(line.substr(colon + 1));
        if (equalsIgnoringAsciiCase(name, "content-type")) {
            a.contentType = value;
        } else if (equalsIgnoringAsciiCase(name, "retry-after") && !value.empty() &&
                   std::all_of(value.begin(), value.end(),
                               [](char c) { return c >= '0' && c <= '9'; })) {
            // Seconds; the HTTP-date form is rare for APIs and falls back to back-off.
            a.retryAfterSeconds = value.size() > 6 ? 999999 : std::stol(std::string(value));
        }
        return bytes;
    }

    static std::size_t onBody(char* data, std::size_t size, std::size_t count, void* user) {
        Attempt& a = *static_cast<Attempt*>(user);
        const std::size_t bytes = size * count;
        a.lastByte = Clock::now();
        a.bodyBytes += bytes;
        if (a.httpStatus / 100 == 2 && a.sse && a.contentType.find("json") != std::string::npos) {
            a.sse = false;  // a server that ignored stream=true and answered in one piece
        }
        if (!a.streaming()) {
            const std::size_t room =
                a.httpStatus / 100 == 2
                    ? bytes
                    : kErrorBodyLimit - std::min(kErrorBodyLimit, a.body.size());
            a.body.append(data, std::min(bytes, room));
            return bytes;
        }
        Status status = a.consume(std::string_view(data, bytes));
        if (!status.isOk()) {
            a.failure = std::move(status);
            return 0;  // stops the transfer
        }
        return bytes;
    }

    Status consume(std::string_view bytes) {
        events.clear();
        IRIS_RETURN_IF_ERROR(parser.feed(bytes, events));
        std::string delta;
        for (const SseEvent& event : events) {
            IRIS_RETURN_IF_ERROR(stream.onEvent(event, delta));
            IRIS_RETURN_IF_ERROR(deliver(delta));
        }
        return Status::ok();
    }

    Status deliver(const std::string& delta) {
        if (delta.empty() || onText == nullptr || !*onText) return Status::ok();
        if (!firstText) firstText = Clock::now();
        *delivered = true;
        bool more = false;
        try {
            more = (*onText)(delta);
        } catch (const std::exception& e) {
            return Status::internal(std::string("the text callback threw: ") + e.what());
        }
        if (!more) {
            return Status::cancelled("cancelled by the text callback");
        }
        return Status::ok();
    }
};

OpenAiClient::OpenAiClient(OpenAiSettings settings)
    : m_settings(std::move(settings)),
      m_curl(std::make_unique<Curl>()),
      m_jitter(std::random_device{}()) {
    while (!m_settings.baseUrl.empty() && m_settings.baseUrl.back() == '/')
        m_settings.baseUrl.pop_back();
    if (!m_settings.apiKey.empty()) {
        m_apiKey = std::move(m_settings.apiKey);
        m_settings.apiKey.clear();
    } else if (!m_settings.apiKeyEnv.empty()) {
        if (const char* key = std::getenv(m_settings.apiKeyEnv.c_str()); key != nullptr)
            m_apiKey = key;
    }
}

OpenAiClient::~OpenAiClient() = default;

std::string OpenAiClient::describe() const {
    return redact("openai " + m_settings.baseUrl + " model=" + m_settings.model);
}

std::vector<std::string> OpenAiClient::endpointsUsed() const {
    if (!m_answered) return {};
    return {endpointLabel(m_settings.baseUrl)};
}

std::string OpenAiClient::redact(std::string text) const {
    if (m_apiKey.empty()) return text;
    for (std::size_t at; (at = text.find(m_apiKey)) != std::string::npos;)
        text.replace(at, m_apiKey.size(), "[redacted]");
    return text;
}

void OpenAiClient::cancel() {
    {
        const std::lock_guard lock(m_mutex);
        if (!m_inFlight) return;
        m_cancelled = true;
    }
    m_wake.notify_all();
    if (m_curl->multi != nullptr) curl_multi_wakeup(m_curl->multi);
}

bool OpenAiClient::sleepUnlessCancelled(int ms) {
    std::unique_lock lock(m_mutex);
    m_wake.wait_for(lock, std::chrono::milliseconds(ms), [&] { return m_cancelled.load(); });
    return !m_cancelled;
}

Result<ChatResponse> OpenAiClient::complete(const ChatRequest& request, const TextStream& onText) {
    {
        const std::lock_guard lock(m_mutex);
        m_inFlight = true;
        m_cancelled = false;
    }
    struct InFlight {
        OpenAiClient& client;
        ~InFlight() {
            const std::lock_guard lock(client.m_mutex);
            client.m_inFlight = false;
        }
    } inFlight{*this};

    m_lastAttempts = 0;
    m_lastFailureWasServer = false;
    const std::string url = m_settings.baseUrl + "/chat/completions";
    const std::string where = "POST " + url + ": ";
    if (m_curl->easy == nullptr || m_curl->multi == nullptr)
        return Status::internal(where + "libcurl could not be initialised");
    Result<std::string> body = chatCompletionBody(request, m_settings.model, m_settings.stream);
    if (!body) return body.status();

    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = start + std::chrono::milliseconds(m_settings.totalTimeoutMs);
    bool delivered = false;
    for (int retry = 0;; ++retry) {
        if (m_cancelled) return Status::cancelled(where + "cancelled");
        Attempt state;
        state.onText = &onText;
        state.sse = m_settings.stream;
        state.delivered = &delivered;
        ++m_lastAttempts;
        bool retryable = false;
        Result<ChatResponse> result = attempt(url, *body, state, deadline, retryable);
        if (result) {
            result->latencyMs = millisecondsSince(start);
            if (state.firstText) {
                result->timeToFirstTokenMs =
                    std::chrono::duration<double, std::milli>(*state.firstText - start).count();
            }
            if (result->model.empty()) result->model = m_settings.model;
            m_answered = true;
            return result;
        }
        const Status error = result.status();
        if (error.code() == StatusCode::Cancelled)
            return Status::cancelled(where + error.message());
        std::string message = redact(where + error.message());
        if (!retryable || delivered || retry >= m_settings.maxRetries) {
            m_lastFailureWasServer = retryable && !delivered;
            if (retry > 0) message += " (gave up after " + std::to_string(retry + 1) + " attempts)";
            return sameCode(error, std::move(message));
        }
        int delayMs = 0;
        if (state.retryAfterSeconds) {
            delayMs = int(std::min<long>(*state.retryAfterSeconds, 24 * 3600) * 1000);
        } else {
            const double base =
                std::min(double(m_settings.maxBackoffMs),
                         double(m_settings.initialBackoffMs) * std::pow(2.0, double(retry)));
            std::uniform_real_distribution<double> jitter(0.5, 1.0);
            delayMs = int(base * jitter(m_jitter));
        }
        if (Clock::now() + std::chrono::milliseconds(delayMs) >= deadline) {
            m_lastFailureWasServer = true;
            return Status::ioError(message +
                                   " (no time left to retry within the total timeout of " +
                                   std::to_string(m_settings.totalTimeoutMs) + " ms)");
        }
        if (!sleepUnlessCancelled(delayMs)) return Status::cancelled(where + "cancelled");
    }
}

Result<ChatResponse> OpenAiClient::attempt(const std::string& url, const std::string& body,
                                           Attempt& state, Clock::time_point deadline,
                                           bool& retryable) {
    retryable = false;
    prepareRequest(url, body, state);
    struct Transfer {
        CURLM* multi;
        CURL* easy;
        ~Transfer() { curl_multi_remove_handle(multi, easy); }
    };
    if (curl_multi_add_handle(m_curl->multi, m_curl->easy) != CURLM_OK)
        return Status::internal("libcurl refused the transfer");
    const Transfer transfer{m_curl->multi, m_curl->easy};
    IRIS_RETURN_IF_ERROR(runTransfer(state, deadline, retryable));
    return readReply(state, retryable);
}

void OpenAiClient::prepareRequest(const std::string& url, const std::string& body, Attempt& state) {
    CURL* easy = m_curl->easy;
    curl_easy_reset(easy);  // keeps the connection cache
    state.headers.add("Content-Type: application/json");
    state.headers.add(m_settings.stream ? "Accept: text/event-stream" : "Accept: application/json");
    state.headers.add("Expect:");  // no 100-continue round trip
    if (!m_apiKey.empty()) state.headers.add("Authorization: Bearer " + m_apiKey);

    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");  // not file://, not ftp://
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, state.headers.list);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Attempt::onBody);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &state);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &Attempt::onHeader);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &state);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, state.curlError);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                     long(std::max(1, m_settings.connectTimeoutMs)));
}

// Polls the transfer until libcurl reports it done (state.done), waking at least every kPollMs
// to notice a cancel, the total deadline and the idle timeout.
Status OpenAiClient::runTransfer(Attempt& state, Clock::time_point deadline, bool& retryable) {
    CURLM* multi = m_curl->multi;
    const auto idle = std::chrono::milliseconds(std::max(1, m_settings.idleTimeoutMs));
    state.lastByte = Clock::now();
    for (;;) {
        int running = 0;
        if (const CURLMcode code = curl_multi_perform(multi, &running); code != CURLM_OK)
            return Status::internal(std::string("libcurl: ") + curl_multi_strerror(code));
        int queued = 0;
        while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
            if (message->msg == CURLMSG_DONE) {
                state.done = message->data.result;
                running = 0;
            }
        }
        if (running == 0) return Status::ok();
        if (m_cancelled) return Status::cancelled("cancelled");
        const Clock::time_point now = Clock::now();
        if (now >= deadline) {
            return Status::ioError("total timeout: no complete answer within " +
                                   std::to_string(m_settings.totalTimeoutMs) + " ms");
        }
        if (now - state.lastByte >= idle) {
            retryable = !*state.delivered;
            return Status::ioError(
                "idle timeout: no data from the server for " +
                std::to_string(m_settings.idleTimeoutMs) + " ms" +
                (state.stream.events() > 0
                     ? " after " + std::to_string(state.stream.events()) + " events"
                     : std::string()));
        }
        const auto wait = std::min({std::chrono::milliseconds(kPollMs),
                                    std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::min(deadline, state.lastByte + idle) - now) +
                                        std::chrono::milliseconds(1)});
        curl_multi_poll(multi, nullptr, 0, int(wait.count()), nullptr);
    }
}

// The finished transfer's answer, or why there is none: a transport error, an HTTP error
// status, a reply that does not parse, a stream cut short.
Result<ChatResponse> OpenAiClient::readReply(Attempt& state, bool& retryable) {
    if (!state.failure.isOk()) return state.failure;  // a callback stopped the transfer
    if (m_cancelled) return Status::cancelled("cancelled");
    const CURLcode done = state.done;
    const std::string curlMessage =
        state.curlError[0] != '\0' ? state.curlError : curl_easy_strerror(done);
    if (done != CURLE_OK) {
        retryable = !*state.delivered;
        switch (done) {
            case CURLE_OPERATION_TIMEDOUT:  // the only libcurl timeout set is the connect one
                return Status::ioError("connect timeout: no connection within " +
                                       std::to_string(m_settings.connectTimeoutMs) + " ms (" +
                                       curlMessage + ")");
            case CURLE_COULDNT_RESOLVE_HOST:
            case CURLE_COULDNT_RESOLVE_PROXY:
            case CURLE_COULDNT_CONNECT:
                return Status::ioError("cannot connect: " + curlMessage);
            default:
                break;
        }
        if (state.httpStatus / 100 == 2 && state.bodyBytes > 0) {
            return Status::ioError("the server closed the connection mid-answer after " +
                                   std::to_string(state.stream.events()) + " events (" +
                                   curlMessage + ")");
        }
        if (done == CURLE_UNSUPPORTED_PROTOCOL || done == CURLE_URL_MALFORMAT) retryable = false;
        return Status::ioError(curlMessage);
    }

    if (state.httpStatus / 100 != 2) {
        retryable = state.httpStatus == 429 || state.httpStatus / 100 == 5;
        // Redact before cutting, so that a cut cannot leave part of the key behind.
        std::string excerpt = redact(state.body);
        if (excerpt.size() > kErrorExcerpt) excerpt = excerpt.substr(0, kErrorExcerpt) + "...";
        return Status::ioError("HTTP " + std::to_string(state.httpStatus) +
                               (excerpt.empty() ? std::string() : ": " + excerpt));
    }
    if (!state.streaming()) {
        Result<ChatResponse> response = parseChatCompletion(state.body);
        if (!response) return response.status();
        IRIS_RETURN_IF_ERROR(state.deliver(response->text));
        return response;
    }
    if (!state.stream.sawDone() && !state.stream.sawFinishReason()) {
        retryable = !*state.delivered;
        return Status::ioError("the server closed the connection mid-stream after " +
                               std::to_string(state.stream.events()) + " events (no [DONE])");
    }
    return state.stream.response();
}

}  // namespace iris::agent
