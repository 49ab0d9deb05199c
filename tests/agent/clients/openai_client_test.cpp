// OpenAiClient against a real HTTP server on 127.0.0.1 (cpp-httplib in a thread): streaming,
// tool calls, retries, timeouts, broken streams, cancellation, and keeping the API key secret.
#include "agent/clients/openai_client.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"

namespace iris::agent {
namespace {

using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

std::string sse(const std::string& json) {
    return "data: " + json + "\n\n";
}

std::string contentChunk(const std::string& text) {
    return sse(nlohmann::json{{"model", "served-model"},
                              {"choices", {{{"index", 0}, {"delta", {{"content", text}}}}}}}
                   .dump());
}

ChatRequest simpleRequest() {
    ChatRequest request;
    request.messages.push_back(ChatMessage::text("user", "Say hello"));
    request.maxTokens = 16;
    return request;
}

class OpenAiClientTest : public ::testing::Test {
protected:
    void SetUp() override {
        ::setenv("NO_PROXY", "127.0.0.1", 1);  // a developer's proxy must not see test traffic
        ::setenv("no_proxy", "127.0.0.1", 1);
        m_server.Post("/v1/chat/completions",
                      [this](const httplib::Request& request, httplib::Response& response) {
                          ++m_attempts;
                          {
                              const std::lock_guard lock(m_mutex);
                              m_lastBody = request.body;
                              m_lastAuthorization = request.get_header_value("Authorization");
                              m_hadAuthorization = request.has_header("Authorization");
                          }
                          m_handler(request, response);
                      });
        m_port = m_server.bind_to_any_port("127.0.0.1");
        ASSERT_GT(m_port, 0);
        m_thread = std::thread([this] { m_server.listen_after_bind(); });
        while (!m_server.is_running())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }

    void TearDown() override {
        m_stopping = true;
        m_server.stop();
        if (m_thread.joinable()) m_thread.join();
    }

    OpenAiSettings settings() const {
        OpenAiSettings s;
        s.baseUrl = "http://127.0.0.1:" + std::to_string(m_port) + "/v1/";
        s.model = "test-model";
        s.apiKeyEnv = "IRIS_CLIENTS_TEST_UNSET_KEY";
        s.connectTimeoutMs = 2000;
        s.idleTimeoutMs = 3000;
        s.totalTimeoutMs = 20000;
        s.maxRetries = 4;
        s.initialBackoffMs = 5;
        s.maxBackoffMs = 20;
        return s;
    }

    // Streams `parts` as separate writes (separate HTTP chunks), pausing between them so that
    // they tend to arrive as separate reads.
    static void streamParts(httplib::Response& response, std::vector<std::string> parts,
                            bool closeEarly = false) {
        response.set_chunked_content_provider(
            "text/event-stream", [parts, closeEarly](std::size_t, httplib::DataSink& sink) {
                for (const std::string& part : parts) {
                    if (!sink.write(part.data(), part.size())) return false;
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
                if (closeEarly) return false;  // drops the connection without the last chunk
                sink.done();
                return true;
            });
    }

    // Waits up to `ms`, less when the test is over.
    void stall(int ms) {
        const auto until = Clock::now() + std::chrono::milliseconds(ms);
        while (!m_stopping && Clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }

    std::string lastBody() {
        const std::lock_guard lock(m_mutex);
        return m_lastBody;
    }

    httplib::Server m_server;
    std::thread m_thread;
    int m_port = 0;
    Handler m_handler;
    std::atomic<int> m_attempts{0};
    std::atomic<bool> m_stopping{false};
    std::mutex m_mutex;
    std::string m_lastBody;
    std::string m_lastAuthorization;
    bool m_hadAuthorization = false;
};

TEST_F(OpenAiClientTest, StreamsTextSplitAnywhereAndReadsUsage) {
    // "Grüße, wörld ✓" in deltas, and the raw stream cut into 3-byte writes so that lines and
    // the UTF-8 characters inside them are split across reads.
    const std::vector<std::string> deltas = {
        "Gr\xC3\xBC\xC3\x9F"
        "e",
        ", w", "\xC3\xB6rld ", "\xE2\x9C\x93"};
    std::string stream = ": keep-alive\r\n\r\n";
    for (const std::string& delta : deltas)
        stream += contentChunk(delta);
    stream += sse(R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})");
    stream += sse(R"({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}})");
    stream += "data: [DONE]\n\n";
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < stream.size(); i += 3)
        parts.push_back(stream.substr(i, 3));
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        streamParts(response, parts);
    };

