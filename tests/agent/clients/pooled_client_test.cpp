// PooledClient over several OpenAI-compatible servers on 127.0.0.1 (cpp-httplib in threads):
// failing over on a refused connection and on 503, probing back in through GET /models, the
// error when every server fails, and tasks sharing one pool while one server dies mid-run.
#include "agent/clients/pooled_client.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

namespace iris::agent {
namespace {

// One fake server: answers every chat request with its own name as the text, or with the HTTP
// status in `m_failWith` when that is set (503: down); GET /v1/models is 503 while it is set.
class FakeServer {
public:
    explicit FakeServer(std::string name) : m_name(std::move(name)) {
        m_server.Post("/v1/chat/completions",
                      [this](const httplib::Request&, httplib::Response& response) {
                          if (const int status = m_failWith; status != 0) {
                              response.status = status;
                              response.set_content("refused", "text/plain");
                              return;
                          }
                          ++m_answered;
                          const nlohmann::json body = {
                              {"model", "fake"},
                              {"choices",
                               {{{"index", 0},
                                 {"message", {{"role", "assistant"}, {"content", m_name}}},
                                 {"finish_reason", "stop"}}}}};
                          response.set_content(body.dump(), "application/json");
                      });
        m_server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& response) {
            ++m_modelRequests;
            response.status = m_failWith != 0 ? 503 : 200;
            response.set_content(R"({"data":[{"id":"fake"}]})", "application/json");
        });
        m_port = m_server.bind_to_any_port("127.0.0.1");
        m_thread = std::thread([this] { m_server.listen_after_bind(); });
        while (!m_server.is_running())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ~FakeServer() { stop(); }

    // Closes the listening socket and every connection: later requests are refused.
    void stop() {
        m_server.stop();
        if (m_thread.joinable()) m_thread.join();
    }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port) + "/v1"; }
    const std::string& name() const { return m_name; }
    std::atomic<int> m_failWith{0};
    std::atomic<int> m_answered{0};
    std::atomic<int> m_modelRequests{0};

private:
    std::string m_name;
    httplib::Server m_server;
    std::thread m_thread;
    int m_port = 0;
};

ChatRequest hello() {
    ChatRequest request;
    request.messages.push_back(ChatMessage::text("user", "Say your name"));
    return request;
}

OpenAiSettings clientSettings() {
    OpenAiSettings settings;
    settings.model = "fake";
    settings.apiKeyEnv = "IRIS_POOL_TEST_KEY";
    settings.connectTimeoutMs = 2000;
    settings.idleTimeoutMs = 5000;
    settings.totalTimeoutMs = 20000;
    return settings;
}

std::shared_ptr<EndpointPool> makePool(const std::vector<std::string>& urls,
                                       EndpointPoolSettings settings) {
    Result<std::shared_ptr<EndpointPool>> pool = EndpointPool::make(urls, std::move(settings));
    EXPECT_TRUE(pool) << pool.status().message();
    return pool ? *pool : nullptr;
}

class PooledClientTest : public ::testing::Test {
protected:
    void SetUp() override {
        ::setenv("NO_PROXY", "127.0.0.1", 1);  // a developer's proxy must not see test traffic
        ::setenv("no_proxy", "127.0.0.1", 1);
        ::unsetenv("IRIS_POOL_TEST_KEY");
    }
};

// Waits for `done` (a guard against hanging, not a timing check).
template <typename Predicate>
bool eventually(Predicate done) {
    const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done() && std::chrono::steady_clock::now() < guard)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return done();
}

