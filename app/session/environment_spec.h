#pragma once
// Where an agent session acts, as the command line's --env names it and sessions record it, and
// the environment made from that.
#include <memory>
#include <string>
#include <utility>

#include "agent/environment.h"
#include "base/status.h"

namespace iris::app {

// "web:DIR" (a web project: the browser shows DIR/index.html and the agent may edit DIR's
// files), "url:URL" (a page, no files), "desktop" (this session's desktop: Wayland or X11, see
// sessionDesktopProtocol), "desktop:x11" / "desktop:wayland" (that one), "desktop:private" (a
// private Xvfb display of the given size), "desktop:private-wayland" (a private headless sway).
struct EnvironmentSpec {
    enum class Kind { WebProject, Url, Desktop, PrivateDesktop };
    enum class Protocol { Automatic, X11, Wayland };  // desktops only
    Kind kind = Kind::WebProject;
    std::string location;  // the folder or URL
    int width = 1280;      // viewport, or the private display's size
    int height = 800;
    Protocol protocol = Protocol::Automatic;  // a private desktop is X11 unless it says Wayland
};

// The desktop this process runs in: Wayland when $WAYLAND_DISPLAY is set or $XDG_SESSION_TYPE
// is "wayland", else X11.
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
