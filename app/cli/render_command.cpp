// iris render DIR|FILE|URL --out FILE.png [--viewport WxH] [--full-page]: a deterministic
// screenshot of a page, as the agent's browser sees it (how resources/demo/target.png was made).
#include <fstream>
#include <iostream>

#include <QApplication>

#include "agent/env/browser/browser_environment.h"
#include "agent/image_codec.h"
#include "app/cli/agent_commands.h"
#include "app/cli/agent_session.h"
#include "app/cli/arguments.h"
#include "app/session/browser_application.h"
#include "app/session/environment_spec.h"

namespace iris::app {
namespace {

constexpr OptionSpec kRenderOptions[] = {
    {"out", "o", true, "PNG file to write (required)"},
    {"viewport", "", true, "viewport size (default 1280x800)"},
    {"full-page", "", false, "capture the whole document, not just the viewport"},
    {"help", "h", false, "show this help"},
};

}  // namespace

int runRender(int argc, char** argv) {
    Result<Arguments> args = Arguments::parse(argc, argv, kRenderOptions);
    if (!args) {
        std::cerr << "iris render: " << args.status().message() << '\n';
        return kExitUsage;
    }
    if (args->has("help")) {
        std::cout << "Usage: iris render DIR|FILE|URL --out FILE.png [options]\n\n"
                  << Arguments::usage(kRenderOptions);
        return 0;
    }
    const std::optional<std::string> out = args->value("out");
    if (args->positional().size() != 1 || !out) {
        std::cerr << "iris render: give one page (a folder, an HTML file or a URL) and --out\n";
        return kExitUsage;
    }
    agent::BrowserOptions options;
    options.startUrl = args->positional()[0];
    if (std::optional<std::string> viewport = args->value("viewport")) {
        Result<std::pair<int, int>> size = parseSize(*viewport);
        if (!size) {
            std::cerr << "iris render: --viewport: " << size.status().message() << '\n';
            return kExitUsage;
        }
        options.viewportWidth = size->first;
        options.viewportHeight = size->second;
    }

    std::unique_ptr<QApplication> application = makeBrowserApplication(argc, argv);
    auto render = [&]() -> Result<std::shared_ptr<const agent::EncodedImage>> {
        Result<std::unique_ptr<agent::BrowserEnvironment>> browser =
            agent::BrowserEnvironment::create(options);
        IRIS_RETURN_IF_ERROR(browser.status());
        IRIS_RETURN_IF_ERROR((*browser)->reset());
        if (args->has("full-page")) {
            Result<cv::Mat> page = (*browser)->fullPageScreenshot();
            IRIS_RETURN_IF_ERROR(page.status());
            return agent::encodePng(*page);
        }
        Result<agent::Observation> observation = (*browser)->observe();
        IRIS_RETURN_IF_ERROR(observation.status());
        return agent::encodePng(observation->screenshot);
    };
    const Result<std::shared_ptr<const agent::EncodedImage>> png = render();
    if (!png) {
        std::cerr << "iris render: " << options.startUrl << ": " << png.status().message() << '\n';
        return kExitError;
    }
    std::ofstream file(*out, std::ios::binary);
    file.write(reinterpret_cast<const char*>((*png)->bytes.data()),
               std::streamsize((*png)->bytes.size()));
    if (!file.flush()) {
        std::cerr << "iris render: cannot write " << *out << '\n';
        return kExitError;
    }
    std::cout << *out << ": " << (*png)->width << "x" << (*png)->height << '\n';
    return 0;
}

}  // namespace iris::app