    OpenAiClient client(settings());
    std::vector<std::string> seen;
    const Result<ChatResponse> response = client.complete(simpleRequest(), [&](std::string_view d) {
        seen.emplace_back(d);
        return true;
    });
    ASSERT_TRUE(response) << response.status().message();
    EXPECT_EQ(response->text,
              "Gr\xC3\xBC\xC3\x9F"
              "e, w\xC3\xB6rld \xE2\x9C\x93");
    EXPECT_EQ(seen, deltas);
    EXPECT_EQ(response->finishReason, "stop");
    EXPECT_EQ(response->model, "served-model");
    EXPECT_EQ(response->promptTokens, 9);
    EXPECT_EQ(response->completionTokens, 4);
    EXPECT_GT(response->timeToFirstTokenMs, 0.0);
    EXPECT_GE(response->latencyMs, response->timeToFirstTokenMs);
    EXPECT_EQ(client.lastAttempts(), 1);

    const nlohmann::json body = nlohmann::json::parse(lastBody());
    EXPECT_EQ(body["model"], "test-model");
    EXPECT_EQ(body["stream"], true);
    EXPECT_EQ(body["stream_options"]["include_usage"], true);
    EXPECT_FALSE(m_hadAuthorization);  // no key in the environment, no header
}

TEST_F(OpenAiClientTest, AccumulatesToolCallDeltasByIndex) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        streamParts(
            response,
            {sse(R"({"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_7","type":"function","function":{"name":"click","arguments":""}}]}}]})"),
             sse(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\": 1"}}]}}]})"),
             sse(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"2, \"y\": 34}"}}]}}]})"),
             sse(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_8","type":"function","function":{"name":"done","arguments":"{}"}}]}}]})"),
             sse(R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})"),
             "data: [DONE]\n\n"});
    };
    OpenAiClient client(settings());
    const Result<ChatResponse> response = client.complete(simpleRequest());
    ASSERT_TRUE(response) << response.status().message();
    EXPECT_EQ(response->text, "");
    EXPECT_EQ(response->finishReason, "tool_calls");
    ASSERT_EQ(response->toolCalls.size(), 2u);
    EXPECT_EQ(response->toolCalls[0].id, "call_7");
    EXPECT_EQ(response->toolCalls[0].name, "click");
    EXPECT_EQ(response->toolCalls[0].arguments, R"({"x": 12, "y": 34})");
    EXPECT_EQ(response->toolCalls[1].id, "call_8");
    EXPECT_EQ(response->toolCalls[1].name, "done");
    EXPECT_EQ(response->timeToFirstTokenMs, 0.0);  // no text was streamed
}

TEST_F(OpenAiClientTest, SendsTheImageAsADataUrlAndTheTools) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        streamParts(response, {contentChunk("ok"), "data: [DONE]\n\n"});
    };
    ChatRequest request = simpleRequest();
    auto image = std::make_shared<EncodedImage>();
    image->mimeType = "image/png";
    image->bytes = {0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0x10};
    request.messages[0].content.push_back({"", image});
    request.tools.push_back({"click", "Click at a point",
                             R"({"type":"object","properties":{"x":{"type":"integer"}}})"});
    OpenAiClient client(settings());
    ASSERT_TRUE(client.complete(request));
    const nlohmann::json body = nlohmann::json::parse(lastBody());
    EXPECT_EQ(body["messages"][0]["content"][1]["image_url"]["url"],
              "data:image/png;base64,iVBORw0KGgoA/xA=");
    EXPECT_EQ(body["tools"][0]["type"], "function");
    EXPECT_EQ(body["tools"][0]["function"]["name"], "click");
    EXPECT_EQ(body["tools"][0]["function"]["parameters"]["properties"]["x"]["type"], "integer");
}

