#pragma once
// A private headless sway for the agent (and the tests): wlroots' headless backend with the pixman
// renderer (no GPU, no display, no input devices), its outputs declared in a generated config, and
// a private XDG_RUNTIME_DIR (0700) that holds its sockets. The destructor stops sway and removes
// the folder.
//
// sway refuses to run as root (it checks that root cannot be regained), so as root it is started
// under the unprivileged user "nobody" with setpriv, in a folder that user owns; root clients can
// still connect to its sockets.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "agent/env/desktop/child_process.h"
#include "base/status.h"

namespace iris::agent {

struct SwayOutputOptions {
    int width = 1280;  // the mode, physical pixels
    int height = 800;
    double scale = 1.0;
    int transform =
        0;  // degrees clockwise as sway's `output transform` takes them: 0, 90, 180, 270
    bool flipped = false;  // mirrored, then turned ("flipped-90")
};

struct SwayOptions {
    // HEADLESS-1, HEADLESS-2, ... left to right in this order, top edges aligned.
    std::vector<SwayOutputOptions> outputs = {SwayOutputOptions{}};
    // When set, sway runs as a client of this compositor (wlroots' wayland backend) instead of
    // headless: its outputs WL-1, WL-2, ... are windows there, sized by that compositor, and
    // closing one unplugs the output. The tests unplug outputs this way (sway 1.7 cannot
    // disable or remove a headless output).
    std::string hostDisplay;
    std::chrono::milliseconds startTimeout{15000};
};

class SwayCompositor final {
public:
    // Errors: NotFound "sway not found; install the sway package"; IoError with sway's own log
    // when it exits or does not open its socket in time.
    static Result<std::unique_ptr<SwayCompositor>> start(const SwayOptions& options);
    ~SwayCompositor();
    SwayCompositor(const SwayCompositor&) = delete;
    SwayCompositor& operator=(const SwayCompositor&) = delete;

    // The Wayland socket's absolute path: usable as $WAYLAND_DISPLAY.
    const std::string& socketPath() const { return m_socketPath; }
    const std::string& runtimeDir() const { return m_runtimeDir; }
    // WAYLAND_DISPLAY, XDG_RUNTIME_DIR and SWAYSOCK for programs started on it.
    std::vector<std::string> clientEnvironment() const;
    // False once sway has exited.
    bool running() { return m_server->running(); }
    // Runs one sway command through swaymsg ("output HEADLESS-1 disable").
    Status command(const std::string& swayCommand);
    // The last lines of sway's log, for error messages.
    std::string logTail() const;

private:
    SwayCompositor() = default;
    Status writeConfig(const SwayOptions& options) const;
    Status waitForSockets(std::chrono::milliseconds timeout);

    std::unique_ptr<ChildProcess> m_server;
    std::string m_runtimeDir;
    std::string m_socketPath;
    std::string m_ipcPath;
};

}  // namespace iris::agent
