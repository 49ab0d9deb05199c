#pragma once
// The main window: the live view in the centre (the agent's browser page while it works, or a
// recorded session being viewed), the agent panel (instruction, target, controls, steps) on the
// right, the session library on the left, run statistics in the status bar. Lives on the GUI
// thread; the agent runs on an AgentRunner's worker.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

#include <QMainWindow>

#include "agent/clients/model_client.h"
#include "app/gui/desktop_status.h"
#include "app/gui/settings.h"
#include "app/session/demo_project.h"
#include "app/session/session_plan.h"

class QAction;
class QMenu;
class QLabel;
class QProgressBar;
class QStackedWidget;

namespace iris::app {

class AgentPanel;
class AgentRunner;
class SessionLibraryWidget;
class SessionViewerWidget;
struct ModelChoice;
struct RunOutcome;
struct StepView;

class MainWindow final : public QMainWindow {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(MainWindow)

public:
    // Settings come from QSettings (the standard location) unless given.
    explicit MainWindow(QWidget* parent = nullptr);
    explicit MainWindow(AppSettings settings, QWidget* parent = nullptr);
    ~MainWindow() override;

    const AppSettings& settings() const { return m_settings; }
    AgentPanel* agentPanel() const { return m_agentPanel; }
    AgentRunner* runner() const { return m_runner; }
    SessionLibraryWidget* library() const { return m_library; }

    // Prepares the bundled demo (a fresh copy of the page, its mockup as the target) and runs it:
    // with the configured model, or the scripted demonstration when none is configured.
    void runDemo();
    // Runs the model bundled with Iris (iris-tiny-cua) on a bundled grounding task: its page in
    // the live view, real model output, nothing to configure (app/session/live_demo.h).
    void tryBundledModel();
    // Opens a recorded session of the library's database in the viewer.
    void openSession(qint64 session);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void createActions();
    void createMenus();
    void createCentralArea();
    void createDocks();
    void createStatusBar();
    void onHelpAbout();
    void onSettings();
    void onOpenProject();
    void onOpenUrl();
    // Runs a recorded session again (fromStep < 0) or forks it: its first `fromStep` answers
    // replayed, then the configured model (a server or the local engine) continues. A new
    // session either way.
    void replaySession(qint64 session, int fromStep);

    // Starts a session on the current environment with `client`; takes over the live view.
    void startSession(SessionPlan plan, std::unique_ptr<agent::ModelClient> client);
    void onStartRequested(const QString& instruction, const QString& targetPath);
    // The session the panel asks for on the current environment (or the demo); nullopt after
    // showing why there is none.
    std::optional<SessionPlan> planSession(const QString& instruction, const QString& targetPath);
    // Starts `plan` with the model the settings choose: a server at once, the demonstration when
    // the demo runs without a model, a local model once withModelClient has loaded it.
    void startWithConfiguredModel(SessionPlan plan);
    // Calls `start` with a client of the model `choice` names: at once for a server; for the
    // local engine once it is loaded, on a thread (the loading bar shows its progress; a model
    // already loaded comes at once). Errors are shown, and `start` is not called.
    using ClientStart = std::function<void(std::unique_ptr<agent::ModelClient>)>;
    void withModelClient(const ModelChoice& choice, ClientStart start);
    void onStep(const StepView& step);
    void onFinished(const RunOutcome& outcome);
    // Compares a finished replay's screenshots with the recording's, off the GUI thread, and
    // shows the verdict in the status bar.
    void reportReplay(qint64 original, qint64 replay, const QString& outcomeText);
    void setRunning(bool running);
    void showLiveView(QWidget* view);
    void releaseLiveView();
    void showError(const QString& title, const QString& message);
    // Arms the global stop key (an X11 grab, or the GlobalShortcuts portal on Wayland) so that a
    // stop works while another window has the focus (the agent driving the desktop); the status
    // bar says which desktop path sessions use and whether the key works (desktop_status.h).
    void grabGlobalStop();

    AppSettings m_settings;
    EnvironmentSpec m_environment;      // where the next session acts
    std::optional<DemoProject> m_demo;  // when the next session is the demo
    QStackedWidget* m_centre = nullptr;
    QLabel* m_liveView = nullptr;      // shown when nothing runs
    QWidget* m_browserView = nullptr;  // the running environment's page, not owned
    SessionViewerWidget* m_viewer = nullptr;
    AgentPanel* m_agentPanel = nullptr;
    SessionLibraryWidget* m_library = nullptr;
    AgentRunner* m_runner = nullptr;
    QLabel* m_runStatus = nullptr;
    QLabel* m_modelUse = nullptr;  // which engine the local model runs on (engine_sharing.h)
    QProgressBar* m_loadingBar = nullptr;  // shown while a model loads
    QAction* m_startAction = nullptr;
    QAction* m_pauseAction = nullptr;
    QAction* m_stopAction = nullptr;
    QMenu* m_viewMenu = nullptr;
    std::optional<qint64> m_replayOf;  // the recorded session the running one replays
    int m_steps = 0;
    long long m_tokens = 0;
    QLabel* m_desktopStatus = nullptr;
    GlobalStopKey* m_stopKey = nullptr;
};

}  // namespace iris::app
