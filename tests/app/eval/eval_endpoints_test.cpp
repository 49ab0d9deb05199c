// `iris eval run --endpoint A --endpoint B --endpoint C --parallel 3` in process: three fake
// OpenAI-compatible servers on 127.0.0.1 (cpp-httplib) answer WAIT to every request; server B
// stops once a few requests were answered. Every task still makes all its model calls (none is
// lost to B), B answers nothing more, and each task records the servers that answered it.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "app/cli/eval/eval_results.h"
#include "app/cli/eval/eval_runner.h"
#include "app/session/model_choice.h"
#include "tests/inference/models/scratch_dir.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;

constexpr int kTasks = 6;
constexpr int kSteps = 3;

std::string taskJson(int i) {
    return R"({"id": "blank-)" + std::to_string(i) + R"(", "instruction": "Look at the page.",
  "config": [], "evaluator": {"func": "infeasible"},
  "iris": {"project": "site", "viewport": [112, 84], "action_format": "pyautogui",
           "max_steps": )" +
           std::to_string(kSteps) + "}}";
}

// Counts every answer of every server, so that the test can wait for the n-th.
struct Answers {
    std::mutex mutex;
    std::condition_variable more;
    int total = 0;
};

class FakeServer {
public:
    explicit FakeServer(Answers& answers) {
        m_server.Post("/v1/chat/completions",
                      [this, &answers](const httplib::Request&, httplib::Response& response) {
                          ++m_answered;
                          const nlohmann::json body = {
                              {"model", "fake"},
                              {"choices",
                               {{{"index", 0},
                                 {"message", {{"role", "assistant"}, {"content", "WAIT"}}},
                                 {"finish_reason", "stop"}}}}};
                          response.set_content(body.dump(), "application/json");
                          const std::lock_guard lock(answers.mutex);
                          ++answers.total;
                          answers.more.notify_all();
                      });
        m_server.Get("/v1/models", [](const httplib::Request&, httplib::Response& response) {
            response.set_content(R"({"data":[{"id":"fake"}]})", "application/json");
        });
        m_port = m_server.bind_to_any_port("127.0.0.1");
        m_thread = std::thread([this] { m_server.listen_after_bind(); });
        while (!m_server.is_running())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ~FakeServer() { stop(); }
    void stop() {
        m_server.stop();
        if (m_thread.joinable()) m_thread.join();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port) + "/v1"; }
    std::atomic<int> m_answered{0};

private:
    httplib::Server m_server;
    std::thread m_thread;
    int m_port = 0;
};

TEST(EvalEndpointsTest, AServerThatDiesMidRunLosesNoTaskAndEachTaskNamesItsServers) {
    ::setenv("NO_PROXY", "127.0.0.1", 1);
    ::setenv("no_proxy", "127.0.0.1", 1);
    const inference::testing::ScratchDir scratch("iris_eval_endpoints");
    fs::create_directories(scratch.path() / "tasks" / "site");
    std::ofstream(scratch.path() / "tasks" / "site" / "index.html") << "<p>Hello</p>\n";
    for (int i = 0; i < kTasks; ++i)
        std::ofstream(scratch.path() / "tasks" / ("blank-" + std::to_string(i) + ".json"))
            << taskJson(i);

    Answers answers;
    FakeServer a(answers), b(answers), c(answers);
    std::atomic<int> answeredByBWhenItDied{-1};
    std::thread killer([&] {
        std::unique_lock lock(answers.mutex);
        answers.more.wait(lock, [&] { return answers.total >= 4; });
        lock.unlock();
        b.stop();
        answeredByBWhenItDied = b.m_answered.load();
    });

    EvalRunOptions options;
    options.tasks = scratch.path() / "tasks";
    options.out = scratch.path() / "out";
    options.answers = AnswerSource::Model;
    options.model.backend = ModelChoice::Backend::Endpoint;
    options.model.endpoint = a.url();
    options.model.endpoints = {a.url(), b.url(), c.url()};
    options.model.modelName = "fake";
    options.model.apiKeyEnv = "IRIS_EVAL_ENDPOINTS_TEST_KEY";
    options.modelName = "fake";
    options.parallel = 3;
    std::ostringstream out, err;
    EXPECT_EQ(runEvaluation(options, out, err, nullptr), 0) << out.str() << err.str();
    killer.join();

    Result<RunResults> results = loadRunResults(options.out);
    ASSERT_TRUE(results) << results.status().message();
    ASSERT_EQ(results->tasks.size(), std::size_t(kTasks)) << out.str() << err.str();
    EXPECT_EQ(results->settings.modelDescription,
              "openai pool " + a.url() + ", " + b.url() + ", " + c.url() + " model=fake");
    int modelCalls = 0;
    std::set<std::string> named;
    for (const TaskResult& task : results->tasks) {
        EXPECT_EQ(task.steps, kSteps) << task.file << ": " << task.error;
        EXPECT_EQ(task.loopEnd, "max_steps") << task.file << ": " << task.error;
        modelCalls += task.steps;
        // "URL, URL": distinct servers of the pool.
        std::vector<std::string> servers;
        std::stringstream list(task.endpoint);
        for (std::string item; std::getline(list, item, ',');)
            servers.push_back(item.substr(item.front() == ' ' ? 1 : 0));
        EXPECT_FALSE(servers.empty()) << task.file;
        EXPECT_EQ(std::set<std::string>(servers.begin(), servers.end()).size(), servers.size());
        for (const std::string& server : servers) {
            EXPECT_TRUE(server == a.url() || server == b.url() || server == c.url()) << server;
            named.insert(server);
        }
    }
    // Every model call was answered once, by a server that was up; B's count stopped at death.
    EXPECT_EQ(a.m_answered + b.m_answered + c.m_answered, modelCalls);
    EXPECT_EQ(b.m_answered, answeredByBWhenItDied);
    EXPECT_GE(answeredByBWhenItDied, 1);  // the first three requests went to a, b and c
    EXPECT_EQ(named, (std::set<std::string>{a.url(), b.url(), c.url()}));
}

}  // namespace
}  // namespace iris::app::eval
