// iris_agent_load's bookkeeping against a fake OpenAI-compatible server (cpp-httplib, in
// process): how many requests it sends, that each turn resends the whole history, how it reads
// usage (OpenAI's prompt_tokens_details and llama-server's timings) into the hit rate, and that a
// failed request makes the exit status nonzero.
#include "tests/bench/agent_load.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using iris::bench::agentLoadMain;
using iris::bench::AgentLoadOptions;
using iris::bench::AgentLoadReport;
using iris::bench::agentObservation;
using iris::bench::agentSystemPrompt;
using iris::bench::runAgentLoad;
using Json = nlohmann::json;

constexpr int kSessions = 3;
constexpr int kTurns = 4;
constexpr int kObservationTokens = 20;

enum class Usage { OpenAi, LlamaServerTimings, None };

// What the fake server saw of one request.
struct Seen {
    int session = -1;  // found from the first observation
    Json body;
};

class AgentLoadTest : public ::testing::Test {
protected:
    void SetUp() override {
        ::setenv("NO_PROXY", "127.0.0.1", 1);
        ::setenv("no_proxy", "127.0.0.1", 1);
        m_server.Post("/v1/chat/completions",
                      [this](const httplib::Request& request, httplib::Response& response) {
                          answer(request, response);
                      });
        m_port = m_server.bind_to_any_port("127.0.0.1");
        ASSERT_GT(m_port, 0);
        m_thread = std::thread([this] { m_server.listen_after_bind(); });
        while (!m_server.is_running())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }

    void TearDown() override {
        m_server.stop();
        if (m_thread.joinable()) m_thread.join();
    }

    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(m_port) + "/v1"; }

    AgentLoadOptions options() const {
        AgentLoadOptions o;
        o.endpoint = endpoint();
        o.model = "fake-model";
        o.sessions = kSessions;
        o.turns = kTurns;
        o.systemTokens = 100;
        o.observationTokens = kObservationTokens;
        o.maxTokens = 5;
        o.requestTimeoutSeconds = 30;
        return o;
    }

    // Replies "reply to N" (N: the messages received) in two content chunks after a role chunk,
    // then reports 10 prompt tokens per message, all but the last two cached.
    void answer(const httplib::Request& request, httplib::Response& response) {
        Seen seen;
        seen.body = Json::parse(request.body);
        const Json& messages = seen.body.at("messages");
        for (int s = 0; s < kSessions; ++s)
            if (messages.size() > 1 &&
                messages[1].at("content") == agentObservation(s, 0, kObservationTokens))
                seen.session = s;
        const int n = static_cast<int>(messages.size());
        {
            const std::lock_guard lock(m_mutex);
            m_seen.push_back(seen);
        }
        if (n >= m_failFromMessages) {
            response.status = 500;
            response.set_content(R"({"error":{"message":"the fake server failed"}})",
                                 "application/json");
            return;
        }
        const auto chunk = [](const Json& delta) {
            return "data: " +
                   Json{{"object", "chat.completion.chunk"},
                        {"choices", Json::array({{{"index", 0}, {"delta", delta}}})}}
                       .dump() +
                   "\n\n";
        };
        std::vector<std::string> parts = {chunk({{"role", "assistant"}, {"content", ""}}),
                                          chunk({{"content", "reply to "}}),
                                          chunk({{"content", std::to_string(n)}})};
        const long prompt = 10L * n;
        const long cached = 10L * (n - 2);
        if (m_usage == Usage::OpenAi) {
            parts.push_back("data: " +
                            Json{{"choices", Json::array()},
                                 {"usage",
                                  {{"prompt_tokens", prompt},
                                   {"completion_tokens", 7},
                                   {"prompt_tokens_details", {{"cached_tokens", cached}}}}}}
                                .dump() +
                            "\n\n");
        } else if (m_usage == Usage::LlamaServerTimings) {
            // prompt_n: the tokens llama-server evaluated, the prompt less its cached part.
            parts.push_back("data: " +
                            Json{{"choices", Json::array({{{"index", 0},
                                                           {"delta", Json::object()},
                                                           {"finish_reason", "length"}}})},
                                 {"timings", {{"cache_n", cached}, {"prompt_n", prompt - cached}}}}
                                .dump() +
                            "\n\n");
        }
        parts.push_back("data: [DONE]\n\n");
        response.set_chunked_content_provider("text/event-stream",
                                              [parts](std::size_t, httplib::DataSink& sink) {
                                                  for (const std::string& part : parts)
                                                      if (!sink.write(part.data(), part.size()))
                                                          return false;
                                                  sink.done();
                                                  return true;
                                              });
    }

    std::vector<Seen> seen() {
        const std::lock_guard lock(m_mutex);
        return m_seen;
    }

    httplib::Server m_server;
    std::thread m_thread;
    int m_port = 0;
    Usage m_usage = Usage::OpenAi;
    int m_failFromMessages = 1 << 30;
    std::mutex m_mutex;
    std::vector<Seen> m_seen;
};

