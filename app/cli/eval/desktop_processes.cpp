#include "app/cli/eval/desktop_processes.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <string_view>

namespace iris::app::eval {
namespace {

namespace ev = agent::eval;

// X11 clients that talk to the X server only; what does their job on the private sway.
struct X11Tool {
    std::string_view name;
    std::string_view instead;
};
constexpr std::array<X11Tool, 8> kX11Tools = {{
    {"xdotool", "swaymsg (windows, focus) or the agent's own input"},
    {"wmctrl", "swaymsg '[title=\"...\"] focus' or -t get_tree"},
    {"xclip", "wl-copy / wl-paste (wl-clipboard)"},
    {"xsel", "wl-copy / wl-paste (wl-clipboard)"},
    {"xprop", "swaymsg -t get_tree"},
    {"xwininfo", "swaymsg -t get_tree"},
    {"xrandr", "swaymsg -t get_outputs"},
    {"xdpyinfo", "swaymsg -t get_outputs"},
}};

// The program a command starts: its first word, without a folder.
std::string programOf(const ev::CommandSpec& command) {
    std::string first;
    if (command.shell && !command.text.empty()) {
        const std::string_view text = command.text;
        const std::size_t start = text.find_first_not_of(" \t\n");
        if (start == std::string_view::npos) return {};
        first = std::string(text.substr(start, text.find_first_of(" \t\n;|&", start) - start));
    } else if (!command.argv.empty()) {
        first = command.argv.front();
    }
    return std::filesystem::path(first).filename().string();
}

// `text` as a PCRE pattern that matches it literally (sway's criteria are regular expressions).
std::string literalPattern(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (std::string_view("\\^$.|?*+()[]{}\"").find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

}  // namespace

DesktopProcesses DesktopProcesses::x11(const std::string& display) {
    DesktopProcesses out;
    out.kind = Kind::X11;
    out.set = {{"DISPLAY", display},
               {"QT_QPA_PLATFORM", "xcb"},
               {"GDK_BACKEND", "x11"},
               {"XDG_SESSION_TYPE", "x11"}};
    out.unset = {"WAYLAND_DISPLAY"};
    return out;
}

DesktopProcesses DesktopProcesses::wayland(const std::vector<std::string>& clientEnvironment) {
    DesktopProcesses out;
    out.kind = Kind::Wayland;
    for (const std::string& assignment : clientEnvironment) {
        const std::size_t equals = assignment.find('=');
        if (equals != std::string::npos)
            out.set.emplace_back(assignment.substr(0, equals), assignment.substr(equals + 1));
    }
    out.set.insert(out.set.end(), {{"QT_QPA_PLATFORM", "wayland"},
                                   {"GDK_BACKEND", "wayland"},
                                   {"XDG_SESSION_TYPE", "wayland"}});
    out.unset = {"DISPLAY"};
    return out;
}

QProcessEnvironment processEnvironment(const DesktopProcesses& desktop) {
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    for (const std::string& name : desktop.unset)
        environment.remove(QString::fromStdString(name));
    for (const auto& [name, value] : desktop.set)
        environment.insert(QString::fromStdString(name), QString::fromStdString(value));
    return environment;
}

Status checkToolFits(const ev::CommandSpec& command, const DesktopProcesses& desktop) {
    if (desktop.kind != DesktopProcesses::Kind::Wayland) return Status::ok();
    const std::string program = programOf(command);
    const auto tool = std::find_if(kX11Tools.begin(), kX11Tools.end(),
                                   [&](const X11Tool& t) { return t.name == program; });
    if (tool == kX11Tools.end()) return Status::ok();
    return Status::unsupported(program +
                               " is an X11 tool and the private Wayland desktop has no X server "
                               "(no Xwayland); use " +
                               std::string(tool->instead) +
                               " there, or run the task with --env desktop:private");
}

ev::CommandSpec activateWindowCommand(const DesktopProcesses& desktop, const std::string& name,
                                      bool byClass, bool strict) {
    ev::CommandSpec command;
    if (desktop.kind == DesktopProcesses::Kind::Wayland) {
        // Native Wayland windows have an app_id where X11 ones have a class.
        const std::string pattern =
            strict ? "^" + literalPattern(name) + "$" : literalPattern(name);
        command.argv = {"swaymsg", "[" + std::string(byClass ? "app_id" : "title") + "=\"" +
                                       pattern + "\"] focus"};
        return command;
    }
    command.argv = {"wmctrl"};
    if (byClass) command.argv.push_back("-x");
    command.argv.push_back(strict ? "-F" : "-a");
    if (strict) command.argv.push_back("-a");
    command.argv.push_back(name);
    return command;
}

}  // namespace iris::app::eval
