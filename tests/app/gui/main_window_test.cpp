#include "app/gui/main_window.h"

#include <gtest/gtest.h>

#include <QDir>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QSet>
#include <QStatusBar>
#include <QTest>

namespace iris::app {
namespace {

QStringList menuTitles(const QMenuBar* bar) {
    QStringList titles;
    for (const QAction* action : bar->actions())
        titles << action->text();
    return titles;
}

TEST(MainWindow, HasMenuBarCentralAreaAndStatusBar) {
    MainWindow window;
    EXPECT_EQ(
        menuTitles(window.menuBar()),
        (QStringList{QStringLiteral("&File"), QStringLiteral("&View"), QStringLiteral("&Help")}));
    ASSERT_NE(window.centralWidget(), nullptr);
    EXPECT_NE(window.findChild<QLabel*>(QStringLiteral("liveView")), nullptr);
    EXPECT_NE(window.findChild<QPlainTextEdit*>(QStringLiteral("instruction")), nullptr);
    EXPECT_NE(window.findChild<QListWidget*>(QStringLiteral("steps")), nullptr);
    const auto* engine = window.statusBar()->findChild<QLabel*>(QStringLiteral("engineStatus"));
    ASSERT_NE(engine, nullptr);
    EXPECT_TRUE(engine->text().contains(QStringLiteral("CPU kernels:")))
        << engine->text().toStdString();
}

// Opens the window offscreen, grabs it and keeps the picture as a test artifact.
TEST(MainWindow, OpensAndRendersOffscreen) {
    MainWindow window;
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    const QImage image = window.grab().toImage();
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.size(), window.size() * window.devicePixelRatio());

    // A real rendering has text, frames and backgrounds: many distinct colours, not one fill.
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 3) {
        for (int x = 0; x < image.width(); x += 3)
            colours.insert(image.pixel(x, y));
    }
    EXPECT_GT(colours.size(), 8) << "the grabbed window looks blank";

    const QString path =
        QDir(QStringLiteral(IRIS_TEST_ARTIFACTS)).filePath(QStringLiteral("main_window.png"));
    EXPECT_TRUE(image.save(path)) << path.toStdString();
}

TEST(MainWindow, QuitClosesTheWindow) {
    MainWindow window;
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    QAction* quit = window.menuBar()->actions().front()->menu()->actions().front();
    ASSERT_EQ(quit->text(), QStringLiteral("&Quit"));
    quit->trigger();
    EXPECT_FALSE(window.isVisible());
}

}  // namespace
}  // namespace iris::app
