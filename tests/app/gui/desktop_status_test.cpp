// The status bar's statement of the desktop path and the global stop key (desktop_status.h):
// the text for every path and stop-key state, written out by hand, what arming the key says where
// there is no desktop at all (the offscreen test platform, no DISPLAY), and on a Wayland session
// the key bound through the fake GlobalShortcuts portal (tests/agent/env/portal/fake_portal.cpp)
// on a private session bus, its presses reaching the callback.
#include "app/gui/desktop_status.h"

#include <cstdlib>
#include <functional>

#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QDBusConnection>
#include <QDBusConnectionInterface>
#include <QDBusMessage>
#include <QLabel>
#include <QProcess>
#include <QThread>

#include "tests/agent/env/portal/private_session_bus.h"

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
    EXPECT_EQ(
        textOf(Protocol::Wayland, StopKey::PortalBound, "Ctrl+Alt+."),
        QStringLiteral(
            "Desktop: Wayland, wlroots (capture ext-image-copy-capture or "
            "wlr-screencopy, input virtual pointer and keyboard) \u00b7 global stop key Ctrl+Alt+. "
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
              QStringLiteral("Desktop: Wayland, wlroots (capture ext-image-copy-capture or "
                             "wlr-screencopy, input virtual pointer and keyboard) \u00b7 no global "
                             "stop key: Wayland lets no "
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

// Runs the event loop until `done` or 30 s (a loaded machine is slow; nothing asserts on time).
bool spinUntil(const std::function<bool()>& done) {
    for (int waited = 0; waited < 30000 && !done(); waited += 10) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
        QThread::msleep(10);
    }
    return done();
}

TEST(DesktopStatus, OnWaylandTheKeyIsBoundThroughTheGlobalShortcutsPortal) {
    agent::testing::PrivateSessionBus daemon;
    if (!daemon.start()) GTEST_SKIP() << "dbus-daemon is not installed";
    const QString address = daemon.address();
    // GlobalStopKey uses the session bus: this process's, from here on the private one.
    ::setenv("DBUS_SESSION_BUS_ADDRESS", address.toUtf8().constData(), 1);
    ::setenv("WAYLAND_DISPLAY", "wayland-test", 1);  // a Wayland session; no compositor needed
    ::unsetenv("XDG_CURRENT_DESKTOP");
    QProcess portal;
    portal.setProcessChannelMode(QProcess::ForwardedChannels);
    portal.start(QStringLiteral(IRIS_FAKE_PORTAL), {});
    ASSERT_TRUE(portal.waitForStarted(30000));
    QDBusConnection bus = QDBusConnection::sessionBus();
    ASSERT_TRUE(spinUntil([&] {
        return bus.interface()
            ->isServiceRegistered(QStringLiteral("org.freedesktop.portal.Desktop"))
            .value();
    }));

    QLabel label;
    int presses = 0;
    {
        GlobalStopKey key(&label, [&] { ++presses; });
        key.arm();
        ASSERT_TRUE(spinUntil([&] { return key.facts().stopKey == StopKey::PortalBound; }))
            << label.text().toStdString();
        EXPECT_EQ(
            label.text(),
            QStringLiteral(
                "Desktop: Wayland, wlroots (capture ext-image-copy-capture "
                "or wlr-screencopy, input virtual pointer and keyboard) \u00b7 global stop key "
                "CTRL+ALT+period (GlobalShortcuts portal)"));
        QDBusMessage press = QDBusMessage::createMethodCall(
            QStringLiteral("org.freedesktop.portal.Desktop"),
            QStringLiteral("/org/freedesktop/portal/desktop"),
            QStringLiteral("org.iris.test.FakePortal"), QStringLiteral("ActivateShortcut"));
        press << QStringLiteral("stop");
        bus.call(press);
        EXPECT_TRUE(spinUntil([&] { return presses == 1; }));
    }
    portal.kill();
    portal.waitForFinished(30000);
    ::unsetenv("WAYLAND_DISPLAY");
}

}  // namespace
}  // namespace iris::app