TEST_F(OpenAiClientTest, RetriesTooManyRequestsThenSucceeds) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        if (m_attempts <= 2) {
            response.status = 429;
            response.set_header("Retry-After", "0");
            response.set_content(R"({"error":{"message":"slow down"}})", "application/json");
            return;
        }
        streamParts(response, {contentChunk("third time"), "data: [DONE]\n\n"});
    };
    OpenAiClient client(settings());
    const Result<ChatResponse> response = client.complete(simpleRequest());
    ASSERT_TRUE(response) << response.status().message();
    EXPECT_EQ(response->text, "third time");
    EXPECT_EQ(m_attempts, 3);
    EXPECT_EQ(client.lastAttempts(), 3);
}

TEST_F(OpenAiClientTest, GivesUpOnServerErrorsAfterMaxRetries) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        response.status = 500;
        response.set_content("internal trouble", "text/plain");
    };
    OpenAiSettings s = settings();
    s.maxRetries = 2;
    OpenAiClient client(s);
    const Result<ChatResponse> response = client.complete(simpleRequest());
    ASSERT_FALSE(response);
    EXPECT_EQ(response.status().code(), StatusCode::IoError);
    EXPECT_EQ(response.status().message(),
              "POST http://127.0.0.1:" + std::to_string(m_port) +
                  "/v1/chat/completions: HTTP 500: internal trouble (gave up after 3 attempts)");
    EXPECT_EQ(m_attempts, 3);
}

TEST_F(OpenAiClientTest, DoesNotRetryAClientErrorAndKeepsTheKeySecret) {
    const std::string key = "sk-iris-test-" + std::to_string(::getpid()) + "-7f3a9c1e5b";
    ::setenv("IRIS_CLIENTS_TEST_KEY", key.c_str(), 1);
    m_handler = [&](const httplib::Request& request, httplib::Response& response) {
        // Some providers quote the key they were given.
        response.status = 401;
        response.set_content(R"({"error":{"message":"Incorrect API key provided: )" +
                                 request.get_header_value("Authorization").substr(7) + R"("}})",
                             "application/json");
    };
    OpenAiSettings s = settings();
    s.apiKeyEnv = "IRIS_CLIENTS_TEST_KEY";
    OpenAiClient client(s);
    ::unsetenv("IRIS_CLIENTS_TEST_KEY");  // read once, when the client was made
    const Result<ChatResponse> response = client.complete(simpleRequest());
    ASSERT_FALSE(response);
    EXPECT_EQ(m_attempts, 1);
    {
        const std::lock_guard lock(m_mutex);
        EXPECT_EQ(m_lastAuthorization, "Bearer " + key);
    }
    const std::string& message = response.status().message();
    EXPECT_NE(message.find("/v1/chat/completions: HTTP 401: "), std::string::npos) << message;
    EXPECT_NE(message.find("Incorrect API key provided: [redacted]"), std::string::npos) << message;
    EXPECT_EQ(message.find(key), std::string::npos);
    EXPECT_EQ(message.find(key.substr(0, 16)), std::string::npos);
    EXPECT_EQ(client.describe(),
              "openai http://127.0.0.1:" + std::to_string(m_port) + "/v1 model=test-model");
    EXPECT_EQ(client.describe().find(key), std::string::npos);
}

TEST_F(OpenAiClientTest, AStalledStreamEndsWithAnIdleTimeout) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        response.set_chunked_content_provider("text/event-stream",
                                              [this](std::size_t, httplib::DataSink& sink) {
                                                  const std::string first = contentChunk("partial");
                                                  sink.write(first.data(), first.size());
                                                  stall(5000);
                                                  return false;
                                              });
    };
    OpenAiSettings s = settings();
    s.idleTimeoutMs = 300;
    OpenAiClient client(s);
    std::string seen;
    const Result<ChatResponse> response = client.complete(simpleRequest(), [&](std::string_view d) {
        seen += d;
        return true;
    });
    ASSERT_FALSE(response);
    EXPECT_EQ(response.status().code(), StatusCode::IoError);
    EXPECT_NE(response.status().message().find(
                  "idle timeout: no data from the server for 300 ms after 1 events"),
              std::string::npos)
        << response.status().message();
    EXPECT_EQ(seen, "partial");
    EXPECT_EQ(m_attempts, 1);  // text was shown: a retry would repeat it
}

