#include "app/session/browser_application.h"

#include <cstdlib>

#include <unistd.h>

#include <QApplication>

#include "agent/env/browser/browser_environment.h"

namespace iris::app {

std::unique_ptr<QApplication> makeBrowserApplication(int& argc, char** argv) {
    const bool hasDisplay = std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY");
    if (!hasDisplay && !std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    if (geteuid() == 0) setenv("QTWEBENGINE_DISABLE_SANDBOX", "1", 0);
    agent::BrowserEnvironment::prepareProcess();
    return std::make_unique<QApplication>(argc, argv);
}

}  // namespace iris::app
