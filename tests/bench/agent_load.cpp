#include "tests/bench/agent_load.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <latch>
#include <ostream>
#include <sstream>
#include <thread>
#include <utility>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace iris::bench {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kErrorBodyLimit = 4096;  // what of a failed request's body is reported

// splitmix64: the text must be the same on every platform and standard library, which
// std::uniform_int_distribution does not promise.
class Random {
public:
    explicit Random(std::uint64_t seed) : m_state(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
    int between(int lo, int hi) { return lo + below(hi - lo + 1); }
    template <std::size_t N>
    const char* pick(const std::array<const char*, N>& words) {
        return words[static_cast<std::size_t>(below(static_cast<int>(N)))];
    }

private:
    std::uint64_t m_state;
};

constexpr std::array<const char*, 96> kWords = {
    "the",      "window",  "button",   "shows",   "a",        "list",     "of",      "files",
    "and",      "user",    "menu",     "opens",   "when",     "you",      "click",   "on",
    "text",     "field",   "is",       "empty",   "page",     "loads",    "after",   "dialog",
    "with",     "two",     "options",  "save",    "cancel",   "document", "title",   "bar",
    "contains", "name",    "current",  "folder",  "selected", "item",     "in",      "table",
    "row",      "column",  "value",    "changed", "from",     "to",       "new",     "settings",
    "panel",    "scroll",  "down",     "see",     "more",     "results",  "search",  "box",
    "has",      "focus",   "cursor",   "at",      "end",      "line",     "status",  "reports",
    "that",     "upload",  "finished", "error",   "message",  "appears",  "below",   "form",
    "submit",   "link",    "points",   "another", "tab",      "browser",  "address", "image",
    "preview",  "toolbar", "icon",     "next",    "previous", "step",     "task",    "requires",
    "checkbox", "enabled", "disabled", "visible", "hidden",   "label",    "number",  "date",
};
constexpr std::array<const char*, 16> kVerbs = {
    "click",  "type",   "scroll", "open",   "close", "select", "drag",   "read",
    "search", "upload", "rename", "delete", "copy",  "paste",  "submit", "navigate",
};
constexpr std::array<const char*, 16> kNouns = {
    "element", "text",  "window", "file",   "tab",    "menu", "cell",  "page",
    "field",   "image", "folder", "dialog", "option", "link", "table", "screen",
};
constexpr std::array<const char*, 16> kParameters = {
    "x",     "y",      "target", "text",  "path", "index",  "direction", "amount",
    "label", "button", "url",    "query", "row",  "column", "modifiers", "timeout_ms",
};
constexpr std::array<const char*, 4> kTypes = {"string", "integer", "number", "boolean"};
constexpr std::array<const char*, 10> kRoles = {
    "button", "link", "textbox", "checkbox", "menuitem", "tab", "cell", "heading", "image", "list",
};

// `count` words of the list, space-separated, the first capitalised, ending in a full stop.
std::string sentence(Random& random, int count) {
    std::string text;
    for (int i = 0; i < count; ++i) {
        if (i > 0) text += ' ';
        text += random.pick(kWords);
    }
    if (!text.empty()) text[0] = static_cast<char>(text[0] - 'a' + 'A');
    return text + '.';
}

// One tool as OpenAI's "tools" array describes it, keys in the usual order.
std::string toolSchema(Random& random, int number) {
    OrderedJson properties = OrderedJson::object();
    OrderedJson required = OrderedJson::array();
    const int parameters = random.between(2, 4);
    for (int i = 0; i < parameters; ++i) {
        const std::string name = random.pick(kParameters);
        if (properties.contains(name)) continue;
        const std::string type = random.pick(kTypes);
        OrderedJson& property = properties[name];
        property["type"] = type;
        property["description"] = sentence(random, random.between(3, 6));
        if (type == "integer" || type == "number") {
            property["minimum"] = 0;
            property["maximum"] = random.between(1, 4096);
        } else if (type == "string" && random.below(2) == 0) {
            OrderedJson& values = property["enum"] = OrderedJson::array();
            for (int v = random.between(2, 5); v > 0; --v)
                values.push_back(random.pick(kWords));
        }
        if (random.below(2) == 0) required.push_back(name);
    }
    const std::string name =
        std::string(random.pick(kVerbs)) + '_' + random.pick(kNouns) + '_' + std::to_string(number);
    OrderedJson tool;
    tool["type"] = "function";
    tool["function"]["name"] = name;
    tool["function"]["description"] = sentence(random, random.between(6, 12));
    tool["function"]["parameters"] = {
        {"type", "object"}, {"properties", properties}, {"required", required}};
    return tool.dump();
}

// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

Distribution distribution(std::vector<double> values) {
    Distribution d;
    if (values.empty()) return d;
    std::sort(values.begin(), values.end());
    d.count = static_cast<int>(values.size());
    double sum = 0;
    for (const double v : values)
        sum += v;
    d.mean = sum / static_cast<double>(values.size());
    d.p50 = percentile(values, 0.5);
    d.p90 = percentile(values, 0.9);
    d.max = values.back();
    return d;
}

// A JSON integer at `key` of `object`, or -1.
long count(const Json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer()) return -1;
    return it->get<long>();
}

