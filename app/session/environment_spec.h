#pragma once
// Where an agent session acts, as the command line's --env names it and sessions record it, and
// the environment made from that.
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "agent/environment.h"
#include "base/status.h"

namespace iris::app {

// "web:DIR" (a web project: the browser shows DIR/index.html and the agent may edit DIR's
// files), "url:URL" (a page, no files), "desktop" (this session's desktop: X11, a wlroots
// Wayland compositor or GNOME/KDE through the portal, see sessionDesktopProtocol),
// "desktop:x11" / "desktop:wayland" / "desktop:portal" (that one), "desktop:private" (a private
// Xvfb display of the given size), "desktop:private-wayland" (a private headless sway). A live
// desktop form may end in "@N": observe and act on monitor N only, counted from the left from 0
// (for the portal, among the monitors the person shared).
struct EnvironmentSpec {
    enum class Kind { WebProject, Url, Desktop, PrivateDesktop };
    // Desktops only. Wayland: a wlroots compositor's own protocols (screencopy, virtual input);
    // Portal: xdg-desktop-portal's RemoteDesktop and ScreenCast (GNOME, KDE).
    enum class Protocol { Automatic, X11, Wayland, Portal };
    Kind kind = Kind::WebProject;
    std::string location;  // the folder or URL
    int width = 1280;      // viewport, or the private display's size
    int height = 800;
    Protocol protocol = Protocol::Automatic;  // a private desktop is X11 unless it says Wayland
    // Live desktops: the monitor ("@N"). Unset: every monitor in one picture (X11's whole
    // screen, Wayland's output layout, all the monitors shared through the portal).
    std::optional<int> monitor = std::nullopt;
};

// The desktop this process runs in: on Wayland ($WAYLAND_DISPLAY set or $XDG_SESSION_TYPE
// "wayland"), Portal when $XDG_CURRENT_DESKTOP names GNOME or KDE (their compositors offer no
// screen copies or virtual input to clients), else Wayland; X11 otherwise.
EnvironmentSpec::Protocol sessionDesktopProtocol();

// A web project's folder must exist; it is kept canonical. Errors name the text as --env.
Result<EnvironmentSpec> parseEnvironmentSpec(const std::string& text);
// The --env form of `spec` (a web project by its canonical folder), as sessions record it.
std::string environmentText(const EnvironmentSpec& spec);
Result<std::pair<int, int>> parseSize(const std::string& text);  // "1280x800"

// The environment for `spec` (a browser environment lives on the calling Qt thread, which needs
// a QApplication: see browser_application.h).
Result<std::unique_ptr<agent::Environment>> makeEnvironment(const EnvironmentSpec& spec);

}  // namespace iris::app