TEST(AgentLoadWorkload, SharesTheSystemPromptAndVariesObservationsBySessionAndTurn) {
    EXPECT_EQ(agentSystemPrompt(1500), agentSystemPrompt(1500));
    const std::size_t chars = agentSystemPrompt(1500).size();
    EXPECT_GE(chars, 1500u * 9 / 2);
    EXPECT_LE(chars, 1600u * 9 / 2);

    EXPECT_EQ(agentObservation(1, 2, 300), agentObservation(1, 2, 300));
    EXPECT_NE(agentObservation(0, 2, 300), agentObservation(1, 2, 300));
    EXPECT_NE(agentObservation(1, 1, 300), agentObservation(1, 2, 300));
    EXPECT_EQ(agentObservation(1, 2, 300, 0), agentObservation(1, 2, 300));
    EXPECT_NE(agentObservation(1, 2, 300, 1), agentObservation(1, 2, 300));
    EXPECT_GE(agentObservation(1, 2, 300).size(), 300u * iris::bench::kCharsPerToken);
    EXPECT_LE(agentObservation(1, 2, 300).size(), 330u * iris::bench::kCharsPerToken);
}

TEST(AgentLoadChunkStream, TimesTheFirstChunkWithOutputNotTheRoleChunk) {
    iris::bench::RequestRecord record;
    iris::bench::ChunkStream stream(record);
    ASSERT_TRUE(stream
                    .feed("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\","
                          "\"content\":\"\"}}]}\n\n",
                          1.0)
                    .isOk());
    EXPECT_EQ(record.ttft, -1);
    // An event split across reads is timed when it completes.
    ASSERT_TRUE(stream.feed("data: {\"choices\":[{\"delta\":{\"reasoning_con", 2.0).isOk());
    ASSERT_TRUE(stream.feed("tent\":\"hm\"}}]}\n\n", 3.0).isOk());
    EXPECT_EQ(record.ttft, 3.0);
    ASSERT_TRUE(stream
                    .feed("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,"
                          "\"function\":{\"name\":\"click\"}}]}}]}\n\n"
                          "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\n"
                          "data: [DONE]\n\n",
                          4.0)
                    .isOk());
    ASSERT_TRUE(stream.finish().isOk());
    EXPECT_EQ(record.ttft, 3.0);
    EXPECT_EQ(record.generatedTokens, 3);  // no usage: the chunks with output
    EXPECT_NE(record.reply.find("click"), std::string::npos) << record.reply;
    EXPECT_NE(record.reply.find("ok"), std::string::npos) << record.reply;
    EXPECT_EQ(record.promptTokens, -1);
    EXPECT_EQ(record.cachedTokens, -1);
}

TEST(AgentLoadChunkStream, RefusesMalformedChunksAndReportsStreamedErrors) {
    iris::bench::RequestRecord record;
    iris::bench::ChunkStream stream(record);
    const iris::Status corrupt = stream.feed("data: {not json\n\n", 0);
    EXPECT_EQ(corrupt.code(), iris::StatusCode::Corrupt);
    EXPECT_NE(corrupt.message().find("event 1"), std::string::npos) << corrupt.message();

    iris::bench::ChunkStream errors(record);
    const iris::Status error = errors.feed("data: {\"error\":{\"message\":\"no slot\"}}\n\n", 0);
    EXPECT_EQ(error.code(), iris::StatusCode::IoError);
    EXPECT_NE(error.message().find("no slot"), std::string::npos) << error.message();

    iris::bench::ChunkStream empty(record);
    EXPECT_TRUE(empty.feed("data: [DONE]\n\n", 0).isOk());
    EXPECT_EQ(empty.finish().code(), iris::StatusCode::Corrupt);
}

