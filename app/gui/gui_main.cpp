#include "app/gui/gui_main.h"

#include <QApplication>
#include <QIcon>

#include "app/build_info.h"
#include "app/gui/main_window.h"

// rcc's initialiser sits in the static library iris_app; calling it keeps the linker from
// dropping the resources. Q_INIT_RESOURCE must be used outside any namespace.
static void initIrisResources() {
    Q_INIT_RESOURCE(resources);
}

namespace iris::app {

int runGui(int argc, char** argv) {
    QApplication application(argc, argv);
    initIrisResources();
    QApplication::setApplicationName(QStringLiteral("Iris"));
    QApplication::setApplicationVersion(QString::fromLatin1(kVersion));
    QApplication::setOrganizationName(QStringLiteral("Iris"));
    QApplication::setDesktopFileName(QStringLiteral("iris"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/iris/icons/iris.svg")));

    MainWindow window;
    window.show();
    return QApplication::exec();
}

}  // namespace iris::app
