#pragma once
// A private X server (Xvfb) for the agent: a display number Xvfb picks itself (-displayfd), one
// screen of depth 24, monitors side by side declared as RandR 1.5 monitors, no TCP, and an
// optional window manager. The destructor stops everything it started and reaps it.
//
// Several monitors are one wide screen with RandR monitors on it: Debian 12's Xvfb places every
// `+xinerama -screen` at the origin (they overlap), so that layout cannot be used.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "agent/env/desktop/child_process.h"
#include "agent/env/desktop/monitor.h"
#include "base/status.h"

namespace iris::agent {

struct XvfbOptions {
    int width = 1920;  // of each monitor, device pixels
    int height = 1080;
    int monitors = 1;  // side by side, left to right
    // Starts the first installed of openbox and twm. Off by default: everything here is tested
    // without a window manager, and a managed window's placement and focus are the WM's.
    bool windowManager = false;
    std::chrono::milliseconds startTimeout{15000};
};

class XvfbDisplay final {
public:
    // Errors: NotFound "Xvfb not found; install the xvfb package"; IoError with Xvfb's own
    // output when it fails to start.
    static Result<std::unique_ptr<XvfbDisplay>> start(const XvfbOptions& options);
    ~XvfbDisplay();
    XvfbDisplay(const XvfbDisplay&) = delete;
    XvfbDisplay& operator=(const XvfbDisplay&) = delete;

    const std::string& name() const { return m_name; }  // ":N", for $DISPLAY
    int number() const { return m_number; }
    pid_t serverPid() const { return m_server->pid(); }
    const std::vector<Monitor>& monitors() const { return m_monitors; }
    // The window manager's program name, or empty when none was started.
    std::string windowManager() const;
    // False once the X server has exited.
    bool running() { return m_server->running(); }

private:
    XvfbDisplay() = default;

    std::unique_ptr<ChildProcess> m_server;
    std::unique_ptr<ChildProcess> m_windowManager;
    std::string m_name;
    int m_number = -1;
    std::vector<Monitor> m_monitors;
    int m_logFd = -1;
};

}  // namespace iris::agent