std::string excerpt(std::string_view text) {
    std::string out(text.substr(0, kErrorBodyLimit));
    if (text.size() > kErrorBodyLimit) out += "...";
    return out;
}

// What one session's requests share: a libcurl handle (the connection is kept alive between
// turns) and the request's state while its answer streams in.
class Session {
public:
    Session(const AgentLoadOptions& options, std::string systemPrompt, int index)
        : m_options(options), m_index(index) {
        m_curl = curl_easy_init();
        m_history.push_back({{"role", "system"}, {"content", std::move(systemPrompt)}});
    }
    ~Session() {
        if (m_headers != nullptr) curl_slist_free_all(m_headers);
        if (m_curl != nullptr) curl_easy_cleanup(m_curl);
    }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    void run(std::vector<RequestRecord>& records) {
        for (int turn = 0; turn < m_options.turns; ++turn) {
            m_history.push_back(
                {{"role", "user"},
                 {"content",
                  agentObservation(m_index, turn, m_options.observationTokens, m_options.seed)}});
            RequestRecord& record = records.emplace_back();
            record.session = m_index;
            record.turn = turn;
            record.messages = static_cast<int>(m_history.size());
            send(record);
            if (!record.error.empty()) return;
            m_history.push_back({{"role", "assistant"}, {"content", record.reply}});
        }
    }

private:
    struct Transfer {
        Session* session = nullptr;
        ChunkStream* stream = nullptr;
        Clock::time_point start;
        std::string errorBody;  // a non-2xx answer's body, cut at kErrorBodyLimit
        Status status;          // the first stream error; ends the transfer
    };

    static std::size_t onData(char* data, std::size_t size, std::size_t items, void* user) {
        auto& t = *static_cast<Transfer*>(user);
        const std::size_t bytes = size * items;
        long http = 0;
        curl_easy_getinfo(t.session->m_curl, CURLINFO_RESPONSE_CODE, &http);
        if (http < 200 || http >= 300) {
            if (t.errorBody.size() <= kErrorBodyLimit)
                t.errorBody.append(data, std::min(bytes, kErrorBodyLimit + 1 - t.errorBody.size()));
            return bytes;
        }
        const double now = std::chrono::duration<double>(Clock::now() - t.start).count();
        t.status = t.stream->feed(std::string_view(data, bytes), now);
        return t.status.isOk() ? bytes : 0;  // 0 aborts the transfer
    }

