#include "agent/env/wayland/sway_compositor.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace iris::agent {
namespace fs = std::filesystem;
namespace {

using std::chrono::milliseconds;

// The user sway runs as when Iris is root (see the header); nullopt: run as ourselves.
struct RunAs {
    uid_t uid;
    gid_t gid;
};
std::optional<RunAs> unprivilegedUser() {
    if (::geteuid() != 0) return std::nullopt;
    const passwd* nobody = ::getpwnam("nobody");
    if (nobody == nullptr) return RunAs{65534, 65534};
    return RunAs{nobody->pw_uid, nobody->pw_gid};
}

// True when a Wayland (or IPC) server accepts connections on the socket at `path`.
bool accepts(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof(address.sun_path)) {
        ::close(fd);
        return false;
    }
    path.copy(address.sun_path, path.size());
    bool connected =
        ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
    ::close(fd);
    return connected;
}

// The logical size sway gives an output: the mode over the scale, rotated.
int logicalWidth(const SwayOutputOptions& output) {
    bool sideways = output.transform == 90 || output.transform == 270;
    return static_cast<int>(std::lround((sideways ? output.height : output.width) / output.scale));
}

std::string formatScale(double scale) {
    std::ostringstream text;
    text << scale;
    return text.str();
}

}  // namespace

Result<std::unique_ptr<SwayCompositor>> SwayCompositor::start(const SwayOptions& options) {
    Result<std::string> sway = findExecutable("sway");
    if (!sway) return Status::notFound("sway not found; install the sway package");
    if (options.outputs.empty()) return Status::invalidArgument("sway: at least one output");
    for (const SwayOutputOptions& output : options.outputs) {
        if (output.width < 16 || output.height < 16 ||
            !(output.scale >= 0.5 && output.scale <= 4) || output.transform % 90 != 0 ||
            output.transform < 0 || output.transform > 270) {
            return Status::invalidArgument("sway: output " + std::to_string(output.width) + "x" +
                                           std::to_string(output.height) + " scale " +
                                           formatScale(output.scale) + " transform " +
                                           std::to_string(output.transform) + " is not valid");
        }
    }
    std::unique_ptr<SwayCompositor> result(new SwayCompositor());
    std::string pattern = (fs::temp_directory_path() / "iris-sway-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        return Status::ioError("sway: cannot create a runtime folder under " +
                               fs::temp_directory_path().string());
    }
    result->m_runtimeDir = pattern;
    result->m_ipcPath = pattern + "/sway-ipc.sock";
    IRIS_RETURN_IF_ERROR(result->writeConfig(options));
    std::optional<RunAs> runAs = unprivilegedUser();
    if (runAs && ::chown(pattern.c_str(), runAs->uid, runAs->gid) != 0) {
        return Status::ioError("sway: cannot hand " + pattern + " to the user nobody");
    }

    int log = ::open((pattern + "/sway.log").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    SpawnOptions spawn;
    if (runAs) {
        Result<std::string> setpriv = findExecutable("setpriv");
        if (!setpriv) {
            ::close(log);
            return Status::notFound(
                "sway refuses to run as root and setpriv (util-linux) is not installed to start "
                "it as the user nobody");
        }
        spawn.argv = {*setpriv, "--reuid=" + std::to_string(runAs->uid),
                      "--regid=" + std::to_string(runAs->gid), "--clear-groups", "--"};
    }
    spawn.argv.insert(spawn.argv.end(), {*sway, "-c", pattern + "/config"});
    const bool nested = !options.hostDisplay.empty();
    const std::string outputCount = std::to_string(options.outputs.size());
    spawn.environment = {"XDG_RUNTIME_DIR=" + pattern, "WLR_RENDERER=pixman",
                         "WLR_LIBINPUT_NO_DEVICES=1",
                         nested ? "WLR_BACKENDS=wayland" : "WLR_BACKENDS=headless",
                         (nested ? "WLR_WL_OUTPUTS=" : "WLR_HEADLESS_OUTPUTS=") + outputCount,
                         // Not nested into the caller's session unless asked; the IPC socket at a
                         // known place (sway would take an inherited $SWAYSOCK as its own).
                         "WAYLAND_DISPLAY=" + options.hostDisplay,
                         "DISPLAY=", "SWAYSOCK=" + pattern + "/sway-ipc.sock"};
    spawn.outputFd = log;
    Result<std::unique_ptr<ChildProcess>> server = ChildProcess::spawn(spawn);
    if (log >= 0) ::close(log);
    if (!server) return server.status().withContext("sway: ");
    result->m_server = std::move(*server);
    IRIS_RETURN_IF_ERROR(result->waitForSockets(options.startTimeout));
    return result;
}

