// The agent runner (a session on a worker thread, signals on the GUI thread, stop, pause,
// consent) and the agent panel that shows it.
#include "app/gui/agent_runner.h"

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFont>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QPainter>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QTimer>

#include "agent/env/browser/browser_environment.h"
#include "agent/recording/session_store.h"
#include "app/gui/agent_panel.h"
#include "tests/agent/loop/fake_environment.h"

namespace iris::app {
namespace {

using agent::testing::FakeEnvironment;
using agent::testing::toolCall;

constexpr int kWaitMs = 20000;

// Answers from a script, streaming each answer in two pieces. Thread-safe: the worker calls
// complete() while the test reads `requests()`. It can hold its first answer until released, or
// block every call until cancelled.
class StreamingClient final : public agent::ModelClient {
public:
    explicit StreamingClient(std::vector<std::string> answers) : m_answers(std::move(answers)) {}

    Result<agent::ChatResponse> complete(const agent::ChatRequest&,
                                         const agent::TextStream& onText) override {
        const int number = ++m_requests;
        std::unique_lock lock(m_mutex);
        if (blockUntilCancelled || (holdFirst && number == 1)) {
            m_changed.wait(lock,
                           [&] { return m_cancelled || (!blockUntilCancelled && m_released); });
            if (m_cancelled) return Status::cancelled("cancelled");
        }
        const std::string text =
            m_answers.at(std::min(static_cast<std::size_t>(number - 1), m_answers.size() - 1));
        lock.unlock();
        if (onText) {
            const std::size_t half = text.size() / 2;
            onText(std::string_view(text).substr(0, half));
            onText(std::string_view(text).substr(half));
        }
        agent::ChatResponse response;
        response.text = text;
        response.promptTokens = 100;
        response.completionTokens = 20;
        response.latencyMs = 200;
        response.timeToFirstTokenMs = 100;
        return response;
    }
    void cancel() override {
        std::lock_guard lock(m_mutex);
        m_cancelled = true;
        m_changed.notify_all();
    }
    std::string describe() const override { return "streaming script"; }

    void release() {
        std::lock_guard lock(m_mutex);
        m_released = true;
        m_changed.notify_all();
    }
    int requests() const { return m_requests; }

    std::atomic<bool> blockUntilCancelled{false};
    std::atomic<bool> holdFirst{false};

private:
    std::vector<std::string> m_answers;
    std::atomic<int> m_requests{0};
    std::mutex m_mutex;
    std::condition_variable m_changed;
    bool m_cancelled = false;
    bool m_released = false;
};

bool onGuiThread() {
    return QThread::currentThread() == QCoreApplication::instance()->thread();
}

class AgentRunnerTest : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_TRUE(m_dir.isValid()); }

    std::filesystem::path database() const {
        return std::filesystem::path(m_dir.filePath(QStringLiteral("sessions.db")).toStdString());
    }

    // A request on a fake environment; `client` stays reachable through the returned pointer.
    RunRequest request(std::vector<std::string> answers, StreamingClient** client = nullptr) {
        auto scripted = std::make_unique<StreamingClient>(std::move(answers));
        if (client) *client = scripted.get();
        RunRequest request;
        request.environment = std::make_unique<FakeEnvironment>();
        request.client = std::move(scripted);
        request.loop.instruction = "press the buttons";
        request.loop.format = agent::ActionFormat::ToolCalls;
        request.loop.maxSteps = 10;
        request.database = database();
        return request;
    }

    agent::SessionRecord load(qint64 session) {
        Result<agent::SessionStore> store = agent::SessionStore::open(database());
        EXPECT_TRUE(store) << store.status().message();
        Result<agent::SessionRecord> record = store->loadSession(session);
        EXPECT_TRUE(record) << record.status().message();
        return record ? *record : agent::SessionRecord{};
    }

    QTemporaryDir m_dir;
};