TEST_F(OpenAiClientTest, ReportsAConnectionClosedMidStream) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        streamParts(response, {contentChunk("Hel"), contentChunk("lo")}, /*closeEarly=*/true);
    };
    OpenAiClient client(settings());
    const Result<ChatResponse> response =
        client.complete(simpleRequest(), [](std::string_view) { return true; });
    ASSERT_FALSE(response);
    EXPECT_EQ(response.status().code(), StatusCode::IoError);
    EXPECT_NE(response.status().message().find("closed the connection mid-"), std::string::npos)
        << response.status().message();
    EXPECT_EQ(m_attempts, 1);
}

TEST_F(OpenAiClientTest, MalformedJsonNamesTheEventAndOffset) {
    const std::string first = contentChunk("ok");
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        streamParts(response, {first, "data: {\"choices\": [oops\n\n", "data: [DONE]\n\n"});
    };
    OpenAiClient client(settings());
    const Result<ChatResponse> response = client.complete(simpleRequest());
    ASSERT_FALSE(response);
    EXPECT_EQ(response.status().code(), StatusCode::Corrupt);
    const std::string expected =
        "/v1/chat/completions: event 2 (byte " + std::to_string(first.size()) + "): malformed JSON";
    EXPECT_NE(response.status().message().find(expected), std::string::npos)
        << response.status().message();
    EXPECT_EQ(m_attempts, 1);
}

TEST_F(OpenAiClientTest, AnErrorInsideTheStreamBecomesAnError) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        streamParts(response,
                    {sse(R"({"error":{"message":"context length exceeded","code":400}})")});
    };
    OpenAiClient client(settings());
    const Result<ChatResponse> response = client.complete(simpleRequest());
    ASSERT_FALSE(response);
    EXPECT_NE(response.status().message().find(
                  "event 1 (byte 0): the server reported an error: context length exceeded"),
              std::string::npos)
        << response.status().message();
}

TEST_F(OpenAiClientTest, CancelFromAnotherThreadStopsAStalledRequest) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        response.set_chunked_content_provider("text/event-stream",
                                              [this](std::size_t, httplib::DataSink& sink) {
                                                  sink.write(": waiting\n\n", 11);
                                                  stall(10000);
                                                  return false;
                                              });
    };
    OpenAiSettings s = settings();
    s.idleTimeoutMs = 20000;
    s.totalTimeoutMs = 30000;
    OpenAiClient client(s);
    std::thread canceller([&] {
        while (m_attempts == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        client.cancel();
    });
    const Clock::time_point start = Clock::now();
    const Result<ChatResponse> response = client.complete(simpleRequest());
    const auto elapsed = Clock::now() - start;
    canceller.join();
    ASSERT_FALSE(response);
    EXPECT_EQ(response.status().code(), StatusCode::Cancelled) << response.status().message();
    EXPECT_LT(elapsed, std::chrono::seconds(5));  // long before the server's 10 s stall ends
}

TEST_F(OpenAiClientTest, CancelInterruptsTheBackOffSleep) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        response.status = 503;
        response.set_header("Retry-After", "30");
        response.set_content("busy", "text/plain");
    };
    OpenAiSettings s = settings();
    s.totalTimeoutMs = 60000;
    OpenAiClient client(s);
    std::thread canceller([&] {
        while (m_attempts == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        client.cancel();
    });
    const Clock::time_point start = Clock::now();
    const Result<ChatResponse> response = client.complete(simpleRequest());
    const auto elapsed = Clock::now() - start;
    canceller.join();
    EXPECT_EQ(response.status().code(), StatusCode::Cancelled) << response.status().message();
    EXPECT_EQ(m_attempts, 1);
    EXPECT_LT(elapsed, std::chrono::seconds(10));  // not the 30 s the server asked for
}

