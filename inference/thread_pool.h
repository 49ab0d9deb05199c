#pragma once
// The engine's compute threads. parallelFor splits a range of independent work items (matrix
// rows, attention heads) between the calling thread and the workers and returns when all are
// done. One parallelFor at a time: the pool belongs to one engine, driven by one thread.
//
// A decode step issues a few hundred parallelFor calls, each a few microseconds of work, so
// workers spin briefly between calls before they sleep (C++20 atomic wait, a futex on Linux):
// waking a sleeping thread costs more than the work itself.
//
// The pieces of a call are taken, not assigned: every thread (the caller too) claims the next
// piece from one atomic ticket until none is left, and the caller waits only for pieces that
// were claimed. On a machine with other work, the OS often deschedules a worker for a time
// slice; with fixed assignment the caller then waited for it, with claiming the caller runs its
// pieces instead, and a worker that wakes late finds the call over. The ticket carries the
// call's number, so a late worker can never take a piece of a later call with an old view of it.

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

    // Calls fn(begin, end) on disjoint pieces covering [0, count), each a multiple of `grain`
    // long (except the last): as many pieces as threads() * piecesPerThread allows, their bounds
    // fixed by the arguments alone, whichever threads run them. Blocks until every piece has
    // run. More pieces per thread bound the wait for a thread descheduled mid-piece, at the cost
    // of one atomic operation per piece.
    void parallelFor(std::int64_t count, std::int64_t grain,
                     const std::function<void(std::int64_t begin, std::int64_t end)>& fn,
                     int piecesPerThread = 1);

    // The number of cores this process may run on.
    static int hardwareThreads();

private:
    void workerLoop();
    // Claims and runs pieces of the current call until none is left.
    void runPieces();

    std::vector<std::thread> m_workers;
    std::atomic<std::uint64_t> m_generation{0};  // bumped for each parallelFor (and to stop)
    std::atomic<bool> m_stopping{false};
    // The current call: the fields below are written before m_ticket is published (release)
    // and read by a thread only after it has claimed a piece of that call through m_ticket, so
    // they cannot change under it (the call lasts until its last piece is done).
    //   m_ticket: call number (32 bits) | pieces (16 bits) | next piece to take (16 bits)
    std::atomic<std::uint64_t> m_ticket{0};
    std::atomic<int> m_done{0};  // pieces of the current call that have run
    const std::function<void(std::int64_t, std::int64_t)>* m_fn = nullptr;
    std::int64_t m_count = 0;
    std::int64_t m_pieceSize = 0;
    std::uint32_t m_calls = 0;
};

}  // namespace iris::inference
