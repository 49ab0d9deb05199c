#pragma once
// Runs one recorded agent session on a worker thread so the GUI stays responsive. The worker
// opens its own SessionStore, records every step, and drives the environment through
// GuiThreadEnvironment (browser pages live on the GUI thread). Every signal is emitted on the
// GUI thread, in order; stop() halts the loop within one step; the destructor stops and waits.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <QImage>
#include <QObject>
#include <QSize>
#include <QString>
#include <QStringList>

#include "agent/agent_loop.h"
#include "agent/clients/model_client.h"
#include "agent/environment.h"
#include "agent/recording/recording_types.h"
#include "agent/safety_policy.h"
#include "agent/workspace/workspace.h"
#include "app/session/session_plan.h"

namespace iris::agent {
class GuiThreadEnvironment;
}

namespace iris::app {

// Everything one session needs. The environment was created (and reset) on the GUI thread.
// Empty fields of `session` (environment, model, action format) are filled in from the
// environment, the client and the loop options.
struct RunRequest {
    std::unique_ptr<agent::Environment> environment;
    std::optional<agent::Workspace> workspace;
    std::unique_ptr<agent::ModelClient> client;
    agent::LoopOptions loop;
    agent::SafetyOptions safety;
    std::filesystem::path database;
    agent::SessionInfo session;

    // The request `iris run` would make of a plan: the prepared environment, workspace and safety
    // rules, and the session's config from sessionConfig().
    static RunRequest fromPlan(const SessionPlan& plan, PreparedSession prepared,
                               std::unique_ptr<agent::ModelClient> client);
};

// One finished step as the GUI shows it (a copy: safe to queue across threads).
struct StepView {
    int index = 0;
    QString thought;
    QString answer;
    QStringList actions;   // describe(action), in order
    QStringList problems;  // parse errors, refusals, failed actions
    std::optional<double> score;
    QString verdict;
    QImage thumbnail;   // what the model saw, at most kThumbnailWidth wide; null when unknown
    QImage screenshot;  // the same at full size (the live view of sessions without a page)
    QSize screenSize;   // the full screenshot's size
    agent::StepTimings timings;
    int promptTokens = 0;  // 0 when the client does not report them
    int completionTokens = 0;
    double tokensPerSecond = 0;  // completion tokens over the model call's duration
    double totalMs() const;
};

struct RunOutcome {
    qint64 sessionId = 0;
    QString end;  // loopEndName(): "done", "failed", "max_steps", "stopped", ...
    QString message;
    std::optional<double> score;
    int steps = 0;
    QString recordingError;  // set when the session could not be fully recorded
};

// Asked on the GUI thread before an action the safety policy marks risky; true allows it.
using ConsentCallback = std::function<bool(const QString& action, const QString& reason)>;

class AgentRunner final : public QObject {
    Q_OBJECT
public:
    static constexpr int kThumbnailWidth = 320;

    explicit AgentRunner(QObject* parent = nullptr);
    ~AgentRunner() override;
    AgentRunner(const AgentRunner&) = delete;
    AgentRunner& operator=(const AgentRunner&) = delete;

    // Starts the session; false (and nothing changes) when one is running or the request lacks
    // an environment or client. Must be called on the GUI thread.
    bool start(RunRequest request);
    bool isRunning() const { return m_running; }

    // Without one, risky actions are refused. Called on the GUI thread while the worker waits.
    void setConsentAsker(ConsentCallback asker) { m_askConsent = std::move(asker); }

    // The last session's environment (kept after it ends, e.g. for its view); null before any.
    agent::Environment* environment();

public Q_SLOTS:
    void stop();
    // Paused: the step in flight ends, then the loop waits (the person takes over); resumed: it
    // looks at the screen afresh and continues.
    void setPaused(bool paused);

Q_SIGNALS:
    void started(qint64 sessionId);
    void textStreamed(const QString& delta);
    void stepFinished(const iris::app::StepView& step);
    void finished(const iris::app::RunOutcome& outcome);
    void failed(const QString& message);  // the session could not start (database, model)

private:
    struct Shared;
    void work(std::shared_ptr<Shared> shared);
    void post(std::function<void()> onGuiThread);
    void endRun();

    std::unique_ptr<agent::GuiThreadEnvironment> m_environment;
    std::optional<agent::Workspace> m_workspace;
    std::unique_ptr<agent::ModelClient> m_client;
    RunRequest m_request;  // loop, safety, database, session (the owning parts are moved out)
    std::shared_ptr<Shared> m_shared;
    std::thread m_thread;
    ConsentCallback m_askConsent;
    bool m_running = false;
    bool m_closing = false;
};

}  // namespace iris::app

Q_DECLARE_METATYPE(iris::app::StepView)
Q_DECLARE_METATYPE(iris::app::RunOutcome)