    void send(RequestRecord& record) {
        if (m_curl == nullptr) {
            record.error = "curl_easy_init failed";
            return;
        }
        const Json body = {{"model", m_options.model},
                           {"messages", m_history},
                           {"stream", true},
                           {"stream_options", {{"include_usage", true}}},
                           {"max_tokens", m_options.maxTokens},
                           {"temperature", 0}};
        const std::string text = body.dump(-1, ' ', false, Json::error_handler_t::replace);
        std::string url = m_options.endpoint;
        while (!url.empty() && url.back() == '/')
            url.pop_back();
        url += "/chat/completions";
        if (m_headers == nullptr) {
            m_headers = curl_slist_append(m_headers, "Content-Type: application/json");
            m_headers = curl_slist_append(m_headers, "Accept: text/event-stream");
            if (!m_options.apiKey.empty())
                m_headers = curl_slist_append(
                    m_headers, ("Authorization: Bearer " + m_options.apiKey).c_str());
        }

        ChunkStream stream(record);
        Transfer t;
        t.session = this;
        t.stream = &stream;
        char curlError[CURL_ERROR_SIZE] = {};
        curl_easy_setopt(m_curl, CURLOPT_URL, url.c_str());
        curl_easy_setopt(m_curl, CURLOPT_HTTPHEADER, m_headers);
        curl_easy_setopt(m_curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(text.size()));
        curl_easy_setopt(m_curl, CURLOPT_POSTFIELDS, text.c_str());
        curl_easy_setopt(m_curl, CURLOPT_WRITEFUNCTION, &Session::onData);
        curl_easy_setopt(m_curl, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(m_curl, CURLOPT_ERRORBUFFER, curlError);
        curl_easy_setopt(m_curl, CURLOPT_NOSIGNAL, 1L);  // several threads
        curl_easy_setopt(m_curl, CURLOPT_CONNECTTIMEOUT, 10L);
        curl_easy_setopt(m_curl, CURLOPT_TIMEOUT,
                         static_cast<long>(m_options.requestTimeoutSeconds));
        // Benchmarks run against a server on this machine; a developer's proxy must not relay it.
        curl_easy_setopt(m_curl, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");

        t.start = Clock::now();
        const CURLcode code = curl_easy_perform(m_curl);
        curl_easy_setopt(m_curl, CURLOPT_ERRORBUFFER, nullptr);  // curlError goes out of scope
        record.total = std::chrono::duration<double>(Clock::now() - t.start).count();
        long http = 0;
        curl_easy_getinfo(m_curl, CURLINFO_RESPONSE_CODE, &http);

        if (!t.status.isOk()) {
            record.error = "POST " + url + ": " + t.status.message();
        } else if (code != CURLE_OK) {
            record.error = std::string("POST ") + url + ": " +
                           (curlError[0] != 0 ? curlError : curl_easy_strerror(code));
        } else if (http < 200 || http >= 300) {
            record.error =
                "POST " + url + ": HTTP " + std::to_string(http) + ": " + excerpt(t.errorBody);
        } else if (Status s = stream.finish(); !s.isOk()) {
            record.error = "POST " + url + ": " + s.message();
        }
    }

    const AgentLoadOptions& m_options;
    const int m_index;
    CURL* m_curl = nullptr;
    curl_slist* m_headers = nullptr;
    Json m_history = Json::array();
};

AgentLoadReport summarize(std::vector<std::vector<RequestRecord>> perSession, double wall,
                          int turns) {
    AgentLoadReport report;
    report.wall = wall;
    std::vector<double> ttfts;
    std::vector<std::vector<double>> byTurn(static_cast<std::size_t>(turns));
    for (std::vector<RequestRecord>& records : perSession) {
        for (RequestRecord& r : records) {
            ++report.requests;
            if (!r.error.empty()) {
                ++report.errors;
                // Sessions run side by side; the earliest session's error is the one reported.
                if (report.firstError.empty())
                    report.firstError = "session " + std::to_string(r.session) + " turn " +
                                        std::to_string(r.turn) + ": " + r.error;
                report.records.push_back(std::move(r));
                continue;
            }
            report.generatedTokens += r.generatedTokens;
            if (r.ttft >= 0) {
                ttfts.push_back(r.ttft);
                byTurn[static_cast<std::size_t>(r.turn)].push_back(r.ttft);
            }
            if (r.promptTokens >= 0 && r.cachedTokens >= 0) {
                report.promptTokens += r.promptTokens;
                report.cachedTokens += r.cachedTokens;
                ++report.requestsWithCacheInfo;
            }
            report.records.push_back(std::move(r));
        }
    }
    report.ttft = distribution(std::move(ttfts));
    for (std::vector<double>& values : byTurn)
        report.ttftMeanByTurn.push_back(values.empty() ? -1 : distribution(values).mean);
    report.tokensPerSecond = wall > 0 ? static_cast<double>(report.generatedTokens) / wall : 0;
    return report;
}

// The value after a flag, as an int >= `min`.
Result<int> intArgument(const std::string& flag, const std::string& value, int min) {
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno != 0 || n < min || n > 1'000'000)
        return Status::invalidArgument(
            flag + ": expected a whole number >= " + std::to_string(min) + ", got '" + value + "'");
    return static_cast<int>(n);
}

constexpr const char* kUsage =
    "usage: iris_agent_load --endpoint http://HOST:PORT/v1 [--model NAME] [--api-key-env VAR]\n"
    "         [--sessions 4] [--turns 6] [--system-tokens 1500] [--observation-tokens 300]\n"
    "         [--max-tokens 32] [--seed 0] [--timeout 600] [--json]\n";

}  // namespace

