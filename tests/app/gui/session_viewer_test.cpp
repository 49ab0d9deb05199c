#include "app/gui/session_viewer.h"

#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include <QDir>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>

#include "agent/image_codec.h"
#include "agent/recording/session_store.h"
#include "app/gui/session_library.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;
using agent::Action;

std::vector<std::uint8_t> colourPng(const cv::Scalar& bgr) {
    const cv::Mat image(300, 480, CV_8UC3, bgr);
    auto png = agent::encodePng(image);
    EXPECT_TRUE(png) << png.status().message();
    return png ? (*png)->bytes : std::vector<std::uint8_t>{};
}

agent::StepRecord makeStep(int index, const cv::Scalar& colour, std::vector<Action> actions) {
    agent::StepRecord step;
    step.index = index;
    step.startedAtMs = 1'760'000'000'000 + index * 1000;
    step.observationPng = colourPng(colour);
    step.url = "http://localhost:8080/step" + std::to_string(index);
    step.title = "Page " + std::to_string(index);
    step.request.messages.push_back(agent::ChatMessage::text("system", "You are an agent."));
    step.request.messages.push_back(
        agent::ChatMessage::text("user", "Instruction for step " + std::to_string(index)));
    agent::ChatResponse response;
    response.text = "Answer number " + std::to_string(index);
    response.finishReason = "stop";
    response.promptTokens = 900;
    response.completionTokens = 12;
    response.latencyMs = 321;
    step.response = response;
    step.actions = std::move(actions);
    for (std::size_t i = 0; i < step.actions.size(); ++i)
        step.results.push_back({});
    step.timings.modelMs = 321;
    step.timings.captureMs = 4.5;
    return step;
}

agent::SessionRecord makeRecord() {
    agent::SessionRecord record;
    record.summary.id = 42;
    record.summary.instruction = "Make the title blue";
    record.summary.environment = "browser project=/tmp/site";
    record.summary.model = "scripted test model";
    record.summary.actionFormat = "computer_13";
    record.summary.status = agent::SessionStatus::Done;
    record.summary.score = 0.75;
    record.summary.createdAtMs = 1'760'000'000'000;
    record.steps.push_back(
        makeStep(0, cv::Scalar(240, 200, 160), {agent::Click{agent::Point{100, 80}}}));
    agent::StepRecord second =
        makeStep(1, cv::Scalar(160, 240, 200),
                 {agent::TypeText{"hello viewer"}, agent::PressKeys{{"enter"}}});
    second.edits.push_back({"index.html", 2,
                            "--- a/index.html\n+++ b/index.html\n@@ -1 +1 @@\n-<h1>Old</h1>\n"
                            "+<h1 style=\"color: blue\">New</h1>\n"});
    second.results[1] = {false, "key refused", ""};
    record.steps.push_back(std::move(second));
    agent::StepRecord third = makeStep(
        2, cv::Scalar(200, 160, 240),
        {agent::Drag{agent::Point{50, 250}, agent::Point{400, 60}, {}}, agent::Done{"ok"}});
    third.response.reset();
    third.modelError = "server went away";
    record.steps.push_back(std::move(third));
    record.summary.stepCount = 3;
    return record;
}

void saveArtifact(QWidget& widget, const QString& name) {
    const QString path = QDir(QStringLiteral(IRIS_TEST_ARTIFACTS)).filePath(name);
    EXPECT_TRUE(widget.grab().save(path)) << path.toStdString();
}

