// ThreadPool::parallelFor: every index runs exactly once, in pieces whose bounds depend only on
// the arguments, also when workers wake late (more threads than cores, so the OS deschedules
// them between calls and a late worker meets a later call's ticket).
#include "inference/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace iris::inference {
namespace {

struct Call {
    std::int64_t count, grain;
    int piecesPerThread;
};

// The pieces one call ran, sorted by start.
std::vector<std::pair<std::int64_t, std::int64_t>> pieces(ThreadPool& pool, const Call& call,
                                                          std::vector<std::atomic<int>>& hits) {
    std::mutex mutex;
    std::vector<std::pair<std::int64_t, std::int64_t>> ran;
    pool.parallelFor(
        call.count, call.grain,
        [&](std::int64_t begin, std::int64_t end) {
            for (std::int64_t i = begin; i < end; ++i)
                hits[std::size_t(i)].fetch_add(1, std::memory_order_relaxed);
            std::lock_guard lock(mutex);
            ran.emplace_back(begin, end);
        },
        call.piecesPerThread);
    std::sort(ran.begin(), ran.end());
    return ran;
}

TEST(ThreadPool, EveryIndexRunsOnceInPiecesFixedByTheArguments) {
    for (const int threads : {1, 2, 3, 8}) {
        ThreadPool pool(threads);
        for (const Call call : {Call{1, 1, 1}, Call{5, 1, 1}, Call{100, 16, 1}, Call{100, 16, 4},
                                Call{4864, 16, 4}, Call{7, 3, 8}, Call{1000, 1, 100000}}) {
            std::vector<std::atomic<int>> hits(std::size_t(call.count));
            const auto first = pieces(pool, call, hits);
            for (std::int64_t i = 0; i < call.count; ++i)
                ASSERT_EQ(hits[std::size_t(i)].load(), 1) << "index " << i;
            // Contiguous, each a multiple of the grain but the last, at most threads * pieces
            // per thread of them.
            EXPECT_EQ(first.front().first, 0);
            EXPECT_EQ(first.back().second, call.count);
            for (std::size_t p = 0; p + 1 < first.size(); ++p) {
                EXPECT_EQ(first[p].second, first[p + 1].first);
                EXPECT_EQ((first[p].second - first[p].first) % call.grain, 0);
            }
            EXPECT_LE(std::int64_t(first.size()),
                      std::min<std::int64_t>(std::int64_t(threads) * call.piecesPerThread,
                                             (call.count + call.grain - 1) / call.grain));
            // The same call again: the same pieces, whichever threads took them.
            std::vector<std::atomic<int>> again(std::size_t(call.count));
            EXPECT_EQ(pieces(pool, call, again), first);
        }
    }
}

// Thousands of short calls back to back on more threads than this machine has cores: workers
// are often descheduled and wake after the call they were woken for (or several) has ended.
// None may run a piece twice, skip one, or run a piece of one call with another's function.
TEST(ThreadPool, LateWorkersNeverRunAPieceTwiceOrOfTheWrongCall) {
    const int threads = std::max(4, 2 * int(std::thread::hardware_concurrency()));
    ThreadPool pool(threads);
    std::vector<std::int64_t> sums(64);
    for (int call = 0; call < 20000; ++call) {
        const std::int64_t count = 1 + call % 61;
        std::atomic<std::int64_t> sum{0};
        std::atomic<int> wrongCall{0};
        const int mine = call;
        pool.parallelFor(
            count, 1 + call % 3,
            [&, mine](std::int64_t begin, std::int64_t end) {
                if (mine != call) wrongCall.fetch_add(1);
                for (std::int64_t i = begin; i < end; ++i)
                    sum.fetch_add(i + 1, std::memory_order_relaxed);
            },
            1 + call % 4);
        ASSERT_EQ(wrongCall.load(), 0);
        ASSERT_EQ(sum.load(), count * (count + 1) / 2) << "call " << call;
    }
}

}  // namespace
}  // namespace iris::inference