TEST_F(AgentRunnerTest, RunsASessionAndReportsItsStepsInOrderOnTheGuiThread) {
    AgentRunner runner;
    AgentPanel panel;
    QObject::connect(&runner, &AgentRunner::started, &panel, &AgentPanel::onStarted);
    QObject::connect(&runner, &AgentRunner::textStreamed, &panel, &AgentPanel::onText);
    QObject::connect(&runner, &AgentRunner::stepFinished, &panel, &AgentPanel::onStep);
    QObject::connect(&runner, &AgentRunner::finished, &panel, &AgentPanel::onFinished);

    std::vector<int> indices;
    bool allOnGuiThread = true;
    QString streamed;
    QObject::connect(&runner, &AgentRunner::stepFinished, [&](const StepView& step) {
        allOnGuiThread = allOnGuiThread && onGuiThread();
        indices.push_back(step.index);
        EXPECT_EQ(step.screenSize, QSize(64, 48));
        EXPECT_FALSE(step.thumbnail.isNull());
        EXPECT_EQ(step.promptTokens, 100);
        EXPECT_DOUBLE_EQ(step.tokensPerSecond, 200.0);  // 20 tokens in 100 ms after the first
    });
    QObject::connect(&runner, &AgentRunner::textStreamed, [&](const QString& delta) {
        allOnGuiThread = allOnGuiThread && onGuiThread();
        streamed += delta;
    });
    QSignalSpy started(&runner, &AgentRunner::started);
    QSignalSpy finished(&runner, &AgentRunner::finished);

    ASSERT_TRUE(runner.start(
        request({toolCall("click", R"({"x": 10, "y": 10})"),
                 toolCall("click", R"({"x": 20, "y": 20})"), toolCall("done", "{}")})));
    EXPECT_TRUE(runner.isRunning());
    EXPECT_FALSE(runner.start(request({toolCall("done", "{}")}))) << "one session at a time";
    ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 1; }, kWaitMs));

    EXPECT_FALSE(runner.isRunning());
    EXPECT_TRUE(allOnGuiThread);
    EXPECT_EQ(indices, (std::vector<int>{0, 1, 2}));
    EXPECT_TRUE(streamed.contains(QStringLiteral("\"name\": \"click\""))) << streamed.toStdString();
    ASSERT_EQ(started.count(), 1);
    const qint64 session = started.at(0).at(0).toLongLong();
    const auto outcome = finished.at(0).at(0).value<RunOutcome>();
    EXPECT_EQ(outcome.end, QStringLiteral("done"));
    EXPECT_EQ(outcome.steps, 3);
    EXPECT_EQ(outcome.sessionId, session);
    EXPECT_TRUE(outcome.recordingError.isEmpty()) << outcome.recordingError.toStdString();

    const agent::SessionRecord record = load(session);
    EXPECT_EQ(record.summary.status, agent::SessionStatus::Done);
    EXPECT_EQ(record.summary.instruction, "press the buttons");
    EXPECT_EQ(record.summary.model, "streaming script");
    EXPECT_EQ(record.summary.environment, "fake");
    EXPECT_EQ(record.steps.size(), 3u);

    auto* fake = dynamic_cast<FakeEnvironment*>(runner.environment());
    ASSERT_NE(fake, nullptr);
    EXPECT_EQ(fake->executed.size(), 2u);

    EXPECT_EQ(panel.stepCount(), 3);
    EXPECT_FALSE(panel.isRunning());
    EXPECT_TRUE(panel.statsText().contains(QStringLiteral("Session %1").arg(session)))
        << panel.statsText().toStdString();
    EXPECT_TRUE(panel.answerText().contains(QStringLiteral("click")));
}

TEST_F(AgentRunnerTest, StopWhileTheModelIsThinkingEndsWithinOneStep) {
    AgentRunner runner;
    QSignalSpy finished(&runner, &AgentRunner::finished);
    StreamingClient* client = nullptr;
    RunRequest run = request({toolCall("done", "{}")}, &client);
    client->blockUntilCancelled = true;
    ASSERT_TRUE(runner.start(std::move(run)));
    ASSERT_TRUE(QTest::qWaitFor([&] { return client->requests() == 1; }, kWaitMs));

    QElapsedTimer timer;
    timer.start();
    runner.stop();
    ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 1; }, kWaitMs));
    EXPECT_LT(timer.elapsed(), 1000);

    const auto outcome = finished.at(0).at(0).value<RunOutcome>();
    EXPECT_EQ(outcome.end, QStringLiteral("stopped"));
    EXPECT_EQ(outcome.steps, 1);
    EXPECT_EQ(load(outcome.sessionId).summary.status, agent::SessionStatus::Stopped);
}

