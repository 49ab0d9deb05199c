// The status bar's statement of the desktop path and the global stop key (desktop_status.h):
// the text for every path and stop-key state, written out by hand, and what arming the key
// says where there is no desktop at all (the offscreen test platform, no DISPLAY).
#include "app/gui/desktop_status.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include <QLabel>

namespace iris::app {
namespace {

using Protocol = EnvironmentSpec::Protocol;
using StopKey = DesktopStatusFacts::StopKey;

QString textOf(Protocol path, StopKey key, const char* detail) {
    return desktopStatusText(DesktopStatusFacts{path, key, detail});
}

TEST(DesktopStatus, NamesTheCaptureAndInputPathOfEachDesktop) {
    EXPECT_EQ(textOf(Protocol::X11, StopKey::Grabbed, "Ctrl+Alt+."),
              QStringLiteral("Desktop: X11 (capture XGetImage, input XTest) \u00b7 global stop "
                             "key Ctrl+Alt+. (an X11 grab)"));
    EXPECT_EQ(textOf(Protocol::Wayland, StopKey::PortalBound, "Ctrl+Alt+."),
              QStringLiteral("Desktop: Wayland, wlroots (capture wlr-screencopy, input virtual "
                             "pointer and keyboard) \u00b7 global stop key Ctrl+Alt+. "
                             "(GlobalShortcuts portal)"));
    EXPECT_EQ(textOf(Protocol::Portal, StopKey::PortalPending, "Ctrl+Alt+."),
              QStringLiteral("Desktop: Wayland through xdg-desktop-portal (capture ScreenCast "
                             "over PipeWire, input RemoteDesktop) \u00b7 global stop key "
                             "Ctrl+Alt+.: waiting for the desktop to confirm it (GlobalShortcuts "
                             "portal)"));
}

TEST(DesktopStatus, SaysWhyThereIsNoGlobalStopKey) {
    EXPECT_EQ(textOf(Protocol::Wayland, StopKey::Unavailable,
                     "Wayland lets no program grab keys, and no xdg-desktop-portal on the "
                     "session bus"),
              QStringLiteral("Desktop: Wayland, wlroots (capture wlr-screencopy, input virtual "
                             "pointer and keyboard) \u00b7 no global stop key: Wayland lets no "
                             "program grab keys, and no xdg-desktop-portal on the session bus; "
                             "Ctrl+. stops the agent from an Iris window"));
}

TEST(DesktopStatus, ArmingWithoutAnyDesktopSaysSoInTheLabel) {
    // The test platform is offscreen; without these nothing names a desktop.
    ::unsetenv("DISPLAY");
    ::unsetenv("WAYLAND_DISPLAY");
    ::unsetenv("XDG_SESSION_TYPE");
    QLabel label;
    int presses = 0;
    GlobalStopKey key(&label, [&] { ++presses; });
    key.arm();
    EXPECT_EQ(key.facts().stopKey, StopKey::Unavailable);
    EXPECT_EQ(label.text(),
              QStringLiteral("Desktop: none (no X11 or Wayland session; browser sessions only) "
                             "\u00b7 no global stop key: no desktop to grab it on; Ctrl+. stops "
                             "the agent from an Iris window"));
    EXPECT_EQ(presses, 0);
}

}  // namespace
}  // namespace iris::app
