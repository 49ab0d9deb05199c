// GoogleTest main for the browser environment: the deterministic-rendering process settings go
// in before the QApplication exists, as they must in the app.
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
