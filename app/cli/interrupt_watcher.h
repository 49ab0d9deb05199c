#pragma once
// Turns Ctrl-C (SIGINT) and SIGTERM into a callback on an ordinary thread, where it may take
// locks and cancel requests (a signal handler may not). Construct it before any other thread
// exists (before the QApplication): the signals are blocked in the constructing thread and every
// thread started after it, and received by the watcher alone. A second interrupt after the
// callback has run ends the process at once (exit status 130), for a stop that hangs.
#include <functional>
#include <mutex>
#include <thread>

namespace iris::app {

class InterruptWatcher {
public:
    InterruptWatcher();
    ~InterruptWatcher();
    InterruptWatcher(const InterruptWatcher&) = delete;
    InterruptWatcher& operator=(const InterruptWatcher&) = delete;

    // What an interrupt does from now on (replaces the previous callback). Thread-safe.
    void onInterrupt(std::function<void()> callback);

private:
    void interrupted();

    std::mutex m_mutex;
    std::function<void()> m_callback;
    int m_interrupts = 0;
    std::thread m_thread;
};

}  // namespace iris::app