TEST_F(PooledClientTest, FailsOverOn503AndTheProberBringsTheServerBack) {
    FakeServer a("A"), b("B");
    a.m_failWith = 503;
    EndpointPoolSettings settings;
    settings.probeInitialMs = 1;
    settings.probeMaxMs = 8;
    auto pool = makePool({a.url(), b.url()}, settings);
    ASSERT_TRUE(pool);
    PooledClient client(pool, clientSettings());

    // a is picked first (lower index), answers 503 and is taken out; b answers.
    Result<ChatResponse> first = client.complete(hello());
    ASSERT_TRUE(first) << first.status().message();
    EXPECT_EQ(first->text, "B");
    EXPECT_EQ(pool->states()[0].failures, 1);
    EXPECT_EQ(pool->states()[0].lastFailure.find("HTTP 503") != std::string::npos, true);

    // While a is down its probes fail; once healthy, GET /v1/models brings it back.
    ASSERT_TRUE(eventually([&] { return a.m_modelRequests >= 2; }));
    EXPECT_FALSE(pool->states()[0].inRotation);
    a.m_failWith = 0;
    ASSERT_TRUE(eventually([&] { return pool->states()[0].inRotation; }));
    // Both idle; a was picked longer ago than b: a answers.
    Result<ChatResponse> second = client.complete(hello());
    ASSERT_TRUE(second) << second.status().message();
    EXPECT_EQ(second->text, "A");
    EXPECT_EQ(client.endpointsUsed(), (std::vector<std::string>{b.url(), a.url()}));
}

TEST_F(PooledClientTest, WhenEveryServerFailsTheErrorNamesEachOne) {
    FakeServer a("A"), dead("dead");
    a.m_failWith = 503;
    dead.stop();  // its port now refuses connections
    EndpointPoolSettings settings;
    settings.startProber = false;
    auto pool = makePool({a.url(), dead.url()}, settings);
    ASSERT_TRUE(pool);
    PooledClient client(pool, clientSettings());
    Result<ChatResponse> answer = client.complete(hello());
    ASSERT_FALSE(answer);
    const std::string message = answer.status().message();
    EXPECT_EQ(answer.status().code(), StatusCode::IoError);
    EXPECT_NE(message.find("every endpoint failed (2)"), std::string::npos) << message;
    EXPECT_NE(message.find(a.url() + "/chat/completions: HTTP 503"), std::string::npos) << message;
    EXPECT_NE(message.find(dead.url() + "/chat/completions: cannot connect"), std::string::npos)
        << message;
    EXPECT_FALSE(pool->states()[0].inRotation);
    EXPECT_FALSE(pool->states()[1].inRotation);
    EXPECT_TRUE(client.endpointsUsed().empty());
    // Both out: the next request still tries both (and fails the same way).
    EXPECT_FALSE(client.complete(hello()));
    EXPECT_EQ(pool->states()[0].picks, 2);
    EXPECT_EQ(pool->states()[1].picks, 2);
}

TEST_F(PooledClientTest, A429FailsOverButA400IsTheRequestsOwnError) {
    FakeServer a("A"), b("B");
    EndpointPoolSettings settings;
    settings.startProber = false;
    auto pool = makePool({a.url(), b.url()}, settings);
    ASSERT_TRUE(pool);
    PooledClient client(pool, clientSettings());
    a.m_failWith = 429;
    Result<ChatResponse> limited = client.complete(hello());
    ASSERT_TRUE(limited) << limited.status().message();
    EXPECT_EQ(limited->text, "B");
    EXPECT_FALSE(pool->states()[0].inRotation);
    pool->probeNow();  // a's /v1/models still says 503
    EXPECT_FALSE(pool->states()[0].inRotation);
    a.m_failWith = 0;
    pool->probeNow();
    ASSERT_TRUE(pool->states()[0].inRotation);

    // a (picked longer ago) refuses the request itself: b is not asked, a stays in rotation.
    a.m_failWith = 400;
    Result<ChatResponse> refused = client.complete(hello());
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.status().message().find(a.url() + "/chat/completions: HTTP 400"),
              std::string::npos)
        << refused.status().message();
    EXPECT_TRUE(pool->states()[0].inRotation);
    EXPECT_EQ(pool->states()[0].failures, 1);  // the 429 only
    EXPECT_EQ(b.m_answered, 1);
    EXPECT_EQ(pool->states()[1].picks, 1);
}