double AgentLoadReport::cacheHitRate() const {
    if (requestsWithCacheInfo == 0 || promptTokens <= 0) return -1;
    return static_cast<double>(cachedTokens) / static_cast<double>(promptTokens);
}

std::string agentSystemPrompt(int approxTokens) {
    // JSON schemas of English words run longer than kCharsPerToken: about 4.5 characters a token
    // with the Qwen3 vocabulary (counted with its tokenizer.json).
    const auto target = static_cast<std::size_t>(std::max(approxTokens, 0)) * 9 / 2;
    Random random(0x1215);
    std::string text =
        "You are an agent that operates a computer for the user. Each turn you receive an "
        "observation of the screen and answer with exactly one tool call, written as JSON on one "
        "line: {\"name\": ..., \"arguments\": {...}}. Think briefly first. The tools:\n";
    const std::string rules =
        "Use only these tools. When the task is done, call finish_task_0 with a summary.\n";
    for (int number = 0; text.size() + rules.size() < target; ++number)
        text += toolSchema(random, number) + '\n';
    return text + rules;
}

std::string agentObservation(int session, int turn, int approxTokens, int seed) {
    const auto target = static_cast<std::size_t>(std::max(approxTokens, 0)) * kCharsPerToken;
    Random random((static_cast<std::uint64_t>(session) << 32) ^ static_cast<std::uint64_t>(turn) ^
                  0xa9e47ULL ^ (static_cast<std::uint64_t>(seed) * 0x9e3779b97f4a7c15ULL));
    std::ostringstream text;
    text << "Observation after step " << turn + 1 << ". " << sentence(random, 12) << "\n"
         << "Accessibility tree of the focused window:\n";
    // Half prose, half elements, a third of those with coordinates: about kCharsPerToken
    // characters a token overall (prose has more, numbers and brackets fewer).
    for (int id = 1; static_cast<std::size_t>(text.tellp()) < target; ++id) {
        if (random.below(2) == 0) {
            text << sentence(random, random.between(8, 16)) << '\n';
            continue;
        }
        text << '[' << id << "] " << random.pick(kRoles) << " \"" << random.pick(kWords) << ' '
             << random.pick(kWords) << '"';
        if (random.below(3) == 0)
            text << " at (" << random.below(1920) << ", " << random.below(1080) << ')';
        text << '\n';
    }
    return text.str();
}

