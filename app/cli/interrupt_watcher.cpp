#include "app/cli/interrupt_watcher.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

namespace iris::app {
namespace {

// The pipe from the handler to the watcher thread: a byte per signal, 0 to end the watcher.
int g_pipe[2] = {-1, -1};

void forwardSignal(int signal) {
    const int savedErrno = errno;
    const auto byte = static_cast<unsigned char>(signal);
    [[maybe_unused]] const ssize_t written = ::write(g_pipe[1], &byte, 1);
    errno = savedErrno;
}

sigset_t watchedSignals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

}  // namespace

InterruptWatcher::InterruptWatcher() {
    if (::pipe2(g_pipe, O_CLOEXEC) != 0) {
        std::perror("iris: cannot watch for Ctrl-C (pipe)");
        return;
    }
    struct sigaction action {};
    action.sa_handler = forwardSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, &m_previousInt);
    sigaction(SIGTERM, &action, &m_previousTerm);
    const sigset_t set = watchedSignals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    m_thread = std::thread([this, set] {
        // The one thread started from here on that takes the signals (into the handler).
        pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
        for (;;) {
            unsigned char byte = 0;
            const ssize_t n = ::read(g_pipe[0], &byte, 1);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0 || byte == 0) return;
            interrupted();
        }
    });
}

InterruptWatcher::~InterruptWatcher() {
    if (!m_thread.joinable()) return;
    sigaction(SIGINT, &m_previousInt, nullptr);
    sigaction(SIGTERM, &m_previousTerm, nullptr);
    const unsigned char stop = 0;
    [[maybe_unused]] const ssize_t written = ::write(g_pipe[1], &stop, 1);
    m_thread.join();
    ::close(g_pipe[0]);
    ::close(g_pipe[1]);
    g_pipe[0] = g_pipe[1] = -1;
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
