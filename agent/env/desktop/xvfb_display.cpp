#include "agent/env/desktop/xvfb_display.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/env/desktop/x_connection.h"

namespace iris::agent {
namespace {

// Closes a file descriptor on every path.
class Fd {
public:
    explicit Fd(int fd = -1) : m_fd(fd) {}
    ~Fd() { reset(); }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return m_fd; }
    int release() { return std::exchange(m_fd, -1); }
    void reset() {
        if (m_fd >= 0) ::close(m_fd);
        m_fd = -1;
    }

private:
    int m_fd;
};

// The last lines Xvfb wrote, for an error message.
std::string logTail(int fd) {
    if (fd < 0) return {};
    off_t size = ::lseek(fd, 0, SEEK_END);
    if (size <= 0) return {};
    off_t start = size > 2000 ? size - 2000 : 0;
    std::string text(static_cast<std::size_t>(size - start), '\0');
    ssize_t got = ::pread(fd, text.data(), text.size(), start);
    text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text.empty() ? std::string() : "; Xvfb said: " + text;
}

// Xvfb writes the display number and a newline to the -displayfd pipe once it accepts clients.
Result<int> readDisplayNumber(int fd, ChildProcess& server, std::chrono::milliseconds timeout,
                              int logFd) {
    std::string text;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (text.find('\n') == std::string::npos) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return Status::ioError("Xvfb did not report a display within " +
                                   std::to_string(timeout.count()) + " ms" + logTail(logFd));
        }
        pollfd request{fd, POLLIN, 0};
        int ready = ::poll(&request, 1, static_cast<int>(std::min<long long>(left.count(), 100)));
        if (ready < 0 && errno != EINTR) {
            return Status::ioError(std::string("poll on Xvfb's display pipe: ") +
                                   std::strerror(errno));
        }
        if (ready > 0) {
            char buffer[32];
            ssize_t got = ::read(fd, buffer, sizeof(buffer));
            if (got > 0) {
                text.append(buffer, static_cast<std::size_t>(got));
                continue;
            }
            if (got == 0) {  // every writer closed: Xvfb is gone
                server.stop(std::chrono::milliseconds(500));
                std::string how = server.waitStatus() ? describeWaitStatus(*server.waitStatus())
                                                      : std::string("exited");
                return Status::ioError("Xvfb " + how + " before it was ready" + logTail(logFd));
            }
        }
        if (!server.running()) {
            return Status::ioError("Xvfb " + describeWaitStatus(*server.waitStatus()) +
                                   " before it was ready" + logTail(logFd));
        }
    }
    try {
        std::size_t used = 0;
        int number = std::stoi(text, &used);
        if (number >= 0 && used > 0) return number;
    } catch (const std::exception&) {
    }
    return Status::corrupt("Xvfb wrote '" + text + "' to -displayfd, not a display number");
}

// One RandR 1.5 monitor per column. The first takes over Xvfb's output (an output belongs to one
// monitor), so RandR lists exactly these monitors.
Status declareMonitors(XConnection& connection, const std::vector<Monitor>& monitors) {
    Display* display = connection.display();
    int eventBase = 0;
    int errorBase = 0;
    int major = 0;
    int minor = 0;
    if (!XRRQueryExtension(display, &eventBase, &errorBase) ||
        !XRRQueryVersion(display, &major, &minor) || (major == 1 && minor < 5)) {
        return Status::unsupported("Xvfb has no RandR 1.5, which several monitors need");
    }
    XRRScreenResources* resources = XRRGetScreenResources(display, connection.root());
    RROutput output = 0;
    if (resources != nullptr) {
        if (resources->noutput > 0) output = resources->outputs[0];
        XRRFreeScreenResources(resources);
    }
    for (std::size_t i = 0; i < monitors.size(); ++i) {
        XRRMonitorInfo* info = XRRAllocateMonitor(display, i == 0 && output != 0 ? 1 : 0);
        std::string name = "IRIS-" + std::to_string(i + 1);
        info->name = XInternAtom(display, name.c_str(), False);
        info->primary = i == 0 ? True : False;
        info->automatic = False;
        info->x = monitors[i].x;
        info->y = monitors[i].y;
        info->width = monitors[i].width;
        info->height = monitors[i].height;
        // Physical size at 96 dpi, which is what Xvfb reports for its screen.
        info->mwidth = monitors[i].width * 254 / 960;
        info->mheight = monitors[i].height * 254 / 960;
        if (i == 0 && output != 0) info->outputs[0] = output;
        XRRSetMonitor(display, connection.root(), info);
        XRRFreeMonitors(info);
    }
    return connection.sync("declaring RandR monitors");
}