Status checkEndpoint(std::string_view url) {
    const auto bad = [&](const std::string& why) {
        return Status::invalidArgument("--endpoint '" + std::string(url) + "': " + why +
                                       " (expected e.g. http://127.0.0.1:8080/v1)");
    };
    const std::size_t scheme = url.find("://");
    if (scheme == std::string_view::npos) return bad("no scheme");
    const std::string name = asciiLower(url.substr(0, scheme));
    if (name != "http" && name != "https") return bad("the scheme must be http or https");
    const std::string_view rest = url.substr(scheme + 3);
    const std::string_view authority = rest.substr(0, rest.find('/'));
    if (authority.empty() || authority.front() == ':') return bad("no host");
    if (url.find_first_of("?#") != std::string_view::npos) return bad("a query or fragment");
    if (url.find_first_of(" \t\r\n") != std::string_view::npos) return bad("white space");
    const std::size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos && authority.back() != ']') {
        const std::string_view port = authority.substr(colon + 1);
        if (port.empty() || port.size() > 5 ||
            !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return bad("the port is not a number");
    }
    return Status::ok();
}

Status ChunkStream::feed(std::string_view bytes, double now) {
    m_events.clear();
    if (Status s = m_parser.feed(bytes, m_events); !s.isOk()) return s;
    for (const agent::SseEvent& e : m_events)
        if (Status s = event(e, now); !s.isOk()) return s;
    return Status::ok();
}

Status ChunkStream::event(const agent::SseEvent& e, double now) {
    const std::string where =
        "event " + std::to_string(e.number) + " (byte " + std::to_string(e.offset) + "): ";
    if (trim(e.data) == "[DONE]" || trim(e.data).empty()) return Status::ok();
    Json chunk;
    try {
        chunk = Json::parse(e.data);
    } catch (const Json::exception& error) {
        return Status::corrupt(where + "not JSON: " + error.what());
    }
    if (!chunk.is_object()) return Status::corrupt(where + "not a JSON object");
    if (const auto error = chunk.find("error"); error != chunk.end())
        return Status::ioError(where + "the server reports an error: " + error->dump());
    ++m_chunks;

    bool output = false;
    if (const auto choices = chunk.find("choices"); choices != chunk.end() && choices->is_array()) {
        for (const Json& choice : *choices) {
            const auto delta = choice.find("delta");
            if (delta == choice.end() || !delta->is_object()) continue;
            for (const char* key : {"content", "reasoning_content"}) {
                const auto text = delta->find(key);
                if (text == delta->end() || !text->is_string()) continue;
                const auto& piece = text->get_ref<const std::string&>();
                if (piece.empty()) continue;  // the role chunk, usually
                output = true;
                if (std::string_view(key) == "content") m_record.reply += piece;
            }
            const auto calls = delta->find("tool_calls");
            if (calls != delta->end() && calls->is_array() && !calls->empty()) {
                output = true;
                m_record.reply += calls->dump();  // fragments; the history keeps them as text
            }
        }
    }
    if (output) {
        ++m_outputChunks;
        if (m_record.ttft < 0) m_record.ttft = now;
    }

    // OpenAI, vLLM, SGLang and llama-server: usage in the last chunk. llama-server also sends
    // timings, where prompt_n counts only the prompt tokens it had to evaluate.
    if (const auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
        m_usageCompletionTokens = static_cast<int>(count(*usage, "completion_tokens"));
        m_record.promptTokens = count(*usage, "prompt_tokens");
        const auto details = usage->find("prompt_tokens_details");
        if (details != usage->end() && details->is_object())
            m_record.cachedTokens = count(*details, "cached_tokens");
    }
    if (const auto timings = chunk.find("timings");
        timings != chunk.end() && timings->is_object() && m_record.cachedTokens < 0) {
        const long cached = count(*timings, "cache_n");
        const long evaluated = count(*timings, "prompt_n");
        if (cached >= 0 && evaluated >= 0) {
            m_record.cachedTokens = cached;
            m_record.promptTokens = cached + evaluated;
        }
    }
    return Status::ok();
}

