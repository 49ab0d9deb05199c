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
constexpr auto kSpin = std::chrono::microseconds(200);

}  // namespace

ThreadPool::ThreadPool(int threads) {
    for (int i = 1; i < std::max(1, threads); ++i)
        m_workers.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
    m_stopping.store(true);
    { std::lock_guard lock(m_mutex); }
    m_wake.notify_all();
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
    m_pending.store(int(m_workers.size()));
    m_generation.fetch_add(1);  // publishes the job (seq_cst)
    if (m_sleeping.load() > 0) {
        std::lock_guard lock(m_mutex);
        m_wake.notify_all();
    }
    runPiece(0);  // the caller takes the first piece
    while (m_pending.load(std::memory_order_acquire) != 0)
        IRIS_CPU_RELAX();
    m_fn = nullptr;
}

void ThreadPool::workerLoop(int index) {
    std::uint64_t seen = 0;
    for (;;) {
        // Spin for the next job, then sleep until one arrives.
        const auto spinUntil = std::chrono::steady_clock::now() + kSpin;
        std::uint64_t generation = m_generation.load(std::memory_order_acquire);
        while (generation == seen && !m_stopping.load(std::memory_order_relaxed) &&
               std::chrono::steady_clock::now() < spinUntil) {
            for (int i = 0; i < 64; ++i)
                IRIS_CPU_RELAX();
            generation = m_generation.load(std::memory_order_acquire);
        }
        if (generation == seen) {
            std::unique_lock lock(m_mutex);
            m_sleeping.fetch_add(1);
            m_wake.wait(lock, [&] { return m_stopping.load() || m_generation.load() != seen; });
            m_sleeping.fetch_sub(1);
            generation = m_generation.load();
        }
        if (m_stopping.load()) return;
        seen = generation;
        if (index < m_pieces) runPiece(index);
        m_pending.fetch_sub(1, std::memory_order_release);
    }
}

}  // namespace iris::inference
