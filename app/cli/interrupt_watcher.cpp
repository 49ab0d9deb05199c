#include "app/cli/interrupt_watcher.h"

#include <cstdio>
#include <cstdlib>

#include <pthread.h>
#include <signal.h>

namespace iris::app {
namespace {

// SIGUSR2 only wakes the watcher to end it.
sigset_t watchedSignals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR2);
    return set;
}

}  // namespace

InterruptWatcher::InterruptWatcher() {
    const sigset_t set = watchedSignals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    m_thread = std::thread([this, set] {
        for (;;) {
            int signal = 0;
            if (sigwait(&set, &signal) != 0 || signal == SIGUSR2) return;
            interrupted();
        }
    });
}

InterruptWatcher::~InterruptWatcher() {
    pthread_kill(m_thread.native_handle(), SIGUSR2);
    m_thread.join();
}

void InterruptWatcher::onInterrupt(std::function<void()> callback) {
    std::lock_guard lock(m_mutex);
    m_callback = std::move(callback);
}

void InterruptWatcher::interrupted() {
    std::function<void()> callback;
    {
        std::lock_guard lock(m_mutex);
        if (++m_interrupts > 1 || !m_callback) {
            std::fputs("\niris: interrupted\n", stderr);
            std::_Exit(130);
        }
        callback = m_callback;
    }
    std::fputs("\niris: stopping after the current step (interrupt again to quit now)\n", stderr);
    callback();
}

}  // namespace iris::app
