// iris-sample-desktop SCENE --state FILE: one window of a small desktop program for the bundled
// desktop tasks (resources/desktop-tasks). The window covers the primary screen from its top-left
// corner (on sway it is the output's only tiled window; on a bare X server it is placed there),
// so a widget is at the same screen pixel on X11 and Wayland. FILE holds the scene's state as a
// JSON object, rewritten at every change, the first time once the window has been painted (a task
// waits for the file before the agent looks).
#include <cstdio>
#include <iostream>

#include <QApplication>
#include <QCommandLineParser>
#include <QFile>
#include <QJsonDocument>
#include <QPaintEvent>
#include <QScreen>
#include <QStyleFactory>
#include <QTimer>

#include "app/sample_desktop/sample_scenes.h"

namespace {

// Writes the latest state, atomically (the evaluator may read it at any moment), once shown.
// Changes are written once per turn of the event loop, without fsync: a file synced at every
// keystroke made the program fall seconds behind its input on a busy machine.
class StateFile final {
public:
    explicit StateFile(QString path) : m_path(std::move(path)) {}

    void report(const QJsonObject& state) {
        m_state = state;
        scheduleWrite();
    }
    void shown() {
        if (m_shown) return;
        m_shown = true;
        scheduleWrite();
    }

private:
    void scheduleWrite() {
        if (!m_shown || m_writePending) return;
        m_writePending = true;
        QTimer::singleShot(0, [this] {
            m_writePending = false;
            write();
        });
    }
    void write() const {
        const QString temporary = m_path + QStringLiteral(".new");
        QFile file(temporary);
        const bool written = file.open(QIODevice::WriteOnly | QIODevice::Truncate) &&
                             file.write(QJsonDocument(m_state).toJson()) >= 0 && file.flush();
        file.close();
        if (!written || std::rename(QFile::encodeName(temporary).constData(),
                                    QFile::encodeName(m_path).constData()) != 0)
            std::cerr << "iris-sample-desktop: cannot write " << m_path.toStdString() << '\n';
    }

    QString m_path;
    QJsonObject m_state;
    bool m_shown = false;
    bool m_writePending = false;
};

class SceneWindow final : public QWidget {
public:
    explicit SceneWindow(StateFile& state) : m_state(state) {}

protected:
    void paintEvent(QPaintEvent* event) override {
        QWidget::paintEvent(event);
        // After this frame has gone out to the display server.
        QTimer::singleShot(0, this, [this] { m_state.shown(); });
    }

private:
    StateFile& m_state;
};

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QFont font(QStringLiteral("DejaVu Sans"));
    font.setPixelSize(16);
    QApplication::setFont(font);

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("A small desktop program for Iris's desktop tasks. Scenes: ") +
        iris::sample::sceneNames());
    parser.addHelpOption();
    parser.addPositionalArgument(QStringLiteral("scene"), QStringLiteral("the scene to show"));
    const QCommandLineOption stateOption(QStringLiteral("state"),
                                         QStringLiteral("where to keep the state (JSON)"),
                                         QStringLiteral("FILE"));
    parser.addOption(stateOption);
    parser.process(app);
    if (parser.positionalArguments().size() != 1 || !parser.isSet(stateOption)) {
        std::cerr << "usage: iris-sample-desktop SCENE --state FILE (scenes: "
                  << iris::sample::sceneNames().toStdString() << ")\n";
        return 2;
    }
    const QString scene = parser.positionalArguments().front();
    StateFile state(parser.value(stateOption));
    SceneWindow window(state);
    window.setWindowTitle(QStringLiteral("Iris sample: ") + scene);
    window.setGeometry(QGuiApplication::primaryScreen()->geometry());
    if (!iris::sample::buildScene(scene, &window,
                                  [&state](const QJsonObject& s) { state.report(s); })) {
        std::cerr << "iris-sample-desktop: unknown scene '" << scene.toStdString()
                  << "' (scenes: " << iris::sample::sceneNames().toStdString() << ")\n";
        return 2;
    }
    window.show();
    return QApplication::exec();
}
