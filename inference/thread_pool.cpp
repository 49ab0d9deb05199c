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
        m_workers.emplace_back([this] { workerLoop(); });
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

void ThreadPool::runPieces() {
    for (;;) {
        std::uint64_t ticket = m_ticket.load(std::memory_order_acquire);
        const int pieces = int((ticket >> 16) & 0xFFFF), next = int(ticket & 0xFFFF);
        if (next >= pieces) return;
        if (!m_ticket.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel))
            continue;
        // Piece `next` of this call is ours: the call cannot end, nor its fields change, before
        // it is done.
        const std::int64_t begin = std::int64_t(next) * m_pieceSize;
        const std::int64_t end = std::min(m_count, begin + m_pieceSize);
        (*m_fn)(begin, end);
        if (m_done.fetch_add(1, std::memory_order_acq_rel) + 1 == pieces) m_done.notify_one();
    }
}

void ThreadPool::parallelFor(std::int64_t count, std::int64_t grain,
                             const std::function<void(std::int64_t, std::int64_t)>& fn,
                             int piecesPerThread) {
    if (count <= 0) return;
    grain = std::max<std::int64_t>(1, grain);
    const std::int64_t grains = (count + grain - 1) / grain;
    const std::int64_t wanted = std::min<std::int64_t>(
        {grains, std::int64_t(threads()) * std::max(1, piecesPerThread), 0xFFFF});
    if (m_workers.empty() || wanted == 1) {
        fn(0, count);
        return;
    }
    m_fn = &fn;
    m_count = count;
    m_pieceSize = (grains + wanted - 1) / wanted * grain;
    const auto pieces = std::uint64_t((count + m_pieceSize - 1) / m_pieceSize);
    m_done.store(0, std::memory_order_relaxed);
    m_ticket.store(std::uint64_t(++m_calls) << 32 | pieces << 16, std::memory_order_release);
    m_generation.fetch_add(1, std::memory_order_release);
    m_generation.notify_all();  // wakes workers that went to sleep (cheap when none did)
    runPieces();
    // Only pieces already claimed can be left, each running on a thread that holds the CPU or
    // soon will: spin briefly, then sleep.
    const int all = int(pieces);
    if (!spinFor(kCallerSpin, [&] { return m_done.load(std::memory_order_acquire) == all; })) {
        for (int done; (done = m_done.load(std::memory_order_acquire)) != all;)
            m_done.wait(done);
    }
    m_fn = nullptr;
}

void ThreadPool::workerLoop() {
    std::uint64_t seen = 0;
    for (;;) {
        // Spin for the next call, then sleep on the generation counter until one arrives.
        if (!spinFor(kWorkerSpin,
                     [&] { return m_generation.load(std::memory_order_acquire) != seen; })) {
            m_generation.wait(seen, std::memory_order_acquire);
        }
        // Which call woke this thread is read before m_stopping: the destructor sets that
        // before its bump, so a thread that read the bump also sees it. (A worker may wake after
        // its call has ended, when the caller no longer waits for it.)
        seen = m_generation.load(std::memory_order_acquire);
        if (m_stopping.load()) return;
        runPieces();
    }
}

}  // namespace iris::inference
