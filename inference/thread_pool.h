#pragma once
// The engine's compute threads. parallelFor splits a range of independent work items (matrix
// rows, attention heads) between the calling thread and the workers and returns when all are
// done. One parallelFor at a time: the pool belongs to one engine, driven by one thread.
//
// A decode step issues a few hundred parallelFor calls, each a few microseconds of work, so
// workers spin briefly between calls before they sleep (C++20 atomic wait, a futex on Linux):
// waking a sleeping thread costs more than the work itself.

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace iris::inference {

class ThreadPool {
public:
    // `threads` >= 1 compute threads in all, the caller of parallelFor included.
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int threads() const { return int(m_workers.size()) + 1; }

    // Calls fn(begin, end) on disjoint pieces covering [0, count), at most one piece per thread,
    // each a multiple of `grain` long (except the last). Blocks until every piece has run.
    void parallelFor(std::int64_t count, std::int64_t grain,
                     const std::function<void(std::int64_t begin, std::int64_t end)>& fn);

    // The number of cores this process may run on.
    static int hardwareThreads();

private:
    void workerLoop(int index);
    void runPiece(int piece);

    std::vector<std::thread> m_workers;
    std::atomic<std::uint64_t> m_generation{0};  // bumped for each parallelFor (and to stop)
    std::atomic<int> m_pending{0};               // workers that have not finished this job
    std::atomic<bool> m_stopping{false};
    // The current job, written before m_generation is bumped, read by workers after they see it.
    const std::function<void(std::int64_t, std::int64_t)>* m_fn = nullptr;
    std::int64_t m_count = 0;
    std::int64_t m_pieceSize = 0;
    int m_pieces = 0;
};

}  // namespace iris::inference
