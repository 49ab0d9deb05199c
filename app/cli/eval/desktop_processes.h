#pragma once
// How the commands of a desktop task (launch, execute, open, activate_window steps and the
// command getters) reach the task's private desktop: the environment variables that put a
// program on that X display or Wayland compositor and off any other, and the X11-only tools
// that cannot work on Wayland (refused with a message saying so and what to use instead).
#include <string>
#include <utility>
#include <vector>

#include <QProcessEnvironment>

#include "agent/eval/task.h"
#include "base/status.h"

namespace iris::app::eval {

struct DesktopProcesses {
    enum class Kind { None, X11, Wayland };
    Kind kind = Kind::None;  // None: commands run with this process's own environment
    std::vector<std::pair<std::string, std::string>> set;  // added or replaced
    std::vector<std::string> unset;                        // removed

    // DISPLAY=`display`; Qt and GTK programs on X11 even when this process runs offscreen or
    // under Wayland.
    static DesktopProcesses x11(const std::string& display);
    // `clientEnvironment` ("WAYLAND_DISPLAY=...", "XDG_RUNTIME_DIR=...", "SWAYSOCK=..."), with
    // Qt and GTK programs on Wayland and no DISPLAY (the private sway has no Xwayland).
    static DesktopProcesses wayland(const std::vector<std::string>& clientEnvironment);
};

// This process's environment changed as `desktop` says.
QProcessEnvironment processEnvironment(const DesktopProcesses& desktop);

// Unsupported when `command` starts an X11-only tool (xdotool, wmctrl, xclip, ...) on a Wayland
// desktop, naming the tool and what works there instead; OK otherwise.
Status checkToolFits(const agent::eval::CommandSpec& command, const DesktopProcesses& desktop);

// The command that focuses a window by title (or class) on this desktop: wmctrl on X11, swaymsg
// on the private sway. `strict` matches the whole title, else a part of it.
agent::eval::CommandSpec activateWindowCommand(const DesktopProcesses& desktop,
                                               const std::string& name, bool byClass, bool strict);

}  // namespace iris::app::eval
