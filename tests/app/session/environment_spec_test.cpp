// --env's desktop forms: the protocol each names, their recorded text, and which desktop plain
// "desktop" means in a session.
#include "app/session/environment_spec.h"

#include <cstdlib>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace iris::app {
namespace {

using Kind = EnvironmentSpec::Kind;
using Protocol = EnvironmentSpec::Protocol;

TEST(EnvironmentSpecTest, DesktopFormsNameTheirProtocolAndRoundTrip) {
    struct Form {
        std::string text;
        Kind kind;
        Protocol protocol;
    };
    const Form forms[] = {
        {"desktop", Kind::Desktop, Protocol::Automatic},
        {"desktop:x11", Kind::Desktop, Protocol::X11},
        {"desktop:wayland", Kind::Desktop, Protocol::Wayland},
        {"desktop:portal", Kind::Desktop, Protocol::Portal},
        {"desktop:private", Kind::PrivateDesktop, Protocol::X11},
        {"desktop:private-wayland", Kind::PrivateDesktop, Protocol::Wayland},
        {"desktop@1", Kind::Desktop, Protocol::Automatic},
        {"desktop:x11@0", Kind::Desktop, Protocol::X11},
        {"desktop:wayland@2", Kind::Desktop, Protocol::Wayland},
        {"desktop:portal@1", Kind::Desktop, Protocol::Portal},
    };
    for (const Form& form : forms) {
        SCOPED_TRACE(form.text);
        Result<EnvironmentSpec> spec = parseEnvironmentSpec(form.text);
        ASSERT_TRUE(spec) << spec.status().message();
        EXPECT_EQ(spec->kind, form.kind);
        EXPECT_EQ(spec->protocol, form.protocol);
        EXPECT_EQ(environmentText(*spec), form.text);
    }
    EXPECT_FALSE(parseEnvironmentSpec("desktop").value().monitor.has_value());
    EXPECT_EQ(parseEnvironmentSpec("desktop:portal@1").value().monitor, 1);
    for (const char* bad : {"desktop@", "desktop@-1", "desktop@x", "desktop@1x", "desktop@64",
                            "desktop:private@1", "desktop:mir@0"}) {
        SCOPED_TRACE(bad);
        Result<EnvironmentSpec> spec = parseEnvironmentSpec(bad);
        ASSERT_FALSE(spec);
        EXPECT_NE(spec.status().message().find(bad), std::string::npos) << spec.status().message();
    }
    Result<EnvironmentSpec> privateWayland = parseEnvironmentSpec("desktop:private-wayland");
    EXPECT_EQ(privateWayland->width, 1920);
    Result<EnvironmentSpec> unknown = parseEnvironmentSpec("desktop:mir");
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.status().message().find("desktop:private-wayland"), std::string::npos);
}

// Sets environment variables for one test and restores them afterwards.
class ScopedVariable {
public:
    ScopedVariable(const char* name, const char* value) : m_name(name) {
        if (const char* old = std::getenv(name)) m_old = old;
        if (value != nullptr) {
            ::setenv(name, value, 1);
        } else {
            ::unsetenv(name);
        }
    }
    ~ScopedVariable() {
        if (m_old) {
            ::setenv(m_name, m_old->c_str(), 1);
        } else {
            ::unsetenv(m_name);
        }
    }

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

TEST(EnvironmentSpecTest, TheSessionsDesktopIsWaylandWhenItSaysSo) {
    ScopedVariable desktop("XDG_CURRENT_DESKTOP", "sway");
    {
        ScopedVariable display("WAYLAND_DISPLAY", "wayland-0");
        ScopedVariable type("XDG_SESSION_TYPE", nullptr);
        EXPECT_EQ(sessionDesktopProtocol(), Protocol::Wayland);
    }
    {
        ScopedVariable display("WAYLAND_DISPLAY", nullptr);
        ScopedVariable type("XDG_SESSION_TYPE", "wayland");
        EXPECT_EQ(sessionDesktopProtocol(), Protocol::Wayland);
    }
    {
        ScopedVariable display("WAYLAND_DISPLAY", "");
        ScopedVariable type("XDG_SESSION_TYPE", "x11");
        EXPECT_EQ(sessionDesktopProtocol(), Protocol::X11);
    }
}

// GNOME's and KDE's compositors offer clients neither screen copies nor virtual input: there
// the session's desktop is reached through the portal.
TEST(EnvironmentSpecTest, GnomeAndKdeWaylandSessionsUseThePortal) {
    ScopedVariable display("WAYLAND_DISPLAY", "wayland-0");
    for (const char* names : {"GNOME", "ubuntu:GNOME", "KDE"}) {
        ScopedVariable desktop("XDG_CURRENT_DESKTOP", names);
        EXPECT_EQ(sessionDesktopProtocol(), Protocol::Portal) << names;
    }
    ScopedVariable desktop("XDG_CURRENT_DESKTOP", "Hyprland");
    EXPECT_EQ(sessionDesktopProtocol(), Protocol::Wayland);
    ScopedVariable noWayland("WAYLAND_DISPLAY", nullptr);
    ScopedVariable type("XDG_SESSION_TYPE", "x11");
    ScopedVariable gnomeOnX11("XDG_CURRENT_DESKTOP", "GNOME");
    EXPECT_EQ(sessionDesktopProtocol(), Protocol::X11);
}

// desktop:portal with no session bus to ask: the portal environment's error, naming what is
// missing (tested in depth against a fake portal in tests/agent/env/portal).
TEST(EnvironmentSpecTest, DesktopPortalWithoutASessionBusSaysWhatIsMissing) {
    ScopedVariable bus("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/iris-test-bus");
    Result<std::unique_ptr<agent::Environment>> environment =
        makeEnvironment(*parseEnvironmentSpec("desktop:portal"));
    ASSERT_FALSE(environment);
    EXPECT_NE(environment.status().message().find("D-Bus session bus"), std::string::npos)
        << environment.status().message();
}

TEST(EnvironmentSpecTest, PlainDesktopOnWaylandUsesTheWaylandEnvironment) {
    // No compositor behind the name: the error is the Wayland environment's, naming the socket.
    ScopedVariable desktop("XDG_CURRENT_DESKTOP", "sway");
    ScopedVariable display("WAYLAND_DISPLAY", "/nonexistent/iris-test-wayland-socket");
    Result<std::unique_ptr<agent::Environment>> environment =
        makeEnvironment(*parseEnvironmentSpec("desktop"));
    ASSERT_FALSE(environment);
    EXPECT_NE(environment.status().message().find("Wayland compositor at "
                                                  "'/nonexistent/iris-test-wayland-socket'"),
              std::string::npos)
        << environment.status().message();
}

}  // namespace
}  // namespace iris::app
