#include "app/gui/gui_main.h"

#include <cstdio>

#include <QApplication>
#include <QIcon>

#include "app/build_info.h"
#include "app/gui/main_window.h"
#include "app/session/browser_application.h"
#include "app/session/engine_sharing.h"

// rcc's initialiser sits in the static library iris_app_gui; calling it keeps the linker from
// dropping the resources. Q_INIT_RESOURCE must be used outside any namespace.
static void initIrisResources() {
    Q_INIT_RESOURCE(resources);
}

namespace iris::app {

int runGui(int argc, char** argv) {
    // Without any display Qt would abort with a plugin error; say what to do instead.
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
        qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        std::fputs(
            "iris: no display (DISPLAY and WAYLAND_DISPLAY are not set). Run Iris in a desktop\n"
            "session, under xvfb-run, or with QT_QPA_PLATFORM=offscreen; 'iris --help' lists the\n"
            "subcommands that need no display.\n",
            stderr);
        return 1;
    }
    const std::unique_ptr<QApplication> application = makeBrowserApplication(argc, argv);
    initIrisResources();
    QApplication::setApplicationName(QStringLiteral("Iris"));
    QApplication::setApplicationVersion(QString::fromLatin1(kVersion));
    QApplication::setOrganizationName(QStringLiteral("Iris"));
    QApplication::setDesktopFileName(QStringLiteral("iris"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/iris/icons/iris.svg")));

    // A local model's engine is offered to, or taken from, other Iris processes
    // (app/session/engine_sharing.h) unless the settings say otherwise.
    configureEngineSharing({"gui", {}});
    MainWindow window;
    window.show();
    return QApplication::exec();
}

}  // namespace iris::app
