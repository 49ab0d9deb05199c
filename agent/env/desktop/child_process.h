#pragma once
// A child process started without a shell (posix_spawn) in its own process group, so that
// stopping it also stops what it started. Owned: the destructor stops and reaps it.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "base/status.h"

namespace iris::agent {

struct SpawnOptions {
    std::vector<std::string> argv;  // argv[0]: a path, or a name looked up on PATH
    // "NAME=value" entries that replace (or add to) the parent's environment.
    std::vector<std::string> environment;
    int outputFd = -1;         // the child's stdout and stderr; -1 = /dev/null
    std::vector<int> keepFds;  // inherited under the same number (close-on-exec cleared)
};

class ChildProcess final {
public:
    static Result<std::unique_ptr<ChildProcess>> spawn(const SpawnOptions& options);
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const { return m_pid; }
    const std::string& name() const { return m_name; }

    // False once the process has exited (it is then reaped).
    bool running();
    // The waitpid status once it has exited.
    std::optional<int> waitStatus() const { return m_waitStatus; }

    // SIGTERM to the process group, SIGKILL to it after `grace`; reaps the child. Idempotent.
    void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));

private:
    ChildProcess(pid_t pid, std::string name) : m_pid(pid), m_name(std::move(name)) {}
    bool exitedWithoutReaping();

    pid_t m_pid;
    std::string m_name;
    std::optional<int> m_waitStatus;
};

// The executable `name` resolves to on $PATH (or `name` itself when it contains a '/').
Result<std::string> findExecutable(std::string_view name);

// "exited with status 1", "killed by signal 9".
std::string describeWaitStatus(int status);

}  // namespace iris::agent
