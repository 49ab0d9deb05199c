// EndpointPool on its own: the least-outstanding pick with hand-computed sequences, taking an
// endpoint out of rotation, the probe back-off and the probe that brings it back, with the
// health check replaced by a counter (no network).
#include "agent/clients/endpoint_pool.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace iris::agent {
namespace {

using Outcome = EndpointPool::Outcome;

EndpointPoolSettings manualProbes(HealthCheck check) {
    EndpointPoolSettings settings;
    settings.healthCheck = std::move(check);
    settings.startProber = false;
    return settings;
}

std::shared_ptr<EndpointPool> makePool(std::vector<std::string> urls,
                                       EndpointPoolSettings settings) {
    Result<std::shared_ptr<EndpointPool>> pool =
        EndpointPool::make(std::move(urls), std::move(settings));
    EXPECT_TRUE(pool) << pool.status().message();
    return pool ? *pool : nullptr;
}

const std::vector<bool> kNoneTried(3, false);

TEST(EndpointPoolTest, PicksTheLeastOutstandingThenTheLeastRecentlyPicked) {
    auto pool = makePool({"http://a/v1", "http://b/v1/", "http://c/v1"},
                         manualProbes([](const std::string&) { return Status::ok(); }));
    ASSERT_TRUE(pool);
    EXPECT_EQ(pool->baseUrl(1), "http://b/v1");  // the trailing '/' dropped
    // By hand: outstanding [0,0,0] -> a, b, c (never picked, lower index first) -> [1,1,1].
    EXPECT_EQ(pool->pick(kNoneTried), 0u);
    EXPECT_EQ(pool->pick(kNoneTried), 1u);
    EXPECT_EQ(pool->pick(kNoneTried), 2u);
    pool->release(1, Outcome::Answered);    // [1,0,1]: b is the only idle one
    EXPECT_EQ(pool->pick(kNoneTried), 1u);  // tickets a=1 b=4 c=3
    pool->release(0, Outcome::Answered);
    pool->release(2, Outcome::Answered);    // [0,1,0]: a (ticket 1) before c (ticket 3)
    EXPECT_EQ(pool->pick(kNoneTried), 0u);  // a=5
    EXPECT_EQ(pool->pick(kNoneTried), 2u);  // c=6, [1,1,1]
    EXPECT_EQ(pool->pick(kNoneTried), 1u);  // tickets a=5 b=4 c=6: b, [1,2,1]
    EXPECT_EQ(pool->pick(kNoneTried), 0u);  // a=5 c=6 at 1 outstanding: a, [2,2,1]
    EXPECT_EQ(pool->pick(kNoneTried), 2u);
    const std::vector<EndpointState> states = pool->states();
    EXPECT_EQ(states[0].outstanding, 2);
    EXPECT_EQ(states[1].outstanding, 2);
    EXPECT_EQ(states[2].outstanding, 2);
    EXPECT_EQ(states[0].picks + states[1].picks + states[2].picks, 9);
}

TEST(EndpointPoolTest, SkipsWhatTheRequestTriedAndEndsWhenAllWereTried) {
    auto pool = makePool({"http://a/v1", "http://b/v1", "http://c/v1"},
                         manualProbes([](const std::string&) { return Status::ok(); }));
    ASSERT_TRUE(pool);
    EXPECT_EQ(pool->pick({true, false, false}), 1u);
    EXPECT_EQ(pool->pick({false, true, true}), 0u);
    EXPECT_EQ(pool->pick({true, true, true}), std::nullopt);
}

TEST(EndpointPoolTest, TakesOutOnDownButNotOnTheRequestsOwnFailure) {
    auto pool = makePool({"http://a/v1", "http://b/v1", "http://c/v1"},
                         manualProbes([](const std::string&) { return Status::ok(); }));
    ASSERT_TRUE(pool);
    ASSERT_EQ(pool->pick(kNoneTried), 0u);
    pool->release(0, Outcome::Failed, "HTTP 400: bad request");
    EXPECT_TRUE(pool->states()[0].inRotation);
    ASSERT_EQ(pool->pick(kNoneTried), 1u);
    pool->release(1, Outcome::Down, "cannot connect: Connection refused");
    const EndpointState b = pool->states()[1];
    EXPECT_FALSE(b.inRotation);
    EXPECT_EQ(b.failures, 1);
    EXPECT_EQ(b.probeDelayMs, 1000);
    EXPECT_EQ(b.lastFailure, "cannot connect: Connection refused");
    // b is idle and least recently picked, but out: a and c take turns.
    for (std::size_t expected : {2u, 0u, 2u, 0u}) {
        const std::optional<std::size_t> picked = pool->pick(kNoneTried);
        ASSERT_EQ(picked, expected);
        pool->release(*picked, Outcome::Answered);
    }
    // A request that a and c both failed may still try b; its answer brings b back.
    ASSERT_EQ(pool->pick({true, false, true}), 1u);
    pool->release(1, Outcome::Answered);
    EXPECT_TRUE(pool->states()[1].inRotation);
}

TEST(EndpointPoolTest, ProbesBackOffFromOneToThirtySecondsAndBringBackOnHealth) {
    std::atomic<bool> healthy{false};
    std::atomic<int> checks{0};
    auto pool = makePool({"http://a/v1", "http://b/v1"}, manualProbes([&](const std::string& url) {
                             EXPECT_EQ(url, "http://b/v1");
                             ++checks;
                             return healthy ? Status::ok() : Status::ioError("HTTP 503");
                         }));
    ASSERT_TRUE(pool);
    ASSERT_EQ(pool->pick({true, false}), 1u);
    pool->release(1, Outcome::Down, "HTTP 503");
    // 1 s, then doubled after each failed probe, capped at 30 s.
    for (const int expected : {2000, 4000, 8000, 16000, 30000, 30000}) {
        pool->probeNow();
        EXPECT_EQ(pool->states()[1].probeDelayMs, expected);
        EXPECT_FALSE(pool->states()[1].inRotation);
    }
    EXPECT_EQ(pool->states()[1].lastFailure, "health check: HTTP 503");
    healthy = true;
    pool->probeNow();
    EXPECT_TRUE(pool->states()[1].inRotation);
    EXPECT_EQ(checks, 7);
    EXPECT_EQ(pool->states()[1].probes, 7);
    pool->probeNow();  // nothing is out: no check
    EXPECT_EQ(checks, 7);
}

TEST(EndpointPoolTest, TheProberThreadBringsAnEndpointBackAndStopsCleanly) {
    std::atomic<int> checks{0};
    EndpointPoolSettings settings;
    settings.probeInitialMs = 1;
    settings.probeMaxMs = 4;
    settings.healthCheck = [&](const std::string&) {
        // Unhealthy for the first two probes, then healthy.
        return ++checks >= 3 ? Status::ok() : Status::ioError("cannot connect");
    };
    auto pool = makePool({"http://a/v1", "http://b/v1"}, settings);
    ASSERT_TRUE(pool);
    ASSERT_EQ(pool->pick({false, false}), 0u);
    pool->release(0, Outcome::Down, "cannot connect");
    // Waits for the event (a guard, not a timing check: the thread needs three short waits).
    const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!pool->states()[0].inRotation && std::chrono::steady_clock::now() < guard)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(pool->states()[0].inRotation);
    EXPECT_EQ(checks, 3);
    EXPECT_EQ(pool->states()[0].probes, 3);
    // Out again while the prober runs: destruction stops the prober and joins it.
    ASSERT_EQ(pool->pick({false, true}), 0u);
    pool->release(0, Outcome::Down, "reset");
    pool.reset();
    EXPECT_GE(checks, 3);
}

TEST(EndpointPoolTest, RefusesNoEndpointsEmptyOnesAndRepeats) {
    EXPECT_FALSE(EndpointPool::make({}, manualProbes({})));
    Result<std::shared_ptr<EndpointPool>> empty =
        EndpointPool::make({"http://a/v1", "/"}, manualProbes({}));
    ASSERT_FALSE(empty);
    EXPECT_EQ(empty.status().message(), "endpoint 2 is empty");
    Result<std::shared_ptr<EndpointPool>> twice =
        EndpointPool::make({"http://a/v1", "http://a/v1/"}, manualProbes({}));
    ASSERT_FALSE(twice);
    EXPECT_EQ(twice.status().message(), "endpoint http://a/v1 is given twice");
}

TEST(EndpointPoolTest, LabelsDropCredentialsAndQueries) {
    EXPECT_EQ(endpointLabel("http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000/v1");
    EXPECT_EQ(endpointLabel("https://user:sk-secret@api.example/v1?key=sk-2#x"),
              "https://api.example/v1");
    EXPECT_EQ(endpointLabel("http://host/v1/a@b"), "http://host/v1/a@b");  // '@' in the path
}

}  // namespace
}  // namespace iris::agent
