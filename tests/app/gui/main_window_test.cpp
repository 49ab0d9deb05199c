#include "app/gui/main_window.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSet>
#include <QStatusBar>
#include <QTest>
#include <QTimer>

#include "agent/recording/session_store.h"
#include "app/gui/agent_panel.h"
#include "app/gui/agent_runner.h"
#include "app/gui/session_library.h"
#include "app/session/model_choice.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

QStringList menuTitles(const QMenuBar* bar) {
    QStringList titles;
    for (const QAction* action : bar->actions())
        titles << action->text();
    return titles;
}

// Settings that touch nothing of the user's: a database in `dir` (a fresh folder), no model.
AppSettings testSettings(const fs::path& dir) {
    AppSettings settings;
    settings.databasePath = QString::fromStdString((dir / "sessions.db").string());
    settings.maxSteps = 12;
    return settings;
}

// At a device pixel ratio other than 1 (QT_SCALE_FACTOR, see CMakeLists.txt) the file is
// name@<ratio>x.png, as Qt names high-resolution images, beside the ratio-1 one.
void saveArtifact(QWidget& widget, QString name) {
    const qreal ratio = widget.devicePixelRatioF();
    if (ratio != 1) name.replace(QStringLiteral(".png"), QStringLiteral("@%1x.png").arg(ratio));
    const QImage image = widget.grab().toImage();
    EXPECT_EQ(image.width(), qRound(widget.width() * ratio)) << "not grabbed at the ratio";
    ASSERT_FALSE(image.isNull());
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 3) {
        for (int x = 0; x < image.width(); x += 3)
            colours.insert(image.pixel(x, y));
    }
    EXPECT_GT(colours.size(), 8) << "the grabbed window looks blank";
    const QString path = QDir(QStringLiteral(IRIS_TEST_ARTIFACTS)).filePath(name);
    EXPECT_TRUE(image.save(path)) << path.toStdString();
}

TEST(MainWindow, HasMenusLiveViewAgentPanelLibraryAndStatusBar) {
    const inference::testing::ScratchDir scratch{"iris_main_window_layout"};
    MainWindow window(testSettings(scratch.path()));
    EXPECT_EQ(
        menuTitles(window.menuBar()),
        (QStringList{QStringLiteral("&File"), QStringLiteral("&View"), QStringLiteral("&Help")}));
    EXPECT_NE(window.findChild<QLabel*>(QStringLiteral("liveView")), nullptr);
    EXPECT_NE(window.findChild<QPlainTextEdit*>(QStringLiteral("instruction")), nullptr);
    EXPECT_NE(window.findChild<QListWidget*>(QStringLiteral("timeline")), nullptr);
    EXPECT_NE(window.findChild<QWidget*>(QStringLiteral("libraryDock")), nullptr);
    const auto* engine = window.statusBar()->findChild<QLabel*>(QStringLiteral("engineStatus"));
    ASSERT_NE(engine, nullptr);
    EXPECT_TRUE(engine->text().contains(QStringLiteral("CPU kernels:")))
        << engine->text().toStdString();
}

TEST(MainWindow, OpensAndRendersOffscreen) {
    const inference::testing::ScratchDir scratch{"iris_main_window_render"};
    MainWindow window(testSettings(scratch.path()));
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    saveArtifact(window, QStringLiteral("main_window.png"));
}

// The demo with no model configured: the scripted demonstration drives the real browser on the
// runner's worker; its steps appear in the panel as they happen and the session is recorded.
TEST(MainWindow, RunsTheDemoWithStepsAppearingLive) {
    const inference::testing::ScratchDir scratch{"iris_main_window_demo"};
    const AppSettings settings = testSettings(scratch.path());
    MainWindow window(settings);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    window.runDemo();
    ASSERT_TRUE(window.runner()->isRunning()) << window.agentPanel()->errorText().toStdString();
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.agentPanel()->stepCount() >= 2; }, 60000));
    saveArtifact(window, QStringLiteral("main_window_running.png"));
    ASSERT_TRUE(QTest::qWaitFor([&] { return !window.runner()->isRunning(); }, 60000));
    EXPECT_EQ(window.agentPanel()->stepCount(), 5);
    EXPECT_TRUE(window.statusBar()->currentMessage().contains(QStringLiteral("done")))
        << window.statusBar()->currentMessage().toStdString();

    Result<agent::SessionStore> store =
        agent::SessionStore::open(settings.databasePath.toStdString());
    ASSERT_TRUE(store) << store.status().message();
    Result<std::vector<agent::SessionSummary>> sessions = store->listSessions();
    ASSERT_TRUE(sessions);
    ASSERT_EQ(sessions->size(), 1u);
    EXPECT_EQ(sessions->front().status, agent::SessionStatus::Done);
    EXPECT_EQ(sessions->front().stepCount, 5);

    // The recorded session opens in the viewer.
    window.openSession(sessions->front().id);
    saveArtifact(window, QStringLiteral("main_window_session.png"));

    // Replayed from the library, it gives the same screenshots, and the window says so.
    Q_EMIT window.library()->replayRequested(sessions->front().id);
    const QString identical = QStringLiteral("all 5 steps replayed with identical screenshots");
    EXPECT_TRUE(QTest::qWaitFor(
        [&] { return window.statusBar()->currentMessage().contains(identical); }, 120000))
        << window.statusBar()->currentMessage().toStdString();
}

