// GoogleTest main for tests that render web pages (the browser environment, the GUI): headless
// unless the caller chose a Qt platform, Chromium's sandbox off (it refuses to start as root,
// which CI is), and the deterministic-rendering settings applied before the QApplication exists,
// as `iris` applies them.
#include <gtest/gtest.h>

#include <QApplication>

#include "agent/env/browser/browser_environment.h"

int main(int argc, char** argv) {
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    if (!qEnvironmentVariableIsSet("QTWEBENGINE_DISABLE_SANDBOX")) {
        qputenv("QTWEBENGINE_DISABLE_SANDBOX", "1");
    }
    ::testing::InitGoogleTest(&argc, argv);
    iris::agent::BrowserEnvironment::prepareProcess();
    QApplication application(argc, argv);
    return RUN_ALL_TESTS();
}
