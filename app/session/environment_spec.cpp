#include "app/session/environment_spec.h"

#include <cstdio>
#include <filesystem>

#include "agent/env/browser/browser_environment.h"
#include "agent/env/desktop/desktop_environment.h"

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
        case EnvironmentSpec::Kind::Desktop:
            return "desktop";
        case EnvironmentSpec::Kind::PrivateDesktop:
            break;
    }
    return "desktop:private";
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
    } else if (text == "desktop") {
        spec.kind = EnvironmentSpec::Kind::Desktop;
    } else if (text == "desktop:private") {
        spec.kind = EnvironmentSpec::Kind::PrivateDesktop;
        spec.width = 1920;
        spec.height = 1080;
    } else {
        return Status::invalidArgument("--env '" + text +
                                       "': expected web:DIR, url:URL, desktop or desktop:private");
    }
    return spec;
}

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
            if (!browser) return browser.status();
            return std::unique_ptr<agent::Environment>(std::move(*browser));
        }
        case EnvironmentSpec::Kind::Desktop:
        case EnvironmentSpec::Kind::PrivateDesktop: {
            agent::DesktopOptions options;
            options.privateDisplay = spec.kind == EnvironmentSpec::Kind::PrivateDesktop;
            options.width = spec.width;
            options.height = spec.height;
            Result<std::unique_ptr<agent::DesktopEnvironment>> desktop =
                agent::DesktopEnvironment::create(options);
            if (!desktop) return desktop.status();
            return std::unique_ptr<agent::Environment>(std::move(*desktop));
        }
    }
    return Status::internal("unknown environment kind");
}

}  // namespace iris::app