TEST_F(AgentLoadTest, SendsSessionsTimesTurnsRequestsEachWithTheWholeHistory) {
    iris::Result<AgentLoadReport> report = runAgentLoad(options());
    ASSERT_TRUE(report) << report.status().message();
    EXPECT_EQ(report->requests, kSessions * kTurns);
    EXPECT_EQ(report->errors, 0) << report->firstError;

    const std::vector<Seen> requests = seen();
    ASSERT_EQ(requests.size(), static_cast<std::size_t>(kSessions * kTurns));
    std::map<int, std::vector<Json>> bySession;  // in arrival order, which is turn order
    for (const Seen& s : requests) {
        ASSERT_GE(s.session, 0) << "a request whose first observation is no session's";
        bySession[s.session].push_back(s.body);
    }
    ASSERT_EQ(bySession.size(), static_cast<std::size_t>(kSessions));
    for (const auto& [session, bodies] : bySession) {
        ASSERT_EQ(bodies.size(), static_cast<std::size_t>(kTurns));
        for (int turn = 0; turn < kTurns; ++turn) {
            const Json& body = bodies[static_cast<std::size_t>(turn)];
            EXPECT_EQ(body.at("model"), "fake-model");
            EXPECT_EQ(body.at("stream"), true);
            EXPECT_EQ(body.at("stream_options").at("include_usage"), true);
            EXPECT_EQ(body.at("max_tokens"), 5);
            EXPECT_EQ(body.at("temperature"), 0);
            // system, then (observation, reply) per earlier turn, then this turn's observation.
            const Json& messages = body.at("messages");
            ASSERT_EQ(messages.size(), static_cast<std::size_t>(2 + 2 * turn));
            EXPECT_EQ(messages[0].at("role"), "system");
            EXPECT_EQ(messages[0].at("content"), agentSystemPrompt(100));
            for (int t = 0; t <= turn; ++t) {
                const Json& user = messages[static_cast<std::size_t>(1 + 2 * t)];
                EXPECT_EQ(user.at("role"), "user");
                EXPECT_EQ(user.at("content"), agentObservation(session, t, kObservationTokens));
                if (t == turn) break;
                const Json& assistant = messages[static_cast<std::size_t>(2 + 2 * t)];
                EXPECT_EQ(assistant.at("role"), "assistant");
                EXPECT_EQ(assistant.at("content"), "reply to " + std::to_string(2 + 2 * t));
            }
        }
    }

    // Usage: 7 completion tokens a request; 10 prompt tokens a message, all but two cached.
    EXPECT_EQ(report->generatedTokens, 7L * kSessions * kTurns);
    long prompt = 0;
    long cached = 0;
    for (int turn = 0; turn < kTurns; ++turn) {
        prompt += kSessions * 10L * (2 + 2 * turn);
        cached += kSessions * 10L * (2 * turn);
    }
    EXPECT_EQ(report->promptTokens, prompt);
    EXPECT_EQ(report->cachedTokens, cached);
    EXPECT_DOUBLE_EQ(report->cacheHitRate(),
                     static_cast<double>(cached) / static_cast<double>(prompt));
    EXPECT_EQ(report->requestsWithCacheInfo, kSessions * kTurns);

    EXPECT_EQ(report->ttft.count, kSessions * kTurns);
    EXPECT_EQ(report->ttftMeanByTurn.size(), static_cast<std::size_t>(kTurns));
    for (const iris::bench::RequestRecord& r : report->records) {
        EXPECT_GE(r.ttft, 0);
        EXPECT_GE(r.total, r.ttft);
    }
    EXPECT_LE(report->ttft.p50, report->ttft.p90);
    EXPECT_LE(report->ttft.p90, report->ttft.max);
}

TEST_F(AgentLoadTest, ReadsLlamaServerTimingsAsCachedOverCachedPlusEvaluated) {
    m_usage = Usage::LlamaServerTimings;
    iris::Result<AgentLoadReport> report = runAgentLoad(options());
    ASSERT_TRUE(report) << report.status().message();
    ASSERT_EQ(report->errors, 0) << report->firstError;
    long prompt = 0;
    long cached = 0;
    for (int turn = 0; turn < kTurns; ++turn) {
        prompt += kSessions * 10L * (2 + 2 * turn);
        cached += kSessions * 10L * (2 * turn);
    }
    EXPECT_EQ(report->promptTokens, prompt);
    EXPECT_EQ(report->cachedTokens, cached);
    // No usage: the generated tokens are the chunks that carried content.
    EXPECT_EQ(report->generatedTokens, 2L * kSessions * kTurns);
}