Status ChunkStream::finish() {
    if (m_chunks == 0)
        return Status::corrupt("the reply has no chat.completion.chunk events (" +
                               std::to_string(m_parser.bytesSeen()) + " bytes)");
    m_record.generatedTokens =
        m_usageCompletionTokens >= 0 ? m_usageCompletionTokens : m_outputChunks;
    return Status::ok();
}

Result<AgentLoadReport> runAgentLoad(const AgentLoadOptions& options) {
    if (Status s = checkEndpoint(options.endpoint); !s.isOk()) return s;
    if (options.sessions < 1 || options.turns < 1 || options.maxTokens < 1)
        return Status::invalidArgument("sessions, turns and max tokens must be at least 1");
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return Status::internal("curl_global_init failed");

    const std::string systemPrompt = agentSystemPrompt(options.systemTokens);
    std::vector<std::vector<RequestRecord>> records(static_cast<std::size_t>(options.sessions));
    std::vector<std::thread> threads;
    std::latch ready(options.sessions + 1);
    std::latch go(1);
    for (int s = 0; s < options.sessions; ++s) {
        threads.emplace_back([&, s] {
            Session session(options, systemPrompt, s);
            ready.count_down();
            go.wait();
            session.run(records[static_cast<std::size_t>(s)]);
        });
    }
    ready.arrive_and_wait();
    const Clock::time_point start = Clock::now();
    go.count_down();
    for (std::thread& thread : threads)
        thread.join();
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    curl_global_cleanup();
    return summarize(std::move(records), wall, options.turns);
}

void printReport(const AgentLoadOptions& options, const AgentLoadReport& report,
                 std::ostream& out) {
    const auto seconds = [](double s) {
        std::ostringstream text;
        text << std::fixed << std::setprecision(s < 10 ? 3 : 1) << s << " s";
        return text.str();
    };
    out << "iris_agent_load: " << options.sessions << " sessions x " << options.turns
        << " turns against " << options.endpoint << " (model " << options.model << ")\n"
        << "workload: system prompt ~" << options.systemTokens << " tokens, observations ~"
        << options.observationTokens << " tokens, max_tokens " << options.maxTokens << "\n"
        << "wall " << seconds(report.wall) << ", " << report.requests << " requests, "
        << report.errors << " errors\n";
    if (report.ttft.count > 0) {
        out << "TTFT mean " << seconds(report.ttft.mean) << ", p50 " << seconds(report.ttft.p50)
            << ", p90 " << seconds(report.ttft.p90) << ", max " << seconds(report.ttft.max) << " ("
            << report.ttft.count << " requests with output)\nTTFT mean by turn:";
        for (const double t : report.ttftMeanByTurn)
            out << ' ' << (t < 0 ? std::string("-") : seconds(t));
        out << '\n';
    } else {
        out << "TTFT: no request produced output\n";
    }
    out << "generated " << report.generatedTokens << " tokens, " << std::fixed
        << std::setprecision(2) << report.tokensPerSecond << " tokens/s\n";
    if (const double rate = report.cacheHitRate(); rate >= 0) {
        out << "prefix cache: " << report.cachedTokens << " of " << report.promptTokens
            << " prompt tokens cached, hit rate " << std::setprecision(1) << 100 * rate << "% ("
            << report.requestsWithCacheInfo << " requests reported it)\n";
    } else {
        out << "prefix cache: not reported by the server\n";
    }
    if (!report.firstError.empty()) out << "first error: " << report.firstError << '\n';
}

