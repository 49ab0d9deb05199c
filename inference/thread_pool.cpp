#include "inference/thread_pool.h"

#include <algorithm>
#include <chrono>

#include <sched.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define IRIS_CPU_RELAX() _mm_pause()
#else
#define IRIS_CPU_RELAX() std::this_thread::yield()
#endif

namespace iris::inference {
namespace {

// How long an idle worker spins before it sleeps: long enough to bridge the gaps between the
// operations of one forward pass, short enough not to burn a core between requests.
constexpr auto kWorkerSpin = std::chrono::microseconds(200);
// How long the caller spins for the workers before it sleeps. Short: when the machine has fewer
// free cores than threads, a descheduled worker must not cost the caller a whole time slice.
constexpr auto kCallerSpin = std::chrono::microseconds(30);

// Spins until pred() or until `limit` has passed; returns pred().
template <class Pred>
bool spinFor(std::chrono::microseconds limit, Pred pred) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
        for (int i = 0; i < 32; ++i)
            IRIS_CPU_RELAX();
        if (std::chrono::steady_clock::now() >= until) return pred();
    }
    return true;
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
    for (int i = 1; i < std::max(1, threads); ++i)
        m_workers.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
    m_stopping.store(true);
    m_generation.fetch_add(1);
    m_generation.notify_all();
    for (std::thread& t : m_workers)
        t.join();
}

int ThreadPool::hardwareThreads() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    return int(std::max(1u, std::thread::hardware_concurrency()));
}

void ThreadPool::runPiece(int piece) {
    const std::int64_t begin = std::int64_t(piece) * m_pieceSize;
    const std::int64_t end = std::min(m_count, begin + m_pieceSize);
    if (begin < end) (*m_fn)(begin, end);
}

void ThreadPool::parallelFor(std::int64_t count, std::int64_t grain,
                             const std::function<void(std::int64_t, std::int64_t)>& fn) {
    if (count <= 0) return;
    grain = std::max<std::int64_t>(1, grain);
    const std::int64_t grains = (count + grain - 1) / grain;
    const int pieces = int(std::min<std::int64_t>(threads(), grains));
    if (pieces == 1) {
        fn(0, count);
        return;
    }
    m_fn = &fn;
    m_count = count;
    m_pieceSize = (grains + pieces - 1) / pieces * grain;
    m_pieces = pieces;
    // Every worker checks in, with or without a piece, so none can still be reading this job's
    // fields when the next call rewrites them.
    m_pending.store(int(m_workers.size()), std::memory_order_relaxed);
    m_generation.fetch_add(1, std::memory_order_release);  // publishes the job
    m_generation.notify_all();  // wakes workers that went to sleep (cheap when none did)
    runPiece(0);                // the caller takes the first piece
    if (!spinFor(kCallerSpin, [&] { return m_pending.load(std::memory_order_acquire) == 0; })) {
        for (int left; (left = m_pending.load(std::memory_order_acquire)) != 0;)
            m_pending.wait(left);
    }
    m_fn = nullptr;
}

void ThreadPool::workerLoop(int index) {
    std::uint64_t seen = 0;
    for (;;) {
        // Spin for the next job, then sleep on the generation counter until one arrives.
        if (!spinFor(kWorkerSpin,
                     [&] { return m_generation.load(std::memory_order_acquire) != seen; })) {
            m_generation.wait(seen, std::memory_order_acquire);
        }
        if (m_stopping.load()) return;
        seen = m_generation.load(std::memory_order_acquire);
        if (index < m_pieces) runPiece(index);
        if (m_pending.fetch_sub(1, std::memory_order_acq_rel) == 1) m_pending.notify_one();
    }
}

}  // namespace iris::inference