TEST_F(AgentRunnerTest, PauseHoldsTheLoopAfterTheStepInFlightAndResumeContinues) {
    AgentRunner runner;
    QSignalSpy steps(&runner, &AgentRunner::stepFinished);
    QSignalSpy finished(&runner, &AgentRunner::finished);
    StreamingClient* client = nullptr;
    RunRequest run =
        request({toolCall("click", R"({"x": 5, "y": 5})"), toolCall("done", "{}")}, &client);
    client->holdFirst = true;
    ASSERT_TRUE(runner.start(std::move(run)));
    ASSERT_TRUE(QTest::qWaitFor([&] { return client->requests() == 1; }, kWaitMs));

    runner.setPaused(true);  // the person takes over while the model is thinking
    client->release();
    ASSERT_TRUE(QTest::qWaitFor([&] { return steps.count() == 1; }, kWaitMs));
    QTest::qWait(300);
    EXPECT_EQ(client->requests(), 1) << "the loop asked the model while paused";
    EXPECT_TRUE(runner.isRunning());
    EXPECT_EQ(finished.count(), 0);

    runner.setPaused(false);
    ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 1; }, kWaitMs));
    EXPECT_EQ(client->requests(), 2);
    EXPECT_EQ(finished.at(0).at(0).value<RunOutcome>().end, QStringLiteral("done"));
}

TEST_F(AgentRunnerTest, AsksConsentOnTheGuiThreadAndHonoursTheAnswer) {
    AgentRunner runner;
    QSignalSpy finished(&runner, &AgentRunner::finished);
    std::vector<QString> asked;
    bool askedOnGuiThread = true;
    runner.setConsentAsker([&](const QString& action, const QString&) {
        askedOnGuiThread = askedOnGuiThread && onGuiThread();
        asked.push_back(action);
        return action.contains(QStringLiteral("2"));  // refuse the first click, allow the second
    });
    RunRequest run = request(
        {toolCall("click", R"({"x": 1, "y": 1})") + toolCall("click", R"({"x": 2, "y": 2})"),
         toolCall("done", "{}")});
    run.safety.confirmEveryAction = true;
    ASSERT_TRUE(runner.start(std::move(run)));
    ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 1; }, kWaitMs));

    EXPECT_TRUE(askedOnGuiThread);
    ASSERT_EQ(asked.size(), 2u);
    auto* fake = dynamic_cast<FakeEnvironment*>(runner.environment());
    ASSERT_NE(fake, nullptr);
    ASSERT_EQ(fake->executed.size(), 1u);
    EXPECT_EQ(std::get<agent::Click>(fake->executed[0]).at->x, 2);
}

TEST_F(AgentRunnerTest, RefusesRiskyActionsWhenNobodyCanBeAsked) {
    AgentRunner runner;
    QSignalSpy finished(&runner, &AgentRunner::finished);
    RunRequest run = request({toolCall("click", R"({"x": 1, "y": 1})"), toolCall("done", "{}")});
    run.safety.confirmEveryAction = true;
    ASSERT_TRUE(runner.start(std::move(run)));
    ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 1; }, kWaitMs));
    auto* fake = dynamic_cast<FakeEnvironment*>(runner.environment());
    ASSERT_NE(fake, nullptr);
    EXPECT_TRUE(fake->executed.empty());
}

TEST_F(AgentRunnerTest, ReportsADatabaseItCannotOpenAndIsReadyAgain) {
    const QString blocker = m_dir.filePath(QStringLiteral("not-a-folder"));
    {
        std::ofstream file(blocker.toStdString());
        file << "x";
    }
    AgentRunner runner;
    QSignalSpy failed(&runner, &AgentRunner::failed);
    QSignalSpy started(&runner, &AgentRunner::started);
    RunRequest run = request({toolCall("done", "{}")});
    run.database = std::filesystem::path(blocker.toStdString()) / "sessions.db";
    ASSERT_TRUE(runner.start(std::move(run)));
    ASSERT_TRUE(QTest::qWaitFor([&] { return failed.count() == 1; }, kWaitMs));
    EXPECT_TRUE(failed.at(0).at(0).toString().contains(QStringLiteral("not-a-folder")))
        << failed.at(0).at(0).toString().toStdString();
    EXPECT_EQ(started.count(), 0);
    EXPECT_FALSE(runner.isRunning());

    QSignalSpy finished(&runner, &AgentRunner::finished);
    ASSERT_TRUE(runner.start(request({toolCall("done", "{}")})));
    ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 1; }, kWaitMs));
}