Status SwayCompositor::writeConfig(const SwayOptions& options) const {
    std::ofstream config(m_runtimeDir + "/config");
    // Windows fill their output exactly (no borders, titles or gaps), focus moves only when
    // asked, and no Xwayland (not needed, and often not installed).
    config << "xwayland disable\n"
              "default_border none\n"
              "default_floating_border none\n"
              "focus_follows_mouse no\n"
              "mouse_warping none\n";
    int x = 0;
    for (std::size_t i = 0; i < options.outputs.size(); ++i) {
        const SwayOutputOptions& output = options.outputs[i];
        config << "output HEADLESS-" << i + 1 << " mode " << output.width << "x" << output.height
               << " scale " << formatScale(output.scale) << " transform "
               << (output.flipped ? (output.transform == 0 ? "flipped" : "flipped-") : "")
               << (output.flipped && output.transform == 0 ? "" : std::to_string(output.transform))
               << " position " << x << " 0\n";
        x += logicalWidth(output);
    }
    config.close();
    if (!config) return Status::ioError("sway: cannot write " + m_runtimeDir + "/config");
    ::chmod((m_runtimeDir + "/config").c_str(), 0644);  // readable by the user sway runs as
    return Status::ok();
}

Status SwayCompositor::waitForSockets(milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!m_server->running()) {
            return Status::ioError("sway " +
                                   describeWaitStatus(m_server->waitStatus().value_or(0)) +
                                   " before it was ready" + logTail());
        }
        std::error_code error;
        for (const fs::directory_entry& entry : fs::directory_iterator(m_runtimeDir, error)) {
            std::string name = entry.path().filename().string();
            if (!entry.is_socket(error)) continue;
            if (name.starts_with("wayland-")) m_socketPath = entry.path().string();
        }
        // The IPC socket opens after the Wayland one, once the config has been read.
        if (!m_socketPath.empty() && accepts(m_socketPath) && accepts(m_ipcPath)) {
            return Status::ok();
        }
        std::this_thread::sleep_for(milliseconds(20));
    }
    return Status::ioError("sway did not open its sockets in " + m_runtimeDir + " within " +
                           std::to_string(timeout.count()) + " ms" + logTail());
}

SwayCompositor::~SwayCompositor() {
    if (m_server) m_server->stop();
    std::error_code ignored;
    if (!m_runtimeDir.empty()) fs::remove_all(m_runtimeDir, ignored);
}

std::vector<std::string> SwayCompositor::clientEnvironment() const {
    return {"WAYLAND_DISPLAY=" + m_socketPath, "XDG_RUNTIME_DIR=" + m_runtimeDir,
            "SWAYSOCK=" + m_ipcPath};
}

Status SwayCompositor::command(const std::string& swayCommand) {
    Result<std::string> swaymsg = findExecutable("swaymsg");
    if (!swaymsg) return Status::notFound("swaymsg not found; install the sway package");
    SpawnOptions spawn;
    spawn.argv = {*swaymsg, "-s", m_ipcPath, "--", swayCommand};
    Result<std::unique_ptr<ChildProcess>> child = ChildProcess::spawn(spawn);
    if (!child) return child.status().withContext("swaymsg: ");
    auto deadline = std::chrono::steady_clock::now() + milliseconds(10000);
    while ((*child)->running()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return Status::ioError("swaymsg '" + swayCommand + "' did not finish within 10 s");
        }
        std::this_thread::sleep_for(milliseconds(10));
    }
    int status = (*child)->waitStatus().value_or(-1);
    if (status != 0) {
        return Status::ioError("swaymsg '" + swayCommand + "' " + describeWaitStatus(status));
    }
    return Status::ok();
}

std::string SwayCompositor::logTail() const {
    std::ifstream in(m_runtimeDir + "/sway.log");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.size() > 2000) text.erase(0, text.size() - 2000);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text.empty() ? std::string() : "; sway said: " + text;
}

}  // namespace iris::agent