std::string reportJson(const AgentLoadOptions& options, const AgentLoadReport& report) {
    OrderedJson byTurn = OrderedJson::array();
    for (const double t : report.ttftMeanByTurn)
        byTurn.push_back(t < 0 ? OrderedJson() : OrderedJson(t));
    // Each request, to see which ones set the percentiles (-1 where nothing came or the server
    // did not say).
    OrderedJson each = OrderedJson::array();
    for (const RequestRecord& r : report.records) {
        each.push_back({{"session", r.session},
                        {"turn", r.turn},
                        {"ttft_s", r.ttft},
                        {"total_s", r.total},
                        {"prompt_tokens", r.promptTokens},
                        {"cached_tokens", r.cachedTokens}});
    }
    const double rate = report.cacheHitRate();
    const OrderedJson json = {
        {"endpoint", options.endpoint},
        {"model", options.model},
        {"sessions", options.sessions},
        {"turns", options.turns},
        {"system_tokens", options.systemTokens},
        {"observation_tokens", options.observationTokens},
        {"seed", options.seed},
        {"max_tokens", options.maxTokens},
        {"wall_s", report.wall},
        {"requests", report.requests},
        {"errors", report.errors},
        {"ttft_s",
         {{"count", report.ttft.count},
          {"mean", report.ttft.mean},
          {"p50", report.ttft.p50},
          {"p90", report.ttft.p90},
          {"max", report.ttft.max}}},
        {"ttft_mean_by_turn_s", byTurn},
        {"generated_tokens", report.generatedTokens},
        {"tokens_per_s", report.tokensPerSecond},
        {"prompt_tokens", report.promptTokens},
        {"cached_tokens", report.cachedTokens},
        {"cache_hit_rate", rate < 0 ? OrderedJson() : OrderedJson(rate)},
        {"first_error", report.firstError.empty() ? OrderedJson() : OrderedJson(report.firstError)},
        {"each_request", each},
    };
    return json.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

int agentLoadMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    AgentLoadOptions options;
    bool json = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& flag = args[i];
        if (flag == "--json") {
            json = true;
            continue;
        }
        if (flag == "--help" || flag == "-h") {
            out << kUsage;
            return 0;
        }
        if (i + 1 >= args.size()) {
            err << "iris_agent_load: " << flag << ": unknown or missing its value\n" << kUsage;
            return 2;
        }
        const std::string& value = args[++i];
        Result<int> number = 0;
        if (flag == "--endpoint") {
            options.endpoint = value;
        } else if (flag == "--model") {
            options.model = value;
        } else if (flag == "--api-key-env") {
            const char* key = std::getenv(value.c_str());
            if (key == nullptr || *key == '\0') {
                err << "iris_agent_load: --api-key-env: $" << value << " is not set\n";
                return 2;
            }
            options.apiKey = key;
        } else if (flag == "--sessions") {
            if ((number = intArgument(flag, value, 1))) options.sessions = *number;
        } else if (flag == "--turns") {
            if ((number = intArgument(flag, value, 1))) options.turns = *number;
        } else if (flag == "--system-tokens") {
            if ((number = intArgument(flag, value, 0))) options.systemTokens = *number;
        } else if (flag == "--observation-tokens") {
            if ((number = intArgument(flag, value, 0))) options.observationTokens = *number;
        } else if (flag == "--seed") {
            if ((number = intArgument(flag, value, 0))) options.seed = *number;
        } else if (flag == "--max-tokens") {
            if ((number = intArgument(flag, value, 1))) options.maxTokens = *number;
        } else if (flag == "--timeout") {
            if ((number = intArgument(flag, value, 1))) options.requestTimeoutSeconds = *number;
        } else {
            err << "iris_agent_load: unknown option " << flag << '\n' << kUsage;
            return 2;
        }
        if (!number) {
            err << "iris_agent_load: " << number.status().message() << '\n';
            return 2;
        }
    }
    if (options.endpoint.empty()) {
        err << "iris_agent_load: --endpoint is required\n" << kUsage;
        return 2;
    }
    if (Status s = checkEndpoint(options.endpoint); !s.isOk()) {
        err << "iris_agent_load: " << s.message() << '\n';
        return 2;
    }

    Result<AgentLoadReport> report = runAgentLoad(options);
    if (!report) {
        err << "iris_agent_load: " << report.status().message() << '\n';
        return 2;
    }
    if (json)
        out << reportJson(options, *report) << '\n';
    else
        printReport(options, *report, out);
    if (report->errors > 0) {
        if (json) err << "iris_agent_load: first error: " << report->firstError << '\n';
        return 1;
    }
    return 0;
}

}  // namespace iris::bench