TEST_F(AgentRunnerTest, DestroyingTheRunnerMidSessionStopsAndJoinsIt) {
    StreamingClient* client = nullptr;
    {
        AgentRunner runner;
        RunRequest run = request({toolCall("done", "{}")}, &client);
        client->blockUntilCancelled = true;
        ASSERT_TRUE(runner.start(std::move(run)));
        ASSERT_TRUE(QTest::qWaitFor([&] { return client->requests() == 1; }, kWaitMs));
    }  // must not hang or crash
    Result<agent::SessionStore> store = agent::SessionStore::open(database());
    ASSERT_TRUE(store);
    Result<std::vector<agent::SessionSummary>> sessions = store->listSessions();
    ASSERT_TRUE(sessions);
    ASSERT_EQ(sessions->size(), 1u);
    EXPECT_EQ(sessions->front().status, agent::SessionStatus::Stopped);
}

TEST_F(AgentRunnerTest, DrivesARealBrowserPageFromTheWorker) {
    const QString site = m_dir.filePath(QStringLiteral("site"));
    ASSERT_TRUE(QDir().mkpath(site));
    {
        std::ofstream page(QDir(site).filePath(QStringLiteral("index.html")).toStdString());
        page << "<!doctype html><html><head><title>before</title><style>"
                "body{margin:0} button{position:absolute;left:0;top:0;width:200px;height:100px}"
                "</style></head><body><button onclick=\"document.title='clicked'\">Go</button>"
                "</body></html>";
    }
    agent::BrowserOptions options;
    options.startUrl = site.toStdString();
    options.viewportWidth = 320;
    options.viewportHeight = 200;
    Result<std::unique_ptr<agent::BrowserEnvironment>> browser =
        agent::BrowserEnvironment::create(options);
    ASSERT_TRUE(browser) << browser.status().message();
    ASSERT_TRUE((*browser)->reset().isOk());

    AgentRunner runner;
    QSignalSpy steps(&runner, &AgentRunner::stepFinished);
    QSignalSpy finished(&runner, &AgentRunner::finished);
    RunRequest run = request({toolCall("click", R"({"x": 100, "y": 50})"), toolCall("done", "{}")});
    run.environment = std::move(*browser);
    run.loop.browser = true;
    ASSERT_TRUE(runner.start(std::move(run)));
    ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 1; }, 60000));

    const auto outcome = finished.at(0).at(0).value<RunOutcome>();
    EXPECT_EQ(outcome.end, QStringLiteral("done")) << outcome.message.toStdString();
    ASSERT_EQ(steps.count(), 2);
    EXPECT_EQ(steps.at(0).at(0).value<StepView>().screenSize, QSize(320, 200));
    ASSERT_NE(runner.environment(), nullptr);
    Result<agent::Observation> after = runner.environment()->observe();
    ASSERT_TRUE(after) << after.status().message();
    EXPECT_EQ(after->title, "clicked");
}

// A screenshot-like picture for the panel's timeline.
QImage fakeScreen(const QColor& background, const QString& label) {
    QImage image(640, 400, QImage::Format_RGB32);
    image.fill(background);
    QPainter painter(&image);
    painter.setPen(Qt::white);
    QFont font = painter.font();
    font.setPixelSize(64);
    painter.setFont(font);
    painter.drawText(image.rect(), Qt::AlignCenter, label);
    painter.end();
    return image.scaledToWidth(AgentRunner::kThumbnailWidth, Qt::SmoothTransformation);
}

