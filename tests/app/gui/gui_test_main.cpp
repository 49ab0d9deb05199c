// GoogleTest main for the GUI tests: a QApplication on the offscreen platform (unless the caller
// chose one), prepared for Qt WebEngine the way `iris gui` prepares it.
#include <gtest/gtest.h>

#include <QApplication>

#include "agent/env/browser/browser_environment.h"

int main(int argc, char** argv) {
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    // Chromium refuses to start as root with its sandbox on (CI runs as root).
    if (!qEnvironmentVariableIsSet("QTWEBENGINE_DISABLE_SANDBOX"))
        qputenv("QTWEBENGINE_DISABLE_SANDBOX", "1");
    iris::agent::BrowserEnvironment::prepareProcess();
    ::testing::InitGoogleTest(&argc, argv);
    QApplication application(argc, argv);
    return RUN_ALL_TESTS();
}