TEST_F(OpenAiClientTest, TheTextCallbackCanCancel) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        streamParts(response, {contentChunk("a"), contentChunk("b"), "data: [DONE]\n\n"});
    };
    OpenAiClient client(settings());
    const Result<ChatResponse> response =
        client.complete(simpleRequest(), [](std::string_view) { return false; });
    EXPECT_EQ(response.status().code(), StatusCode::Cancelled);
}

TEST_F(OpenAiClientTest, ReadsAWholeAnswerWhenNotStreaming) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        response.set_content(
            R"({"model":"whole","choices":[{"index":0,"finish_reason":"stop",
                "message":{"role":"assistant","content":"All at once."}}],
                "usage":{"prompt_tokens":5,"completion_tokens":3}})",
            "application/json");
    };
    OpenAiSettings s = settings();
    s.stream = false;
    OpenAiClient client(s);
    std::string seen;
    const Result<ChatResponse> response = client.complete(simpleRequest(), [&](std::string_view d) {
        seen += d;
        return true;
    });
    ASSERT_TRUE(response) << response.status().message();
    EXPECT_EQ(response->text, "All at once.");
    EXPECT_EQ(seen, "All at once.");
    EXPECT_EQ(response->model, "whole");
    EXPECT_EQ(response->completionTokens, 3);
    EXPECT_EQ(nlohmann::json::parse(lastBody())["stream"], false);
}

TEST_F(OpenAiClientTest, AcceptsAWholeAnswerFromAServerThatIgnoresStreaming) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        response.set_content(R"({"choices":[{"index":0,"finish_reason":"stop",
                "message":{"role":"assistant","content":"not streamed"}}]})",
                             "application/json");
    };
    OpenAiClient client(settings());
    const Result<ChatResponse> response = client.complete(simpleRequest());
    ASSERT_TRUE(response) << response.status().message();
    EXPECT_EQ(response->text, "not streamed");
    EXPECT_EQ(response->model, "test-model");  // the server did not say: what was asked for
}

TEST_F(OpenAiClientTest, TheTotalTimeoutCoversTheWholeRequest) {
    m_handler = [&](const httplib::Request&, httplib::Response& response) {
        response.set_chunked_content_provider("text/event-stream",
                                              [this](std::size_t, httplib::DataSink& sink) {
                                                  // Keep-alive comments keep the idle timer happy,
                                                  // but no answer ever comes.
                                                  for (int i = 0; i < 100 && !m_stopping; ++i) {
                                                      if (!sink.write(": ping\n\n", 8))
                                                          return false;
                                                      stall(20);
                                                  }
                                                  return false;
                                              });
    };
    OpenAiSettings s = settings();
    s.idleTimeoutMs = 1000;
    s.totalTimeoutMs = 300;
    OpenAiClient client(s);
    const Result<ChatResponse> response = client.complete(simpleRequest());
    ASSERT_FALSE(response);
    EXPECT_NE(response.status().message().find("total timeout: no complete answer within 300 ms"),
              std::string::npos)
        << response.status().message();
    EXPECT_EQ(m_attempts, 1);
}

TEST_F(OpenAiClientTest, RetriesWhenNothingListensThenSaysSo) {
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
    OpenAiSettings s = settings();
    s.baseUrl = "http://127.0.0.1:" + std::to_string(port) + "/v1";
    s.maxRetries = 1;
    OpenAiClient client(s);
    const Result<ChatResponse> response = client.complete(simpleRequest());
    ASSERT_FALSE(response);
    EXPECT_EQ(response.status().code(), StatusCode::IoError);
    EXPECT_NE(response.status().message().find("cannot connect: "), std::string::npos)
        << response.status().message();
    EXPECT_NE(response.status().message().find("(gave up after 2 attempts)"), std::string::npos);
    EXPECT_EQ(client.lastAttempts(), 2);
}

}  // namespace
}  // namespace iris::agent
