#include "app/session/environment_spec.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "agent/env/browser/browser_environment.h"
#include "agent/env/desktop/desktop_environment.h"
#include "agent/env/portal/portal_environment.h"
#include "agent/env/wayland/wayland_desktop_environment.h"
#include "app/session/data_paths.h"

namespace iris::app {
namespace fs = std::filesystem;

Result<std::pair<int, int>> parseSize(const std::string& text) {
    int width = 0, height = 0;
    char x = 0, extra = 0;
    if (std::sscanf(text.c_str(), "%d%c%d%c", &width, &x, &height, &extra) != 3 || x != 'x' ||
        width < 16 || height < 16 || width > 8192 || height > 8192) {
        return Status::invalidArgument("'" + text + "' is not a size like 1280x800");
    }
    return std::pair{width, height};
}

std::string environmentText(const EnvironmentSpec& spec) {
    switch (spec.kind) {
        case EnvironmentSpec::Kind::WebProject:
            return "web:" + spec.location;
        case EnvironmentSpec::Kind::Url:
            return "url:" + spec.location;
        case EnvironmentSpec::Kind::Desktop: {
            std::string text = "desktop";
            if (spec.protocol == EnvironmentSpec::Protocol::X11) text = "desktop:x11";
            if (spec.protocol == EnvironmentSpec::Protocol::Wayland) text = "desktop:wayland";
            if (spec.protocol == EnvironmentSpec::Protocol::Portal) text = "desktop:portal";
            if (spec.monitor) text += "@" + std::to_string(*spec.monitor);
            return text;
        }
        case EnvironmentSpec::Kind::PrivateDesktop:
            break;
    }
    return spec.protocol == EnvironmentSpec::Protocol::Wayland ? "desktop:private-wayland"
                                                               : "desktop:private";
}

EnvironmentSpec::Protocol sessionDesktopProtocol() {
    const char* waylandDisplay = std::getenv("WAYLAND_DISPLAY");
    const char* sessionType = std::getenv("XDG_SESSION_TYPE");
    if ((waylandDisplay == nullptr || *waylandDisplay == '\0') &&
        (sessionType == nullptr || std::string_view(sessionType) != "wayland")) {
        return EnvironmentSpec::Protocol::X11;
    }
    // XDG_CURRENT_DESKTOP is a colon-separated list ("ubuntu:GNOME", "KDE").
    const char* desktops = std::getenv("XDG_CURRENT_DESKTOP");
    const std::string_view names = desktops != nullptr ? desktops : "";
    if (names.find("GNOME") != std::string_view::npos ||
        names.find("KDE") != std::string_view::npos)
        return EnvironmentSpec::Protocol::Portal;
    return EnvironmentSpec::Protocol::Wayland;
}

Result<EnvironmentSpec> parseEnvironmentSpec(const std::string& text) {
    EnvironmentSpec spec;
    if (text.starts_with("web:")) {
        spec.kind = EnvironmentSpec::Kind::WebProject;
        std::error_code error;
        const fs::path folder = fs::canonical(text.substr(4), error);
        if (error || !fs::is_directory(folder))
            return Status::notFound("--env " + text + ": no such project folder");
        spec.location = folder.string();
    } else if (text.starts_with("url:")) {
        spec.kind = EnvironmentSpec::Kind::Url;
        spec.location = text.substr(4);
        if (spec.location.empty()) return Status::invalidArgument("--env url: needs a URL");
    } else if (const std::string desktop = text.substr(0, text.find('@'));
               desktop == "desktop" || desktop == "desktop:x11" || desktop == "desktop:wayland" ||
               desktop == "desktop:portal") {
        spec.kind = EnvironmentSpec::Kind::Desktop;
        if (desktop == "desktop:x11") spec.protocol = EnvironmentSpec::Protocol::X11;
        if (desktop == "desktop:wayland") spec.protocol = EnvironmentSpec::Protocol::Wayland;
        if (desktop == "desktop:portal") spec.protocol = EnvironmentSpec::Protocol::Portal;
        if (desktop.size() < text.size()) {
            const std::string number = text.substr(desktop.size() + 1);
            int monitor = -1;
            const auto [end, error] =
                std::from_chars(number.data(), number.data() + number.size(), monitor);
            if (number.empty() || error != std::errc() || end != number.data() + number.size() ||
                monitor < 0 || monitor > 63) {
                return Status::invalidArgument("--env " + text + ": '@" + number +
                                               "' is not a monitor number (0 = leftmost)");
            }
            spec.monitor = monitor;
        }
    } else if (text == "desktop:private" || text == "desktop:private-wayland") {
        spec.kind = EnvironmentSpec::Kind::PrivateDesktop;
        spec.width = 1920;
        spec.height = 1080;
        spec.protocol = text == "desktop:private" ? EnvironmentSpec::Protocol::X11
                                                  : EnvironmentSpec::Protocol::Wayland;
    } else {
        return Status::invalidArgument(
            "--env '" + text +
            "': expected web:DIR, url:URL, desktop, desktop:x11, desktop:wayland, "
            "desktop:portal (each of these four may end in @N, monitor N from the left), "
            "desktop:private or desktop:private-wayland");
    }
    return spec;
}

namespace {

// A made environment of any kind as the interface, or why it could not be made.
template <class Made>
Result<std::unique_ptr<agent::Environment>> asEnvironment(Result<std::unique_ptr<Made>> made) {
    if (!made) return made.status();
    return std::unique_ptr<agent::Environment>(std::move(*made));
}

}  // namespace

Result<std::unique_ptr<agent::Environment>> makeEnvironment(const EnvironmentSpec& spec) {
    switch (spec.kind) {
        case EnvironmentSpec::Kind::WebProject:
        case EnvironmentSpec::Kind::Url: {
            agent::BrowserOptions options;
            options.startUrl = spec.location;
            options.viewportWidth = spec.width;
            options.viewportHeight = spec.height;
            Result<std::unique_ptr<agent::BrowserEnvironment>> browser =
                agent::BrowserEnvironment::create(options);
            return asEnvironment(std::move(browser));
        }
        case EnvironmentSpec::Kind::Desktop:
        case EnvironmentSpec::Kind::PrivateDesktop: {
            const bool isPrivate = spec.kind == EnvironmentSpec::Kind::PrivateDesktop;
            EnvironmentSpec::Protocol protocol = spec.protocol;
            if (protocol == EnvironmentSpec::Protocol::Automatic) {
                protocol = isPrivate ? EnvironmentSpec::Protocol::X11 : sessionDesktopProtocol();
            }
            if (protocol == EnvironmentSpec::Protocol::Portal) {
                // The token that spares the consent dialog next time; for the process's life.
                static agent::FileRestoreTokenStore tokens(portalRestoreTokenPath());
                agent::PortalEnvironmentOptions options;
                options.monitor = spec.monitor;
                Result<std::unique_ptr<agent::PortalEnvironment>> desktop =
                    agent::PortalEnvironment::open(QDBusConnection::sessionBus(), &tokens, options);
                return asEnvironment(std::move(desktop));
            }
            if (protocol == EnvironmentSpec::Protocol::Wayland) {
                agent::WaylandDesktopOptions options;
                options.privateCompositor = isPrivate;
                options.width = spec.width;
                options.height = spec.height;
                options.output = spec.monitor;
                Result<std::unique_ptr<agent::WaylandDesktopEnvironment>> desktop =
                    agent::WaylandDesktopEnvironment::create(options);
                return asEnvironment(std::move(desktop));
            }
            agent::DesktopOptions options;
            options.privateDisplay = isPrivate;
            options.width = spec.width;
            options.height = spec.height;
            options.monitor = spec.monitor;
            Result<std::unique_ptr<agent::DesktopEnvironment>> desktop =
                agent::DesktopEnvironment::create(options);
            return asEnvironment(std::move(desktop));
        }
    }
    return Status::internal("unknown environment kind");
}

}  // namespace iris::app
