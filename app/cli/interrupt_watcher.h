#pragma once
// Turns Ctrl-C (SIGINT) and SIGTERM into a callback on an ordinary thread, where it may take
// locks and cancel requests (a signal handler may not). Construct it early (before the
// QApplication), one at a time. The signals are blocked in the constructing thread and every
// thread started after it; a thread that exists already and does not block them (a library's
// pool started while the program loads, such as OpenBLAS's) gets them instead, so a handler that
// only writes to a pipe catches them wherever they land, and the watcher thread reads the pipe.
// A second interrupt after the callback has run ends the process at once (exit status 130), for
// a stop that hangs.
#include <functional>
#include <mutex>
#include <thread>

#include <signal.h>

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
    struct sigaction m_previousInt {
    }, m_previousTerm{};
    std::thread m_thread;
};

}  // namespace iris::app