TEST_F(AgentLoadTest, ReportsNoHitRateWhenTheServerReportsNoCache) {
    m_usage = Usage::None;
    iris::Result<AgentLoadReport> report = runAgentLoad(options());
    ASSERT_TRUE(report) << report.status().message();
    EXPECT_EQ(report->errors, 0) << report->firstError;
    EXPECT_EQ(report->cacheHitRate(), -1);
    std::ostringstream out;
    iris::bench::printReport(options(), *report, out);
    EXPECT_NE(out.str().find("prefix cache: not reported"), std::string::npos) << out.str();
}

TEST_F(AgentLoadTest, ExitsNonzeroWithTheStatusAndBodyWhenARequestFails) {
    m_failFromMessages = 4;  // each session's second turn
    std::ostringstream out;
    std::ostringstream err;
    const int status =
        agentLoadMain({"--endpoint", endpoint(), "--sessions", "2", "--turns", "3",
                       "--system-tokens", "50", "--observation-tokens", "20", "--json"},
                      out, err);
    EXPECT_EQ(status, 1);
    const Json report = Json::parse(out.str());
    EXPECT_EQ(report.at("requests"), 4);  // a session stops at its first failure
    EXPECT_EQ(report.at("errors"), 2);
    ASSERT_EQ(report.at("each_request").size(), 4u);
    for (const Json& r : report.at("each_request")) {
        EXPECT_EQ(r.at("turn") == 0, r.at("ttft_s") >= 0) << r.dump();  // turn 1 failed
        EXPECT_GE(r.at("total_s"), 0) << r.dump();
    }
    const std::string firstError = report.at("first_error");
    EXPECT_NE(firstError.find("session 0 turn 1"), std::string::npos) << firstError;
    EXPECT_NE(firstError.find("HTTP 500"), std::string::npos) << firstError;
    EXPECT_NE(firstError.find("the fake server failed"), std::string::npos) << firstError;
    EXPECT_NE(err.str().find("HTTP 500"), std::string::npos) << err.str();
}

TEST(AgentLoadCommandLine, RefusesAnEndpointWithoutSchemeOrHost) {
    for (const char* bad : {"127.0.0.1:8080/v1", "ftp://127.0.0.1/v1", "http:///v1",
                            "http://127.0.0.1:80a/v1", "http://127.0.0.1:8080/v1?x=1"}) {
        std::ostringstream out;
        std::ostringstream err;
        EXPECT_EQ(agentLoadMain({"--endpoint", bad}, out, err), 2) << bad;
        EXPECT_NE(err.str().find("--endpoint"), std::string::npos) << err.str();
        EXPECT_TRUE(out.str().empty()) << out.str();
    }
    EXPECT_TRUE(iris::bench::checkEndpoint("http://127.0.0.1:8080/v1").isOk());
    EXPECT_TRUE(iris::bench::checkEndpoint("https://api.example.com/v1/").isOk());
    EXPECT_TRUE(iris::bench::checkEndpoint("http://[::1]:8080/v1").isOk());

    std::ostringstream out;
    std::ostringstream err;
    EXPECT_EQ(agentLoadMain({"--endpoint", "http://127.0.0.1:1/v1", "--sessions", "0"}, out, err),
              2);
    EXPECT_NE(err.str().find("--sessions"), std::string::npos) << err.str();
}

TEST(AgentLoadCommandLine, ReportsAServerThatIsNotThereAsAFailedRequest) {
    // A port that was free a moment ago: bound, then closed without listening.
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
    const int port = ntohs(address.sin_port);
    ::close(fd);
    std::ostringstream out;
    std::ostringstream err;
    const int status =
        agentLoadMain({"--endpoint", "http://127.0.0.1:" + std::to_string(port) + "/v1",
                       "--sessions", "1", "--turns", "2"},
                      out, err);
    EXPECT_EQ(status, 1);
    EXPECT_NE(out.str().find("1 requests, 1 errors"), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("first error: session 0 turn 0: POST http://127.0.0.1:"),
              std::string::npos)
        << out.str();
}

}  // namespace
