// `iris serve` under load: 64 clients stream chat completions at once for about a minute
// (IRIS_SERVE_LOAD_SECONDS overrides it) against a scheduler that runs 8 at a time. Every answer
// must equal the engine's answer to the same request alone (a fresh Session on a separately
// loaded copy of the model), no request may fail, and the process's resident memory must stop
// growing once every prompt has been seen (a bound, not a timing).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/app/serve/serve_fixture.h"

namespace iris::app::serve {
namespace {

using Json = nlohmann::json;

// Resident set size in bytes (Linux: /proc/self/statm's second field, in pages).
std::int64_t residentBytes() {
    std::ifstream statm("/proc/self/statm");
    std::int64_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * std::int64_t(sysconf(_SC_PAGESIZE));
}

// The content deltas of a streamed chat completion, joined; an error text instead on failure.
struct Streamed {
    std::string text;
    std::string error;
};

Streamed streamChat(httplib::Client& client, const std::string& user, int maxTokens) {
    const Json body = {{"model", "tiny.gguf"},
                       {"messages", {{{"role", "user"}, {"content", user}}}},
                       {"max_tokens", maxTokens},
                       {"temperature", 0},
                       {"stream", true}};
    Streamed out;
    auto result = client.Post("/v1/chat/completions", body.dump(), "application/json");
    if (!result) return {"", "no response: " + httplib::to_string(result.error())};
    if (result->status != 200) return {"", std::to_string(result->status) + " " + result->body};
    bool done = false;
    for (const std::string& data : testing::sseData(result->body)) {
        if (data == "[DONE]") {
            done = true;
            continue;
        }
        const Json chunk = Json::parse(data, nullptr, false);
        if (chunk.is_discarded() || chunk.contains("error")) return {"", "bad chunk: " + data};
        for (const Json& choice : chunk.value("choices", Json::array())) {
            const Json delta = choice.value("delta", Json::object());
            if (delta.contains("content") && delta["content"].is_string())
                out.text += delta["content"].get<std::string>();
        }
    }
    if (!done) out.error = "no [DONE]";
    return out;
}

TEST(ServeLoad, SixtyFourStreamingClientsForAMinuteGetTheOneRequestAnswers) {
    testing::ServeFixture fixture;
    fixture.maxSessions = 8;
    fixture.start();
    ASSERT_NE(fixture.server, nullptr);

    constexpr int kClients = 64, kPrompts = 8, kMaxTokens = 16;
    std::vector<std::string> users, expected;
    for (int p = 0; p < kPrompts; ++p) {
        users.push_back("message " + std::to_string(p) + ": please look at the screen again");
        expected.push_back(testing::asJsonText(
            fixture.reference(testing::qwenChatPrompt(users.back()), kMaxTokens).text));
    }
    const char* override = std::getenv("IRIS_SERVE_LOAD_SECONDS");
    const auto duration = std::chrono::seconds(override ? std::atoi(override) : 60);
    const auto start = std::chrono::steady_clock::now();
    std::atomic<int> requests{0}, failures{0}, wrong{0};
    std::atomic<std::int64_t> warmResident{0};
    std::mutex firstProblemMutex;
    std::string firstProblem;
    auto note = [&](const std::string& problem) {
        std::lock_guard lock(firstProblemMutex);
        if (firstProblem.empty()) firstProblem = problem;
    };
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
        clients.emplace_back([&, c] {
            httplib::Client client = fixture.client();
            for (int i = 0; std::chrono::steady_clock::now() - start < duration; ++i) {
                const int p = (c + i) % kPrompts;
                const Streamed got = streamChat(client, users[std::size_t(p)], kMaxTokens);
                const int done = ++requests;
                if (done == 4 * kClients) warmResident = residentBytes();
                if (!got.error.empty()) {
                    ++failures;
                    note("client " + std::to_string(c) + ": " + got.error);
                } else if (got.text != expected[std::size_t(p)]) {
                    ++wrong;
                    note("client " + std::to_string(c) + " prompt " + std::to_string(p) +
                         ": '" + got.text + "' instead of '" + expected[std::size_t(p)] + "'");
                }
            }
        });
    }
    for (std::thread& client : clients)
        client.join();
    const std::int64_t endResident = residentBytes();

    EXPECT_GE(requests.load(), kClients);
    EXPECT_EQ(failures.load(), 0) << firstProblem;
    EXPECT_EQ(wrong.load(), 0) << firstProblem;
    const inference::SchedulerStats stats = fixture.server->scheduler()->stats();
    EXPECT_EQ(stats.finished, requests.load());
    EXPECT_EQ(stats.running + stats.waiting, 0);
    EXPECT_EQ(stats.kvBlocksUsed, 0);
    EXPECT_GT(stats.prefixHitTokens, 0);
    // Once every prompt has been answered a few times, serving more costs no memory: the KV pool,
    // the prefix cache and the HTTP threads are all allocated by then.
    if (warmResident > 0) {
        EXPECT_LT(endResident - warmResident.load(), std::int64_t(32) << 20)
            << "resident memory grew from " << warmResident.load() << " to " << endResident
            << " bytes over " << requests.load() << " requests";
    }
    std::cout << requests.load() << " requests in " << duration.count() << " s, "
              << stats.prefixHitTokens << " prompt tokens from the prefix cache\n";
}

}  // namespace
}  // namespace iris::app::serve