TEST(SessionViewer, ShowsTheSessionAndScrubsWithSetCurrentStepAndKeys) {
    SessionViewerWidget viewer;
    viewer.resize(1100, 720);
    viewer.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&viewer));
    viewer.setSession(makeRecord());

    EXPECT_EQ(viewer.currentStep(), 0);
    const QString header = viewer.headerText();
    EXPECT_TRUE(header.contains(QStringLiteral("Make the title blue"))) << header.toStdString();
    EXPECT_TRUE(header.contains(QStringLiteral("done")));
    EXPECT_TRUE(header.contains(QStringLiteral("0.75")));
    EXPECT_TRUE(header.contains(QStringLiteral("scripted test model")));
    EXPECT_TRUE(header.contains(QStringLiteral("browser project=/tmp/site")));
    EXPECT_TRUE(viewer.stepText().contains(QStringLiteral("Answer number 0")));
    EXPECT_TRUE(viewer.stepText().contains(QStringLiteral("click(100")))
        << viewer.stepText().toStdString();
    EXPECT_TRUE(viewer.stepText().contains(QStringLiteral("Instruction for step 0")));
    const QImage first = viewer.currentImage();
    ASSERT_FALSE(first.isNull());
    EXPECT_EQ(first.size(), QSize(480, 300));
    // The overlay is drawn: the click point's surroundings are no longer the flat colour.
    EXPECT_NE(first.pixel(100 + 10, 80), first.pixel(5, 5));
    QTest::qWait(50);  // let queued thumbnails arrive
    saveArtifact(viewer, QStringLiteral("session_viewer_step1.png"));

    QSignalSpy changed(&viewer, &SessionViewerWidget::currentStepChanged);
    viewer.setCurrentStep(1);
    EXPECT_EQ(viewer.currentStep(), 1);
    EXPECT_EQ(changed.count(), 1);
    EXPECT_TRUE(viewer.stepText().contains(QStringLiteral("hello viewer")));
    EXPECT_TRUE(viewer.stepText().contains(QStringLiteral("key refused")));
    EXPECT_TRUE(viewer.diffText().contains(QStringLiteral("+<h1 style=\"color: blue\">New</h1>")))
        << viewer.diffText().toStdString();
    EXPECT_TRUE(viewer.diffText().contains(QStringLiteral("-<h1>Old</h1>")));
    EXPECT_NE(viewer.currentImage(), first);

    viewer.setFocus();
    QTest::keyClick(&viewer, Qt::Key_End);
    EXPECT_EQ(viewer.currentStep(), 2);
    EXPECT_TRUE(viewer.stepText().contains(QStringLiteral("server went away")));
    EXPECT_TRUE(viewer.stepText().contains(QStringLiteral("done(")) ||
                viewer.stepText().contains(QStringLiteral("done")));
    QTest::keyClick(&viewer, Qt::Key_Right);  // already at the end: stays
    EXPECT_EQ(viewer.currentStep(), 2);
    saveArtifact(viewer, QStringLiteral("session_viewer_step3.png"));
    QTest::keyClick(&viewer, Qt::Key_Left);
    EXPECT_EQ(viewer.currentStep(), 1);
    QTest::keyClick(&viewer, Qt::Key_Home);
    EXPECT_EQ(viewer.currentStep(), 0);
    EXPECT_EQ(viewer.currentImage(), first);
    QTest::keyClick(&viewer, Qt::Key_Right);
    EXPECT_EQ(viewer.currentStep(), 1);

    viewer.setCurrentStep(99);  // clamped
    EXPECT_EQ(viewer.currentStep(), 2);
}

TEST(SessionViewer, PlayAdvancesAStepAtATimeAndStopsAtTheEnd) {
    SessionViewerWidget viewer;
    viewer.setSession(makeRecord());
    viewer.setPlaybackInterval(30);
    QSignalSpy playing(&viewer, &SessionViewerWidget::playingChanged);
    QTest::keyClick(&viewer, Qt::Key_Space);
    EXPECT_TRUE(viewer.isPlaying());
    ASSERT_TRUE(QTest::qWaitFor([&] { return viewer.currentStep() == 1; }));
    ASSERT_TRUE(QTest::qWaitFor([&] { return viewer.currentStep() == 2; }));
    ASSERT_TRUE(QTest::qWaitFor([&] { return !viewer.isPlaying(); }));
    EXPECT_EQ(playing.count(), 2);
    // Playing again from the end starts over.
    viewer.play();
    EXPECT_EQ(viewer.currentStep(), 0);
    viewer.pause();
    EXPECT_FALSE(viewer.isPlaying());
}

TEST(SessionViewer, ShowsAnEmptySessionWithoutSteps) {
    SessionViewerWidget viewer;
    agent::SessionRecord empty;
    empty.summary.id = 7;
    empty.summary.instruction = "Nothing happened";
    viewer.setSession(empty);
    EXPECT_EQ(viewer.currentStep(), -1);
    EXPECT_TRUE(viewer.currentImage().isNull());
    viewer.setCurrentStep(3);
    viewer.play();
    EXPECT_FALSE(viewer.isPlaying());
    EXPECT_EQ(viewer.currentStep(), -1);
}

fs::path freshDatabase(const std::string& name) {
    const fs::path dir = fs::path(IRIS_TEST_ARTIFACTS) / "gui" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir / "sessions.db";
}

// Three sessions in a real database: two on "blue" things, one with steps.
std::vector<std::int64_t> fillDatabase(const fs::path& db) {
    auto store = agent::SessionStore::open(db);
    EXPECT_TRUE(store) << store.status().message();
    std::vector<std::int64_t> ids;
    const agent::SessionRecord record = makeRecord();
    for (const char* instruction :
         {"Make the title blue", "Fix the footer links", "Paint the button BLUE"}) {
        agent::SessionInfo info;
        info.instruction = instruction;
        info.environment = "browser";
        info.model = "scripted";
        info.actionFormat = "computer_13";
        ids.push_back(*store->createSession(info));
    }
    for (const agent::StepRecord& step : record.steps) {
        EXPECT_TRUE(store->appendStep(ids[0], step).isOk());
    }
    EXPECT_TRUE(store->finishSession(ids[0], agent::SessionStatus::Done, 1.0).isOk());
    return ids;
}