TEST_F(PooledClientTest, TasksSharingAPoolLoseNothingWhenAServerDiesMidRun) {
    constexpr int kTasks = 4;
    constexpr int kRequestsPerTask = 12;
    FakeServer a("A"), b("B"), c("C");
    EndpointPoolSettings settings;
    settings.probeInitialMs = 2;  // the dead server is probed (and refuses) during the run
    settings.probeMaxMs = 16;
    auto pool = makePool({a.url(), b.url(), c.url()}, settings);
    ASSERT_TRUE(pool);

    std::mutex mutex;
    std::condition_variable answeredMore;
    int answered = 0;
    std::vector<std::vector<std::string>> texts(kTasks);  // each task's answers, in order
    std::vector<std::vector<std::string>> used(kTasks);
    std::vector<std::string> errors;
    std::vector<std::thread> tasks;
    for (int t = 0; t < kTasks; ++t) {
        tasks.emplace_back([&, t] {
            PooledClient client(pool, clientSettings());  // one client per task, as in eval
            for (int r = 0; r < kRequestsPerTask; ++r) {
                Result<ChatResponse> reply = client.complete(hello());
                const std::lock_guard lock(mutex);
                if (reply) {
                    texts[t].push_back(reply->text);
                    ++answered;
                } else {
                    errors.push_back(reply.status().message());
                }
                answeredMore.notify_all();
            }
            used[t] = client.endpointsUsed();
        });
    }
    {
        // b dies after a third of the requests were answered.
        std::unique_lock lock(mutex);
        answeredMore.wait(lock, [&] { return answered >= kTasks * kRequestsPerTask / 3; });
    }
    b.stop();
    const int answeredByBWhenItDied = b.m_answered;
    // Some request finds b gone and takes it out; from then on nothing picks it.
    ASSERT_TRUE(eventually([&] { return !pool->states()[1].inRotation; }));
    const std::int64_t picksOfBWhenOut = pool->states()[1].picks;
    for (std::thread& task : tasks)
        task.join();

    EXPECT_TRUE(errors.empty()) << errors.front();
    EXPECT_EQ(answered, kTasks * kRequestsPerTask);
    EXPECT_EQ(a.m_answered + b.m_answered + c.m_answered, kTasks * kRequestsPerTask);
    EXPECT_EQ(b.m_answered, answeredByBWhenItDied);
    const std::vector<EndpointState> states = pool->states();
    EXPECT_FALSE(states[1].inRotation);
    EXPECT_EQ(states[1].picks, picksOfBWhenOut);
    // Each of b's failures was a request that picked it before it was out: one per task at most.
    EXPECT_GE(states[1].failures, 1);
    EXPECT_LE(states[1].failures, kTasks);
    EXPECT_EQ(states[1].picks, answeredByBWhenItDied + states[1].failures);
    EXPECT_GE(states[1].probes, 1);
    EXPECT_TRUE(states[0].inRotation);
    EXPECT_TRUE(states[2].inRotation);
    // The endpoints each task recorded: its answers' servers, distinct, in first-use order.
    const std::map<std::string, std::string> urlOf = {
        {"A", a.url()}, {"B", b.url()}, {"C", c.url()}};
    for (int t = 0; t < kTasks; ++t) {
        std::vector<std::string> expected;
        for (const std::string& text : texts[t]) {
            if (std::find(expected.begin(), expected.end(), urlOf.at(text)) == expected.end())
                expected.push_back(urlOf.at(text));
        }
        EXPECT_EQ(used[t], expected) << "task " << t;
    }
}

TEST_F(PooledClientTest, DescribeAndEndpointsKeepSecretsOut) {
    FakeServer a("A");
    ::setenv("IRIS_POOL_TEST_KEY", "sk-pool-secret", 1);
    EndpointPoolSettings settings;
    settings.startProber = false;
    const std::string withUser = "http://user:pw-secret@127.0.0.1:" +
                                 a.url().substr(std::string("http://127.0.0.1:").size());
    auto pool = makePool({withUser, "http://127.0.0.1:9/v1"}, settings);
    ASSERT_TRUE(pool);
    PooledClient client(pool, clientSettings());
    ASSERT_TRUE(client.complete(hello()));
    EXPECT_EQ(client.describe(), "openai pool " + a.url() + ", http://127.0.0.1:9/v1 model=fake");
    EXPECT_EQ(client.endpointsUsed(), std::vector<std::string>{a.url()});
    EXPECT_EQ(checkModelsEndpoint(withUser, "IRIS_POOL_TEST_KEY", 5000).message(), "");
    ::unsetenv("IRIS_POOL_TEST_KEY");
}

}  // namespace
}  // namespace iris::agent
