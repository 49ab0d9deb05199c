// What the commands of a desktop task see (desktop_processes.h): the private desktop's display or
// Wayland socket and nothing of another one, X11-only tools refused on Wayland by name, and the
// window-activation command of each desktop.
#include "app/cli/eval/desktop_processes.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "app/cli/eval/eval_context.h"

namespace iris::app::eval {
namespace {

namespace ev = agent::eval;

ev::CommandSpec shell(const std::string& text) {
    ev::CommandSpec command;
    command.shell = true;
    command.text = text;
    return command;
}

// The variables a started program sees, as "DISPLAY|WAYLAND_DISPLAY|XDG_RUNTIME_DIR|QT_QPA".
std::string seenBy(const DesktopProcesses& desktop) {
    Result<ev::CommandOutput> output = runProcess(
        shell("printf '%s|%s|%s|%s' \"$DISPLAY\" \"$WAYLAND_DISPLAY\" \"$XDG_RUNTIME_DIR\" "
              "\"$QT_QPA_PLATFORM\""),
        desktop, 30);
    EXPECT_TRUE(output) << output.status().message();
    return output ? output->out : std::string();
}

TEST(DesktopProcesses, CommandsSeeOnlyTheirOwnDesktop) {
    // This process as a test runner has it: an offscreen Qt and some other display.
    ::setenv("DISPLAY", ":99", 1);
    ::setenv("WAYLAND_DISPLAY", "wayland-9", 1);
    ::setenv("XDG_RUNTIME_DIR", "/run/user/0", 1);
    ::setenv("QT_QPA_PLATFORM", "offscreen", 1);
    EXPECT_EQ(seenBy(DesktopProcesses::x11(":37")), ":37||/run/user/0|xcb");
    EXPECT_EQ(seenBy(DesktopProcesses::wayland({"WAYLAND_DISPLAY=/tmp/iris-sway-x/wayland-1",
                                                "XDG_RUNTIME_DIR=/tmp/iris-sway-x",
                                                "SWAYSOCK=/tmp/iris-sway-x/ipc.sock"})),
              "|/tmp/iris-sway-x/wayland-1|/tmp/iris-sway-x|wayland");
    EXPECT_EQ(seenBy(DesktopProcesses{}), ":99|wayland-9|/run/user/0|offscreen");
}

TEST(DesktopProcesses, X11ToolsAreRefusedOnWaylandByName) {
    const DesktopProcesses wayland = DesktopProcesses::wayland({"WAYLAND_DISPLAY=w"});
    ev::CommandSpec xdotool;
    xdotool.argv = {"/usr/bin/xdotool", "getactivewindow", "getwindowname"};
    const Status refused = checkToolFits(xdotool, wayland);
    EXPECT_EQ(refused.code(), StatusCode::Unsupported);
    EXPECT_NE(refused.message().find("xdotool is an X11 tool"), std::string::npos)
        << refused.message();
    const Status clipboard = checkToolFits(shell("  xclip -o -selection clipboard | cat"), wayland);
    EXPECT_NE(clipboard.message().find("wl-paste"), std::string::npos) << clipboard.message();
    // The same tools on X11, and Wayland's own tools on Wayland, run.
    EXPECT_TRUE(checkToolFits(xdotool, DesktopProcesses::x11(":1")).isOk());
    EXPECT_TRUE(checkToolFits(shell("swaymsg -t get_tree"), wayland).isOk());
    // runProcess refuses before starting anything.
    EXPECT_EQ(runProcess(xdotool, wayland, 30).status().code(), StatusCode::Unsupported);
}

TEST(DesktopProcesses, WindowsAreActivatedWithEachDesktopsTool) {
    const DesktopProcesses wayland = DesktopProcesses::wayland({});
    EXPECT_EQ(activateWindowCommand(wayland, "Iris sample: form", false, true).argv,
              (std::vector<std::string>{"swaymsg", "[title=\"^Iris sample: form$\"] focus"}));
    EXPECT_EQ(activateWindowCommand(wayland, "a.b(\"c\")", true, false).argv,
              (std::vector<std::string>{"swaymsg", "[app_id=\"a\\.b\\(\\\"c\\\"\\)\"] focus"}));
    EXPECT_EQ(activateWindowCommand(DesktopProcesses::x11(":1"), "Notes", false, true).argv,
              (std::vector<std::string>{"wmctrl", "-F", "-a", "Notes"}));
    EXPECT_EQ(activateWindowCommand(DesktopProcesses::x11(":1"), "gedit", true, false).argv,
              (std::vector<std::string>{"wmctrl", "-x", "-a", "gedit"}));
}

}  // namespace
}  // namespace iris::app::eval