struct WindowManagerCandidate {
    const char* program;
    std::vector<std::string> arguments;
};

}  // namespace

Result<std::unique_ptr<XvfbDisplay>> XvfbDisplay::start(const XvfbOptions& options) {
    if (options.width < 16 || options.height < 16 || options.monitors < 1 || options.monitors > 8 ||
        options.width > 8192 || options.height > 8192) {
        return Status::invalidArgument("XvfbOptions: " + std::to_string(options.monitors) +
                                       " monitors of " + std::to_string(options.width) + "x" +
                                       std::to_string(options.height) +
                                       " (each side 16..8192, 1..8 monitors)");
    }
    Result<std::string> program = findExecutable("Xvfb");
    if (!program) return Status::notFound("Xvfb not found; install the xvfb package");

    std::unique_ptr<XvfbDisplay> result(new XvfbDisplay());
    result->m_logFd = ::memfd_create("iris-xvfb-log", MFD_CLOEXEC);
    if (result->m_logFd < 0) {
        return Status::ioError(std::string("memfd_create for Xvfb's log: ") + std::strerror(errno));
    }
    int pipeFds[2];
    if (::pipe2(pipeFds, O_CLOEXEC) != 0) {
        return Status::ioError(std::string("pipe for -displayfd: ") + std::strerror(errno));
    }
    Fd readEnd(pipeFds[0]);
    Fd writeEnd(pipeFds[1]);

    int totalWidth = options.width * options.monitors;
    SpawnOptions spawn;
    spawn.argv = {*program, "-displayfd", std::to_string(writeEnd.get()), "-screen", "0",
                  std::to_string(totalWidth) + "x" + std::to_string(options.height) + "x24", "-dpi",
                  "96", "-nolisten", "tcp",
                  // No access control on this private server only: it is reachable through its
                  // local socket alone, and the agent's children need no cookie.
                  "-ac", "-noreset"};
    spawn.outputFd = result->m_logFd;
    spawn.keepFds = {writeEnd.get()};
    Result<std::unique_ptr<ChildProcess>> server = ChildProcess::spawn(spawn);
    if (!server) return server.status();
    result->m_server = std::move(*server);
    writeEnd.reset();  // only Xvfb holds it now, so EOF means Xvfb has gone

    Result<int> number =
        readDisplayNumber(readEnd.get(), *result->m_server, options.startTimeout, result->m_logFd);
    if (!number) return number.status();
    result->m_number = *number;
    result->m_name = ":" + std::to_string(*number);

    for (int i = 0; i < options.monitors; ++i) {
        result->m_monitors.push_back({i * options.width, 0, options.width, options.height});
    }
    {
        Result<std::unique_ptr<XConnection>> connection = XConnection::open(result->m_name);
        if (!connection) return connection.status().withContext("Xvfb " + result->m_name + ": ");
        if (options.monitors > 1) {
            IRIS_RETURN_IF_ERROR(declareMonitors(**connection, result->m_monitors));
        }
    }

    if (options.windowManager) {
        const std::vector<WindowManagerCandidate> candidates = {
            {"openbox", {"--sm-disable"}},
            {"twm", {}},
        };
        for (const WindowManagerCandidate& candidate : candidates) {
            Result<std::string> path = findExecutable(candidate.program);
            if (!path) continue;
            SpawnOptions wm;
            wm.argv = {*path};
            wm.argv.insert(wm.argv.end(), candidate.arguments.begin(), candidate.arguments.end());
            wm.environment = {"DISPLAY=" + result->m_name};
            Result<std::unique_ptr<ChildProcess>> started = ChildProcess::spawn(wm);
            // A display without a window manager still works; only the first found is tried.
            if (started) result->m_windowManager = std::move(*started);
            break;
        }
    }
    return result;
}

std::string XvfbDisplay::windowManager() const {
    return m_windowManager ? m_windowManager->name() : std::string();
}

XvfbDisplay::~XvfbDisplay() {
    if (m_windowManager) m_windowManager->stop(std::chrono::milliseconds(1000));
    if (m_server) m_server->stop(std::chrono::milliseconds(3000));
    if (m_logFd >= 0) ::close(m_logFd);
}

}  // namespace iris::agent