TEST(AgentPanel, ShowsStreamedTextStepsAndStats) {
    AgentPanel panel;
    panel.resize(460, 720);
    panel.setInstruction(QStringLiteral("Make the page look like the mockup"));
    panel.setMaxSteps(15);
    panel.onStarted(7);
    panel.onText(QStringLiteral("I will click the menu button first."));

    StepView first;
    first.index = 0;
    first.actions = {QStringLiteral("click(640, 400)")};
    first.thumbnail = fakeScreen(QColor(40, 90, 160), QStringLiteral("1"));
    first.timings.modelMs = 1200;
    first.timings.executeMs = 40;
    first.promptTokens = 1500;
    first.completionTokens = 30;
    first.tokensPerSecond = 24.5;
    panel.onStep(first);
    panel.onText(QStringLiteral("Now the colours."));
    StepView second;
    second.index = 1;
    second.actions = {QStringLiteral("write_file(styles.css)"), QStringLiteral("reload()")};
    second.score = 0.912;
    second.verdict = QStringLiteral("kept: score rose");
    second.problems = {QStringLiteral("type_text refused: it contains a secret")};
    second.thumbnail = fakeScreen(QColor(160, 70, 40), QStringLiteral("2"));
    second.timings.modelMs = 900;
    panel.onStep(second);

    EXPECT_EQ(panel.stepCount(), 2);
    EXPECT_TRUE(panel.isRunning());
    const QString stats = panel.statsText();
    EXPECT_TRUE(stats.contains(QStringLiteral("Session 7"))) << stats.toStdString();
    EXPECT_TRUE(stats.contains(QStringLiteral("steps 2/15"))) << stats.toStdString();
    EXPECT_TRUE(stats.contains(QStringLiteral("last step 0.90 s"))) << stats.toStdString();
    EXPECT_TRUE(stats.contains(QStringLiteral("24.5 tok/s"))) << stats.toStdString();
    EXPECT_EQ(panel.answerText(),
              QStringLiteral("I will click the menu button first.\n\nNow the colours.\n\n"));
    auto* timeline = panel.findChild<QListWidget*>(QStringLiteral("timeline"));
    ASSERT_NE(timeline, nullptr);
    EXPECT_TRUE(timeline->item(0)->text().startsWith(QStringLiteral("1: click(640, 400)")));
    EXPECT_TRUE(timeline->item(1)->text().contains(QStringLiteral("score 0.912")));
    EXPECT_FALSE(timeline->item(1)->icon().isNull());

    panel.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&panel));
    const QString artifact = QStringLiteral(IRIS_TEST_ARTIFACTS "/agent_panel.png");
    EXPECT_TRUE(panel.grab().save(artifact)) << artifact.toStdString();
    // The same panel painted at device pixel ratio 2 (icons and text must stay sharp).
    QImage hiDpi(panel.size() * 2, QImage::Format_ARGB32_Premultiplied);
    hiDpi.setDevicePixelRatio(2);
    hiDpi.fill(Qt::transparent);
    panel.render(&hiDpi);
    EXPECT_TRUE(hiDpi.save(QStringLiteral(IRIS_TEST_ARTIFACTS "/agent_panel@2x.png")));

    RunOutcome outcome;
    outcome.end = QStringLiteral("done");
    outcome.score = 0.95;
    panel.onFinished(outcome);
    EXPECT_FALSE(panel.isRunning());
    EXPECT_TRUE(panel.statsText().contains(QStringLiteral("done, score 0.950")));
}

TEST(AgentPanel, StartNeedsAnInstructionAndSendsItWithTheTarget) {
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    const QString target = dir.filePath(QStringLiteral("mockup.png"));
    ASSERT_TRUE(fakeScreen(Qt::darkGreen, QStringLiteral("T")).save(target));
    const QString broken = dir.filePath(QStringLiteral("broken.png"));
    {
        std::ofstream file(broken.toStdString());
        file << "not a png";
    }

    AgentPanel panel;
    QSignalSpy startRequested(&panel, &AgentPanel::startRequested);
    auto* start = panel.findChild<QPushButton*>(QStringLiteral("start"));
    ASSERT_NE(start, nullptr);
    start->click();
    EXPECT_EQ(startRequested.count(), 0);
    EXPECT_FALSE(panel.errorText().isEmpty());

    EXPECT_FALSE(panel.setTargetImage(broken));
    EXPECT_TRUE(panel.errorText().contains(QStringLiteral("broken.png")))
        << panel.errorText().toStdString();
    EXPECT_TRUE(panel.targetPath().isEmpty());
    EXPECT_TRUE(panel.setTargetImage(target));
    EXPECT_TRUE(panel.errorText().isEmpty());
    panel.resize(460, 420);
    EXPECT_TRUE(panel.grab().save(QStringLiteral(IRIS_TEST_ARTIFACTS "/agent_panel_target.png")));

    panel.setInstruction(QStringLiteral("  Build the page  "));
    start->click();
    ASSERT_EQ(startRequested.count(), 1);
    EXPECT_EQ(startRequested.at(0).at(0).toString(), QStringLiteral("Build the page"));
    EXPECT_EQ(startRequested.at(0).at(1).toString(), target);

    panel.clearTarget();
    EXPECT_TRUE(panel.targetPath().isEmpty());
}

