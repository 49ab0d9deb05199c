#include "agent/env/desktop/child_process.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;  // NOLINT: POSIX declares it nowhere else

namespace iris::agent {
namespace {

std::string errnoText(int error) {
    return std::strerror(error);
}

bool isExecutableFile(const std::string& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
}

// The parent's environment with `overrides` replacing entries of the same name.
std::vector<std::string> childEnvironment(const std::vector<std::string>& overrides) {
    std::vector<std::string> result;
    auto nameOf = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        std::string_view current(*entry);
        bool replaced = false;
        for (const std::string& override : overrides) {
            if (nameOf(override) == nameOf(current)) replaced = true;
        }
        if (!replaced) result.emplace_back(current);
    }
    result.insert(result.end(), overrides.begin(), overrides.end());
    return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> result;
    result.reserve(strings.size() + 1);
    for (std::string& s : strings)
        result.push_back(s.data());
    result.push_back(nullptr);
    return result;
}

// posix_spawn's attribute and file-action objects, destroyed on every path.
struct SpawnSetup {
    posix_spawnattr_t attributes{};
    posix_spawn_file_actions_t actions{};
    SpawnSetup() {
        posix_spawnattr_init(&attributes);
        posix_spawn_file_actions_init(&actions);
    }
    ~SpawnSetup() {
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attributes);
    }
    SpawnSetup(const SpawnSetup&) = delete;
    SpawnSetup& operator=(const SpawnSetup&) = delete;
};

}  // namespace

Result<std::string> findExecutable(std::string_view name) {
    if (name.empty()) return Status::invalidArgument("empty program name");
    std::string program(name);
    if (program.find('/') != std::string::npos) {
        if (isExecutableFile(program)) return program;
        return Status::notFound(program + " is not an executable file");
    }
    const char* path = std::getenv("PATH");
    std::string_view directories = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
    while (!directories.empty()) {
        std::size_t colon = directories.find(':');
        std::string_view directory = directories.substr(0, colon);
        directories =
            colon == std::string_view::npos ? std::string_view() : directories.substr(colon + 1);
        std::string candidate =
            (directory.empty() ? std::string(".") : std::string(directory)) + "/" + program;
        if (isExecutableFile(candidate)) return candidate;
    }
    return Status::notFound(program + " not found on PATH");
}

std::string describeWaitStatus(int status) {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
    return "stopped";
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::spawn(const SpawnOptions& options) {
    if (options.argv.empty()) return Status::invalidArgument("spawn: empty command line");
    Result<std::string> program = findExecutable(options.argv.front());
    if (!program) return program.status();

    SpawnSetup setup;
    // Its own process group, default signal handling and an empty signal mask: the parent may
    // ignore SIGPIPE or block signals for its threads, and children must not inherit that.
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int signal : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGQUIT}) {
        sigaddset(&defaults, signal);
    }
    sigset_t emptyMask;
    sigemptyset(&emptyMask);
    posix_spawnattr_setsigdefault(&setup.attributes, &defaults);
    posix_spawnattr_setsigmask(&setup.attributes, &emptyMask);
    posix_spawnattr_setpgroup(&setup.attributes, 0);
    posix_spawnattr_setflags(
        &setup.attributes,
        static_cast<short>(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK));

    posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    if (options.outputFd >= 0) {
        posix_spawn_file_actions_adddup2(&setup.actions, options.outputFd, STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&setup.actions, options.outputFd, STDERR_FILENO);
    } else {
        posix_spawn_file_actions_addopen(&setup.actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&setup.actions, STDOUT_FILENO, STDERR_FILENO);
    }
    // dup2 onto itself clears close-on-exec (glibc >= 2.29), so only these fds are inherited.
    for (int fd : options.keepFds)
        posix_spawn_file_actions_adddup2(&setup.actions, fd, fd);

    std::vector<std::string> argv = options.argv;
    std::vector<std::string> environment = childEnvironment(options.environment);
    std::vector<char*> argvPointers = pointers(argv);
    std::vector<char*> environmentPointers = pointers(environment);
    pid_t pid = 0;
    int error = posix_spawn(&pid, program->c_str(), &setup.actions, &setup.attributes,
                            argvPointers.data(), environmentPointers.data());
    if (error != 0) {
        return Status::ioError("cannot start " + *program + ": " + errnoText(error));
    }
    return std::unique_ptr<ChildProcess>(new ChildProcess(pid, options.argv.front()));
}

ChildProcess::~ChildProcess() {
    stop();
}

bool ChildProcess::exitedWithoutReaping() {
    siginfo_t info{};
    // WNOWAIT keeps the zombie, so the pid (and the process group id) cannot be reused while
    // the rest of the group is killed.
    if (::waitid(P_PID, static_cast<id_t>(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        return errno == ECHILD;
    }
    return info.si_pid == m_pid;
}

bool ChildProcess::running() {
    if (m_waitStatus) return false;
    if (!exitedWithoutReaping()) return true;
    ::kill(-m_pid, SIGKILL);  // whatever it left behind in its group
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
    m_waitStatus = status;
    return false;
}

void ChildProcess::stop(std::chrono::milliseconds grace) {
    if (m_waitStatus) return;
    ::kill(-m_pid, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (!exitedWithoutReaping() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // The leader is a zombie or still running; either way its group id is still reserved.
    ::kill(-m_pid, SIGKILL);
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
    m_waitStatus = status;
}

}  // namespace iris::agent