// The bundled model on a bundled task with nothing configured: the model loads, acts in the live
// view and the session is recorded with its own answers (how well it does is Eval's business).
TEST(MainWindow, TriesTheBundledModelWithNothingConfigured) {
    const inference::testing::ScratchDir scratch{"iris_main_window_try"};
    const AppSettings settings = testSettings(scratch.path());
    MainWindow window(settings);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    window.tryBundledModel();
    EXPECT_EQ(window.agentPanel()->instruction(), QStringLiteral("Tick 'I agree to the terms'."));
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.runner()->isRunning(); }, 60000))
        << window.statusBar()->currentMessage().toStdString();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !window.runner()->isRunning(); }, 120000));
    Result<agent::SessionStore> store =
        agent::SessionStore::open(settings.databasePath.toStdString());
    ASSERT_TRUE(store) << store.status().message();
    Result<std::vector<agent::SessionSummary>> sessions = store->listSessions();
    ASSERT_TRUE(sessions);
    ASSERT_EQ(sessions->size(), 1u);
    EXPECT_GE(sessions->front().stepCount, 1);
    EXPECT_NE(sessions->front().model.find("iris-tiny-cua"), std::string::npos)
        << sessions->front().model;
}

TEST(MainWindow, StopHaltsTheDemoWithinOneStep) {
    const inference::testing::ScratchDir scratch{"iris_main_window_stop"};
    MainWindow window(testSettings(scratch.path()));
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    window.runDemo();
    ASSERT_TRUE(window.runner()->isRunning());
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.agentPanel()->stepCount() >= 1; }, 60000));
    const int before = window.agentPanel()->stepCount();
    window.runner()->stop();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !window.runner()->isRunning(); }, 10000));
    EXPECT_LE(window.agentPanel()->stepCount(), before + 1);
    EXPECT_TRUE(window.statusBar()->currentMessage().contains(QStringLiteral("stopped")))
        << window.statusBar()->currentMessage().toStdString();
}

// A configured model loads on a thread; the status bar's bar follows the engine's progress
// reports (queued to the GUI thread) and is full when the load ends.
TEST(MainWindow, LoadingBarFillsAsTheModelLoads) {
    const inference::testing::ScratchDir scratch{"iris_main_window_loading"};
    AppSettings settings = testSettings(scratch.path());
    inference::testing::TinyModelSpec spec;
    spec.vocab = 288;
    spec.withTokenizer = true;
    spec.hidden = 128;
    spec.headDim = 32;
    spec.ffn = 256;
    spec.layers = 4;
    spec.weightType = kernels::TensorType::Q8_0;
    const std::vector<std::byte> bytes = inference::testing::makeTinyModel(spec);
    const fs::path model =
        fs::path(settings.databasePath.toStdString()).parent_path() / "tiny.gguf";
    std::ofstream(model, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    settings.modelPath = QString::fromStdString(model.string());
    settings.threads = 1;
    settings.contextSize = 256;

    MainWindow window(settings);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    auto* bar = window.statusBar()->findChild<QProgressBar*>(QStringLiteral("loadingBar"));
    ASSERT_NE(bar, nullptr);
    EXPECT_GT(bar->maximum(), bar->minimum()) << "a busy bar, not a progress bar";
    std::vector<int> values;
    bool saved = false;
    QObject::connect(bar, &QProgressBar::valueChanged, [&](int value) {
        values.push_back(value);
        // The first report part-way through: the window as a user sees it while a model loads.
        if (!saved && value > bar->minimum() && value < bar->maximum()) {
            saveArtifact(window, QStringLiteral("main_window_loading.png"));
            saved = true;
        }
    });
    // A failed load would open a message box: closed, so that the test fails instead of hanging.
    QTimer closer;
    QObject::connect(&closer, &QTimer::timeout, [] {
        if (QWidget* modal = QApplication::activeModalWidget()) modal->close();
    });
    closer.start(100);
    window.runDemo();
    EXPECT_TRUE(bar->isVisible());
    // Start again while loading: ignored (a second load would take the bar back to 0).
    window.runDemo();
    // The load is done when the bar is hidden again (the session then starts, or the load
    // failed and says why in the status bar).
    ASSERT_TRUE(QTest::qWaitFor([&] { return !bar->isVisible(); }, 60000));
    EXPECT_FALSE(window.statusBar()->currentMessage().contains(QStringLiteral("tiny.gguf:")))
        << window.statusBar()->currentMessage().toStdString();
    ASSERT_GE(values.size(), 3u) << "the bar did not follow the load";
    EXPECT_EQ(values.back(), bar->maximum());
    for (std::size_t i = 1; i < values.size(); ++i)
        EXPECT_GE(values[i], values[i - 1]) << "the bar went back at report " << i;
    // The tiny model cannot see screenshots: the session ends on its own.
    window.runner()->stop();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !window.runner()->isRunning(); }, 60000));

    // The model stays loaded for the next session or fork (the runner keeps the last session's
    // client): the registry has it, so asking for the same choice loads nothing (no progress).
    bool loadedAgain = false;
    Result<std::shared_ptr<inference::Scheduler>> kept =
        sharedScheduler(modelChoiceOf(settings), [&](double) { loadedAgain = true; });
    ASSERT_TRUE(kept) << kept.status().message();
    EXPECT_FALSE(loadedAgain);
}

TEST(MainWindow, QuitClosesTheWindow) {
    const inference::testing::ScratchDir scratch{"iris_main_window_quit"};
    MainWindow window(testSettings(scratch.path()));
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    QAction* quit = nullptr;
    for (QAction* action : window.menuBar()->actions().front()->menu()->actions()) {
        if (action->text() == QStringLiteral("&Quit")) quit = action;
    }
    ASSERT_NE(quit, nullptr);
    quit->trigger();
    EXPECT_FALSE(window.isVisible());
}

}  // namespace
}  // namespace iris::app