TEST(AgentPanel, ControlsFollowTheRunAndShortcutsWork) {
    AgentPanel panel;
    QSignalSpy startRequested(&panel, &AgentPanel::startRequested);
    QSignalSpy stopRequested(&panel, &AgentPanel::stopRequested);
    QSignalSpy pauseToggled(&panel, &AgentPanel::pauseToggled);
    auto* start = panel.findChild<QPushButton*>(QStringLiteral("start"));
    auto* pause = panel.findChild<QPushButton*>(QStringLiteral("pause"));
    auto* stop = panel.findChild<QPushButton*>(QStringLiteral("stop"));
    ASSERT_TRUE(start && pause && stop);
    EXPECT_TRUE(start->isEnabled());
    EXPECT_FALSE(pause->isEnabled());
    EXPECT_FALSE(stop->isEnabled());

    panel.show();
    QApplication::setActiveWindow(&panel);
    ASSERT_TRUE(QTest::qWaitForWindowActive(&panel));
    auto* instruction = panel.findChild<QWidget*>(QStringLiteral("instruction"));
    ASSERT_NE(instruction, nullptr);
    instruction->setFocus();
    QTest::keyClicks(instruction, QStringLiteral("open the menu"));
    QTest::keyClick(instruction, Qt::Key_Return, Qt::ControlModifier);
    ASSERT_EQ(startRequested.count(), 1);
    EXPECT_EQ(startRequested.at(0).at(0).toString(), QStringLiteral("open the menu"));

    panel.setRunning(true);
    EXPECT_FALSE(start->isEnabled());
    EXPECT_TRUE(pause->isEnabled());
    pause->click();
    ASSERT_EQ(pauseToggled.count(), 1);
    EXPECT_TRUE(pauseToggled.at(0).at(0).toBool());
    EXPECT_EQ(pause->text(), QStringLiteral("Give &back"));
    pause->click();
    EXPECT_FALSE(pauseToggled.at(1).at(0).toBool());
    panel.setPaused(true);  // from the toolbar: shown, not echoed
    EXPECT_TRUE(pause->isChecked());
    EXPECT_EQ(pause->text(), QStringLiteral("Give &back"));
    EXPECT_EQ(pauseToggled.count(), 2);

    QTest::keyClick(instruction, Qt::Key_Escape);
    EXPECT_EQ(stopRequested.count(), 1);

    panel.setRunning(false);
    QTest::keyClick(instruction, Qt::Key_Escape);
    EXPECT_EQ(stopRequested.count(), 1) << "nothing to stop";
}

// Answers the next modal message box: with its Allow button, or with Escape.
void answerNextDialog(QObject* context, bool allow) {
    auto* poll = new QTimer(context);
    QObject::connect(poll, &QTimer::timeout, context, [poll, allow] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (box == nullptr) return;
        poll->stop();
        poll->deleteLater();
        if (allow)
            box->button(QMessageBox::Yes)->click();
        else
            QTest::keyClick(box, Qt::Key_Escape);
    });
    poll->start(10);
}

TEST(AgentPanel, ConsentDialogRefusesOnEscapeAndAllowsOnRequest) {
    AgentPanel panel;
    answerNextDialog(&panel, false);
    EXPECT_FALSE(panel.askConsent(QStringLiteral("click(1, 1)"), QStringLiteral("risky")));
    answerNextDialog(&panel, true);
    EXPECT_TRUE(panel.askConsent(QStringLiteral("click(1, 1)"), QStringLiteral("risky")));
}

}  // namespace
}  // namespace iris::app