TEST(SessionLibrary, ListsARealDatabaseFiltersAndActivates) {
    const fs::path db = freshDatabase("library");
    const std::vector<std::int64_t> ids = fillDatabase(db);

    SessionLibraryWidget library;
    library.resize(900, 400);
    library.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&library));
    const Status opened = library.setDatabase(db);
    ASSERT_TRUE(opened.isOk()) << opened.message();
    EXPECT_TRUE(library.errorText().isEmpty());
    EXPECT_EQ(library.visibleSessionCount(), 3);
    saveArtifact(library, QStringLiteral("session_library.png"));

    library.setSearchText(QStringLiteral("blue"));  // case-insensitive
    EXPECT_EQ(library.visibleSessionCount(), 2);
    library.setSearchText(QStringLiteral("footer"));
    ASSERT_EQ(library.visibleSessionCount(), 1);
    EXPECT_EQ(library.sessionAt(0), ids[1]);
    library.setSearchText({});
    library.setSince(SessionLibraryWidget::Since::Today);  // all were made just now
    EXPECT_EQ(library.visibleSessionCount(), 3);

    QSignalSpy activated(&library, &SessionLibraryWidget::sessionActivated);
    library.selectSession(ids[0]);
    ASSERT_EQ(library.selectedSession(), ids[0]);
    auto* table = library.findChild<QTableView*>();
    ASSERT_NE(table, nullptr);
    table->setFocus();
    QTest::keyClick(table, Qt::Key_Return);
    ASSERT_EQ(activated.count(), 1);
    EXPECT_EQ(activated.front().front().toLongLong(), ids[0]);

    auto record = library.loadSession(ids[0]);
    ASSERT_TRUE(record) << record.status().message();
    SessionViewerWidget viewer;
    viewer.setSession(std::move(record).value());
    viewer.setCurrentStep(2);
    EXPECT_EQ(viewer.currentStep(), 2);
    EXPECT_TRUE(viewer.stepText().contains(QStringLiteral("server went away")));
}

TEST(SessionLibrary, ExportsOnAWorkerAndDeletes) {
    const fs::path db = freshDatabase("library-export");
    const std::vector<std::int64_t> ids = fillDatabase(db);
    SessionLibraryWidget library;
    ASSERT_TRUE(library.setDatabase(db).isOk());

    QSignalSpy finished(&library, &SessionLibraryWidget::exportFinished);
    const fs::path out = db.parent_path() / "export";
    library.exportSession(ids[0], QString::fromStdString(out.string()));
    EXPECT_TRUE(library.isExporting());
    ASSERT_TRUE(finished.wait(20000));
    EXPECT_TRUE(finished.front().at(1).toBool()) << finished.front().at(2).toString().toStdString();
    EXPECT_FALSE(library.isExporting());
    EXPECT_TRUE(fs::exists(out / "traj.jsonl"));
    EXPECT_TRUE(library.messageText().contains(QStringLiteral("Exported")));

    QSignalSpy deleted(&library, &SessionLibraryWidget::sessionDeleted);
    ASSERT_TRUE(library.deleteSession(ids[0]).isOk());
    EXPECT_EQ(deleted.count(), 1);
    EXPECT_EQ(library.visibleSessionCount(), 2);
    // Deleting it again is an error shown inline.
    EXPECT_FALSE(library.deleteSession(ids[0]).isOk());
    EXPECT_TRUE(library.errorText().contains(QString::fromStdString(db.string())))
        << library.errorText().toStdString();
}

TEST(SessionLibrary, NamesTheFileWhenTheDatabaseIsNotOne) {
    const fs::path db = freshDatabase("library-corrupt");
    {
        std::FILE* file = std::fopen(db.c_str(), "wb");
        ASSERT_NE(file, nullptr);
        const char junk[] = "this is not an SQLite database, just some text that is long enough";
        std::fwrite(junk, 1, sizeof junk, file);
        std::fclose(file);
    }
    SessionLibraryWidget library;
    EXPECT_FALSE(library.setDatabase(db).isOk());
    EXPECT_TRUE(library.errorText().contains(QString::fromStdString(db.string())))
        << library.errorText().toStdString();
    EXPECT_EQ(library.visibleSessionCount(), 0);
    library.resize(700, 300);
    saveArtifact(library, QStringLiteral("session_library_error.png"));
}

}  // namespace
}  // namespace iris::app
