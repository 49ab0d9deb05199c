#include "app/cli/interrupt_watcher.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

namespace iris::app {
namespace {

// Waits (at most 10 s) for the watcher's callback to run.
class Flag {
public:
    void set() {
        std::lock_guard lock(m_mutex);
        m_set = true;
        m_changed.notify_all();
    }
    bool waitFor() {
        std::unique_lock lock(m_mutex);
        return m_changed.wait_for(lock, std::chrono::seconds(10), [this] { return m_set; });
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_changed;
    bool m_set = false;
};

// Each case runs in a forked child (gtest's "fast" death-test style), which holds only the forking
// thread: no thread of the test process (Qt's, a BLAS pool's) can take the signal in its place.
// The child exits 0 when the callback ran, 1 when it did not within 10 s; a signal left to its
// default action kills it instead.
int watchAndSignal(bool olderThreadTakesIt) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);  // as a fresh process starts
    std::atomic<bool> stop = false;
    // With olderThreadTakesIt, a thread that existed before the watcher and does not block the
    // signals, as a library's pool started while the program loads (OpenBLAS's) does.
    std::thread older;
    if (olderThreadTakesIt) {
        older = std::thread([&stop] {
            while (!stop)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
    }
    bool ran = false;
    {
        InterruptWatcher watcher;
        Flag called;
        watcher.onInterrupt([&called] { called.set(); });
        if (olderThreadTakesIt)
            ::pthread_kill(older.native_handle(), SIGINT);
        else
            ::kill(::getpid(), SIGINT);
        ran = called.waitFor();
    }
    stop = true;
    if (older.joinable()) older.join();
    return ran ? 0 : 1;
}

TEST(InterruptWatcher, ASignalToTheProcessReachesTheCallback) {
    EXPECT_EXIT(std::_Exit(watchAndSignal(false)), ::testing::ExitedWithCode(0), "");
}

TEST(InterruptWatcher, ASignalTakenByAnOlderThreadStillReachesTheCallback) {
    EXPECT_EXIT(std::_Exit(watchAndSignal(true)), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace iris::app
