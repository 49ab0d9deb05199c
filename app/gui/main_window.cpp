#include "app/gui/main_window.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QGuiApplication>
#include <QInputDialog>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPixmap>
#include <QPointer>
#include <QProgressBar>
#include <QScrollArea>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QToolBar>

#include "agent/env/browser/browser_environment.h"
#include "agent/image_codec.h"
#include "agent/recording/replay_client.h"
#include "agent/recording/session_store.h"
#include "agent/visual/visual_diff.h"
#include "app/gui/agent_panel.h"
#include "app/gui/agent_runner.h"
#include "app/gui/grounding_dialog.h"
#include "app/gui/session_library.h"
#include "app/gui/session_viewer.h"
#include "app/gui/settings_dialog.h"
#include "app/session/engine_sharing.h"
#include "app/session/live_demo.h"
#include "app/session/model_choice.h"
#include "app/version.h"
#include "base/temporary_folder.h"
#include "kernels/cpu_features.h"
#include "kernels/cuda_info.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

constexpr int kLoadingBarSteps = 1000;

AppSettings storedSettings() {
    QSettings store;
    return loadSettings(store);
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : MainWindow(storedSettings(), parent) {}

MainWindow::MainWindow(AppSettings settings, QWidget* parent)
    : QMainWindow(parent), m_settings(std::move(settings)) {
    setWindowTitle(QStringLiteral("Iris"));
    setObjectName(QStringLiteral("mainWindow"));
    m_runner = new AgentRunner(this);
    createActions();
    createMenus();
    createCentralArea();
    createDocks();
    createStatusBar();
    resize(1600, 960);
    grabGlobalStop();

    connect(m_runner, &AgentRunner::started, m_agentPanel, &AgentPanel::onStarted);
    connect(m_runner, &AgentRunner::textStreamed, m_agentPanel, &AgentPanel::onText);
    connect(m_runner, &AgentRunner::stepFinished, m_agentPanel, &AgentPanel::onStep);
    connect(m_runner, &AgentRunner::stepFinished, this, &MainWindow::onStep);
    connect(m_runner, &AgentRunner::finished, m_agentPanel, &AgentPanel::onFinished);
    connect(m_runner, &AgentRunner::finished, this, &MainWindow::onFinished);
    connect(m_runner, &AgentRunner::failed, m_agentPanel, &AgentPanel::onFailed);
    connect(m_runner, &AgentRunner::failed, this, [this] {
        m_replayOf.reset();
        setRunning(false);
    });
    connect(m_agentPanel, &AgentPanel::startRequested, this, &MainWindow::onStartRequested);
    connect(m_agentPanel, &AgentPanel::stopRequested, m_runner, &AgentRunner::stop);
    connect(m_agentPanel, &AgentPanel::pauseToggled, m_runner, &AgentRunner::setPaused);
    m_runner->setConsentAsker([this](const QString& action, const QString& reason) {
        if (!m_settings.confirmRiskyActions && !m_settings.confirmEveryAction) return true;
        return m_agentPanel->askConsent(action, reason);
    });
}

MainWindow::~MainWindow() {
    // The page belongs to the runner's environment: take it out of the widget tree first.
    releaseLiveView();
    delete m_runner;
    m_runner = nullptr;
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (m_runner && m_runner->isRunning()) m_runner->stop();
    QMainWindow::closeEvent(event);
}

void MainWindow::grabGlobalStop() {
    m_desktopStatus = new QLabel;
    m_desktopStatus->setObjectName(QStringLiteral("desktopStatus"));
    statusBar()->addPermanentWidget(m_desktopStatus);
    m_stopKey = new GlobalStopKey(m_desktopStatus, [this] { m_stopAction->trigger(); }, this);
    m_stopKey->arm();
    if (m_stopKey->facts().stopKey == DesktopStatusFacts::StopKey::Unavailable) return;
    m_stopAction->setToolTip(
        tr("Stop the agent within one step (Ctrl+. in Iris, %1 anywhere on this desktop)")
            .arg(GlobalStopKey::chord()));
}

void MainWindow::createActions() {
    m_startAction = new QAction(tr("&Start"), this);
    m_startAction->setObjectName(QStringLiteral("startAction"));
    m_startAction->setToolTip(tr("Start the agent on the instruction (Ctrl+Return in the panel)"));
    connect(m_startAction, &QAction::triggered, this,
            [this] { onStartRequested(m_agentPanel->instruction(), m_agentPanel->targetPath()); });
    m_pauseAction = new QAction(tr("&Take Over"), this);
    m_pauseAction->setObjectName(QStringLiteral("pauseAction"));
    m_pauseAction->setCheckable(true);
    m_pauseAction->setShortcut(QKeySequence(Qt::Key_F8));
    m_pauseAction->setShortcutContext(Qt::ApplicationShortcut);
    m_pauseAction->setToolTip(
        tr("Pause the agent after this step and take over (F8); again to "
           "give control back"));
    connect(m_pauseAction, &QAction::toggled, m_runner, &AgentRunner::setPaused);
    m_stopAction = new QAction(tr("St&op"), this);
    m_stopAction->setObjectName(QStringLiteral("stopAction"));
    m_stopAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
    m_stopAction->setShortcutContext(Qt::ApplicationShortcut);
    m_stopAction->setToolTip(tr("Stop the agent within one step (Ctrl+. anywhere in Iris)"));
    connect(m_stopAction, &QAction::triggered, m_runner, &AgentRunner::stop);
    addAction(m_stopAction);
    addAction(m_pauseAction);
    setRunning(false);

    QToolBar* toolbar = addToolBar(tr("Agent"));
    toolbar->setObjectName(QStringLiteral("agentToolbar"));
    toolbar->addAction(m_startAction);
    toolbar->addAction(m_pauseAction);
    toolbar->addAction(m_stopAction);
}

void MainWindow::createMenus() {
    QMenu* fileMenu = menuBar()->addMenu(tr("&File"));
    QAction* openProject = fileMenu->addAction(tr("Open &Web Project..."));
    openProject->setShortcut(QKeySequence::Open);
    connect(openProject, &QAction::triggered, this, &MainWindow::onOpenProject);
    QAction* openUrl = fileMenu->addAction(tr("Open &URL..."));
    connect(openUrl, &QAction::triggered, this, &MainWindow::onOpenUrl);
    QAction* desktop = fileMenu->addAction(tr("Use a Private &Desktop"));
    connect(desktop, &QAction::triggered, this, [this] {
        m_demo.reset();
        m_environment = {EnvironmentSpec::Kind::PrivateDesktop, {}, 1920, 1080};
        statusBar()->showMessage(tr("The next session acts on a private X display"));
    });
    QAction* demo = fileMenu->addAction(tr("Run the &Demo"));
    connect(demo, &QAction::triggered, this, &MainWindow::runDemo);
    QAction* tryModel = fileMenu->addAction(tr("&Try the Bundled Model"));
    connect(tryModel, &QAction::triggered, this, &MainWindow::tryBundledModel);
    fileMenu->addSeparator();
    QAction* settings = fileMenu->addAction(tr("&Settings..."));
    settings->setShortcut(QKeySequence::Preferences);
    connect(settings, &QAction::triggered, this, &MainWindow::onSettings);
    QAction* grounding = fileMenu->addAction(tr("Check &Grounding..."));
    connect(grounding, &QAction::triggered, this, [this] {
        auto* dialog = new GroundingDialog(m_settings, this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->show();
    });
    fileMenu->addSeparator();
    QAction* quit = fileMenu->addAction(tr("&Quit"));
    quit->setShortcut(QKeySequence::Quit);
    quit->setMenuRole(QAction::QuitRole);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    QMenu* viewMenu = menuBar()->addMenu(tr("&View"));
    QAction* live = viewMenu->addAction(tr("&Live View"));
    connect(live, &QAction::triggered, this,
            [this] { m_centre->setCurrentIndex(m_browserView ? 1 : 0); });
    m_viewMenu = viewMenu;
    QAction* fullScreen = viewMenu->addAction(tr("&Full Screen"));
    fullScreen->setShortcut(QKeySequence::FullScreen);
    fullScreen->setCheckable(true);
    connect(fullScreen, &QAction::toggled, this, [this](bool on) {
        setWindowState(on ? windowState() | Qt::WindowFullScreen
                          : windowState() & ~Qt::WindowFullScreen);
    });

    QMenu* helpMenu = menuBar()->addMenu(tr("&Help"));
    QAction* about = helpMenu->addAction(tr("&About Iris"));
    about->setMenuRole(QAction::AboutRole);
    connect(about, &QAction::triggered, this, &MainWindow::onHelpAbout);
    QAction* aboutQt = helpMenu->addAction(tr("About &Qt"));
    aboutQt->setMenuRole(QAction::AboutQtRole);
    connect(aboutQt, &QAction::triggered, this, [] { QApplication::aboutQt(); });
}

void MainWindow::createCentralArea() {
    m_liveView =
        new QLabel(tr("No session running.\n"
                      "The agent's browser page appears here while it works.\n"
                      "File \u25b8 Run the Demo shows the visual-feedback loop;\n"
                      "File \u25b8 Try the Bundled Model runs Iris's own small model."));
    m_liveView->setObjectName(QStringLiteral("liveView"));
    m_liveView->setAlignment(Qt::AlignCenter);
    m_liveView->setMinimumSize(640, 400);
    m_liveView->setFrameShape(QFrame::StyledPanel);
    m_liveView->setAutoFillBackground(true);
    m_liveView->setBackgroundRole(QPalette::Base);

    // The page keeps its exact viewport size (one observation pixel = one CSS pixel), so it
    // sits in a scroll area instead of being stretched by a layout.
    auto* pageArea = new QScrollArea;
    pageArea->setObjectName(QStringLiteral("pageArea"));
    pageArea->setWidgetResizable(false);
    pageArea->setAlignment(Qt::AlignCenter);

    m_viewer = new SessionViewerWidget;
    m_viewer->setObjectName(QStringLiteral("sessionViewer"));

    m_centre = new QStackedWidget;
    m_centre->addWidget(m_liveView);  // 0
    m_centre->addWidget(pageArea);    // 1
    m_centre->addWidget(m_viewer);    // 2
    setCentralWidget(m_centre);
}

void MainWindow::createDocks() {
    m_agentPanel = new AgentPanel;
    m_agentPanel->setMaxSteps(m_settings.maxSteps);
    auto* agentDock = new QDockWidget(tr("Agent"), this);
    agentDock->setObjectName(QStringLiteral("agentDock"));
    agentDock->setWidget(m_agentPanel);
    addDockWidget(Qt::RightDockWidgetArea, agentDock);

    m_library = new SessionLibraryWidget;
    auto* libraryDock = new QDockWidget(tr("Session Library"), this);
    libraryDock->setObjectName(QStringLiteral("libraryDock"));
    libraryDock->setWidget(m_library);
    addDockWidget(Qt::LeftDockWidgetArea, libraryDock);
    (void)m_library->setDatabase(m_settings.databasePath.toStdString());  // shows its own error
    connect(m_library, &SessionLibraryWidget::sessionActivated, this, &MainWindow::openSession);
    connect(m_library, &SessionLibraryWidget::replayRequested, this,
            [this](qint64 id) { replaySession(id, -1); });
    connect(m_library, &SessionLibraryWidget::forkRequested, this, &MainWindow::replaySession);

    resizeDocks({libraryDock, agentDock}, {300, 420}, Qt::Horizontal);
    m_viewMenu->addSeparator();
    m_viewMenu->addAction(agentDock->toggleViewAction());
    m_viewMenu->addAction(libraryDock->toggleViewAction());
}

void MainWindow::createStatusBar() {
    const kernels::CudaInfo cuda = kernels::cudaInfo();
    const std::string_view isa = kernels::cpuIsaName(kernels::activeIsa());
    const QString cpuText =
        tr("CPU kernels: %1").arg(QString::fromUtf8(isa.data(), qsizetype(isa.size())));
    QString cudaText = tr("CUDA: not compiled in");
    if (cuda.compiledIn) {
        cudaText = cuda.devices.empty()
                       ? tr("CUDA: no device")
                       : tr("CUDA: %1").arg(QString::fromStdString(cuda.devices[0]));
    }
    // Filled by the engine's load progress (EngineOptions::onLoadProgress), in per mille.
    m_loadingBar = new QProgressBar;
    m_loadingBar->setObjectName(QStringLiteral("loadingBar"));
    m_loadingBar->setRange(0, kLoadingBarSteps);
    m_loadingBar->setMaximumWidth(160);
    m_loadingBar->setAccessibleName(tr("Loading the model"));
    m_loadingBar->hide();
    statusBar()->addPermanentWidget(m_loadingBar);
    m_runStatus = new QLabel;
    m_runStatus->setObjectName(QStringLiteral("runStatus"));
    statusBar()->addPermanentWidget(m_runStatus);
    m_modelUse = new QLabel;
    m_modelUse->setObjectName(QStringLiteral("modelUse"));
    statusBar()->addPermanentWidget(m_modelUse);
    auto* engineLabel = new QLabel(cpuText + QStringLiteral("  \u00b7  ") + cudaText);
    engineLabel->setObjectName(QStringLiteral("engineStatus"));
    statusBar()->addPermanentWidget(engineLabel);
    statusBar()->showMessage(tr("Ready"));
}

void MainWindow::onHelpAbout() {
    QMessageBox::about(this, tr("About Iris"),
                       tr("<h3>Iris</h3><p>A desktop computer-use agent with its own multimodal "
                          "inference engine.</p><pre>%1</pre>")
                           .arg(QString::fromStdString(versionText()).toHtmlEscaped()));
}

void MainWindow::onSettings() {
    SettingsDialog dialog(m_settings, this);
    if (dialog.exec() != QDialog::Accepted) return;
    m_settings = dialog.settings();
    QSettings store;
    saveSettings(m_settings, store);
    m_agentPanel->setMaxSteps(m_settings.maxSteps);
    (void)m_library->setDatabase(m_settings.databasePath.toStdString());
}

void MainWindow::onOpenProject() {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Open Web Project"));
    if (folder.isEmpty()) return;
    m_demo.reset();
    m_environment = {EnvironmentSpec::Kind::WebProject,
                     fs::canonical(folder.toStdString()).string(), m_settings.viewport.width(),
                     m_settings.viewport.height()};
    statusBar()->showMessage(tr("The next session edits %1").arg(folder));
}

void MainWindow::onOpenUrl() {
    bool ok = false;
    const QString url = QInputDialog::getText(this, tr("Open URL"), tr("&Page address:"),
                                              QLineEdit::Normal, QStringLiteral("https://"), &ok);
    if (!ok || url.trimmed().isEmpty()) return;
    m_demo.reset();
    m_environment = {EnvironmentSpec::Kind::Url, url.trimmed().toStdString(),
                     m_settings.viewport.width(), m_settings.viewport.height()};
    statusBar()->showMessage(tr("The next session acts on %1").arg(url));
}

void MainWindow::runDemo() {
    if (m_runner->isRunning() || m_loadingBar->isVisible()) return;
    Result<DemoProject> demo = prepareDemoProject(std::nullopt);
    if (!demo) return showError(tr("Demo"), QString::fromStdString(demo.status().message()));
    m_demo = std::move(*demo);
    m_agentPanel->setInstruction(QString::fromStdString(m_demo->instruction));
    m_agentPanel->setTargetImage(QString::fromStdString(m_demo->targetPath.string()));
    onStartRequested(m_agentPanel->instruction(), m_agentPanel->targetPath());
}

void MainWindow::tryBundledModel() {
    if (m_runner->isRunning() || m_loadingBar->isVisible()) return;
    Result<LiveDemo> demo = prepareLiveDemo(kLiveDemoTask);
    Result<SessionPlan> plan = demo ? makeLiveDemoPlan(*demo) : Result<SessionPlan>(demo.status());
    if (!plan)
        return showError(tr("Bundled Model"), QString::fromStdString(plan.status().message()));
    m_demo.reset();
    plan->database = m_settings.databasePath.toStdString();
    m_agentPanel->setInstruction(QString::fromStdString(plan->loop.instruction));
    auto shared = std::make_shared<SessionPlan>(std::move(*plan));
    withModelClient(demo->model, [this, shared](std::unique_ptr<agent::ModelClient> client) {
        startSession(std::move(*shared), std::move(client));
    });
}

void MainWindow::onStartRequested(const QString& instruction, const QString& targetPath) {
    // A model still loading will start its session: a second start would load it again.
    if (m_runner->isRunning() || m_loadingBar->isVisible()) return;
    if (instruction.trimmed().isEmpty())
        return m_agentPanel->showError(tr("Write an instruction first."));
    std::optional<SessionPlan> plan = planSession(instruction, targetPath);
    if (plan) startWithConfiguredModel(std::move(*plan));
}

std::optional<SessionPlan> MainWindow::planSession(const QString& instruction,
                                                   const QString& targetPath) {
    SessionPlan plan;
    if (m_demo) {
        plan = makeDemoPlan(*m_demo, m_settings.maxSteps);
    } else if (m_environment.location.empty() &&
               m_environment.kind != EnvironmentSpec::Kind::PrivateDesktop) {
        m_agentPanel->showError(
            tr("Choose where the agent acts: File \u25b8 Open Web Project, Open URL, or Run the "
               "Demo."));
        return std::nullopt;
    } else {
        plan.environment = m_environment;
        plan.loop.browser = m_environment.kind != EnvironmentSpec::Kind::PrivateDesktop;
        plan.loop.maxSteps = m_settings.maxSteps;
        Result<agent::ActionFormat> format =
            agent::actionFormatFromName(m_settings.actionFormat.toStdString());
        if (!format) {
            showError(tr("Settings"), QString::fromStdString(format.status().message()));
            return std::nullopt;
        }
        plan.loop.format = *format;
    }
    plan.loop.instruction = instruction.trimmed().toStdString();
    plan.loop.screenshotsInHistory = m_settings.screenshotsInHistory;
    plan.database = m_settings.databasePath.toStdString();
    if (!targetPath.isEmpty() && (!m_demo || targetPath.toStdString() != m_demo->targetPath)) {
        if (plan.environment.kind != EnvironmentSpec::Kind::WebProject) {
            m_agentPanel->showError(tr("A target image needs a web project."));
            return std::nullopt;
        }
        Result<cv::Mat> target = agent::readImageFile(targetPath.toStdString());
        if (!target) {
            m_agentPanel->showError(QString::fromStdString(target.status().message()));
            return std::nullopt;
        }
        plan.loop.goal = agent::VisualGoal{*target, 0.99, 3};
    }
    return plan;
}

void MainWindow::startWithConfiguredModel(SessionPlan plan) {
    const ModelChoice choice = modelChoiceOf(m_settings);
    if (choice.backend == ModelChoice::Backend::None) {
        if (!m_demo) {
            return m_agentPanel->showError(
                tr("No model is configured: choose one in File \u25b8 Settings."));
        }
        plan.clientDescription = "demonstration " + m_demo->demonstrationPath.string();
        statusBar()->showMessage(
            tr("No model configured: replaying the demonstration (scripted "
               "by the Iris developers, not model output)"));
        return startSession(std::move(plan),
                            std::make_unique<agent::ReplayClient>(m_demo->demonstration));
    }
    // std::function needs a copyable callable: the plan travels in a shared_ptr.
    auto shared = std::make_shared<SessionPlan>(std::move(plan));
    withModelClient(choice, [this, shared](std::unique_ptr<agent::ModelClient> client) {
        startSession(std::move(*shared), std::move(client));
    });
}

void MainWindow::withModelClient(const ModelChoice& choice, ClientStart start) {
    if (choice.backend != ModelChoice::Backend::LocalEngine) {
        Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(choice);
        if (!client)
            return showError(tr("Model"), QString::fromStdString(client.status().message()));
        m_modelUse->clear();
        return start(std::move(*client));
    }
    // Loading a model takes seconds: on a thread, then back here.
    statusBar()->showMessage(
        tr("Loading %1...").arg(QString::fromStdString(choice.modelPath.string())));
    m_loadingBar->setValue(0);
    m_loadingBar->show();
    m_startAction->setEnabled(false);
    QPointer<MainWindow> self(this);
    // Called on the loading thread: each report is queued to the GUI thread (the engine already
    // reports only when the per-mille value rises).
    LoadProgress onLoadProgress = [self](double fraction) {
        const int value = static_cast<int>(std::lround(fraction * kLoadingBarSteps));
        QMetaObject::invokeMethod(
            qApp,
            [self, value] {
                if (MainWindow* window = self.data()) window->m_loadingBar->setValue(value);
            },
            Qt::QueuedConnection);
    };
    // The runner keeps the last session's client until the next one starts, so when the model is
    // the same the registry hands out its engine again and nothing is loaded.
    std::thread([self, choice, onLoadProgress, start] {
        auto loaded = std::make_shared<Result<std::unique_ptr<agent::ModelClient>>>(
            makeModelClient(choice, onLoadProgress));
        QMetaObject::invokeMethod(qApp, [self, start, loaded] {
            MainWindow* window = self.data();
            if (window == nullptr) return;  // closed while the model loaded
            window->m_startAction->setEnabled(true);
            window->m_loadingBar->hide();
            if (!*loaded) {
                return window->showError(tr("Model"),
                                         QString::fromStdString(loaded->status().message()));
            }
            // "engine: shared with iris eval (pid 1234)", as the command line says it.
            window->m_modelUse->setText(
                tr("engine: %1").arg(QString::fromStdString(engineUseSummary(***loaded))));
            start(std::move(**loaded));
        });
    }).detach();
}

void MainWindow::replaySession(qint64 session, int fromStep) {
    if (m_runner->isRunning()) return;
    Result<agent::SessionStore> store =
        agent::SessionStore::open(m_settings.databasePath.toStdString());
    Result<agent::SessionRecord> recording =
        store ? store->loadSession(session) : Result<agent::SessionRecord>(store.status());
    if (!recording)
        return showError(tr("Replay"), QString::fromStdString(recording.status().message()));
    Result<SessionPlan> plan = planFromRecording(*recording);
    if (!plan) return showError(tr("Replay"), QString::fromStdString(plan.status().message()));
    plan->database = m_settings.databasePath.toStdString();
    if (plan->environment.kind == EnvironmentSpec::Kind::WebProject) {
        Result<fs::path> folder = makeTemporaryFolder("iris-replay");
        if (!folder)
            return showError(tr("Replay"), QString::fromStdString(folder.status().message()));
        if (Status restored = restoreProjectFiles(recording->config, folder->string());
            !restored.isOk())
            return showError(tr("Replay"), QString::fromStdString(restored.message()));
        plan->environment.location = folder->string();
    }
    m_demo.reset();
    m_agentPanel->setInstruction(QString::fromStdString(recording->summary.instruction));
    if (fromStep < 0) {
        plan->loop.maxSteps = int(recording->steps.size());
        plan->clientDescription = "replay of session " + std::to_string(session);
        m_replayOf = session;
        return startSession(std::move(*plan), std::make_unique<agent::ReplayClient>(*recording));
    }
    const ModelChoice choice = modelChoiceOf(m_settings);
    if (choice.backend == ModelChoice::Backend::None) {
        return showError(tr("Fork"), tr("Forking continues with a live model: choose one in "
                                        "File \u25b8 Settings."));
    }
    auto shared = std::make_shared<std::pair<SessionPlan, agent::SessionRecord>>(
        std::move(*plan), std::move(*recording));
    withModelClient(choice, [this, shared, fromStep](std::unique_ptr<agent::ModelClient> live) {
        startSession(std::move(shared->first), std::make_unique<agent::ForkClient>(
                                                   shared->second, fromStep, std::move(live)));
    });
}

void MainWindow::startSession(SessionPlan plan, std::unique_ptr<agent::ModelClient> client) {
    releaseLiveView();
    Result<PreparedSession> prepared = prepareSession(plan);
    if (!prepared)
        return showError(tr("Environment"), QString::fromStdString(prepared.status().message()));
    prepared->safety.confirmEveryAction = m_settings.confirmEveryAction;
    QWidget* view = nullptr;
    if (auto* browser = dynamic_cast<agent::BrowserEnvironment*>(prepared->environment.get()))
        view = browser->view();
    RunRequest request = RunRequest::fromPlan(plan, std::move(*prepared), std::move(client));
    m_steps = 0;
    m_tokens = 0;
    if (!m_runner->start(std::move(request)))
        return showError(tr("Agent"), tr("A session is already running."));
    if (view) showLiveView(view);
    setRunning(true);
    statusBar()->showMessage(tr("Agent running"));
}

void MainWindow::showLiveView(QWidget* view) {
    auto* area = static_cast<QScrollArea*>(m_centre->widget(1));
    view->setAttribute(Qt::WA_DontShowOnScreen, false);
    area->setWidget(view);
    view->show();
    m_browserView = view;
    m_centre->setCurrentIndex(1);
}

void MainWindow::releaseLiveView() {
    m_liveView->setPixmap({});
    if (!m_browserView) return;
    auto* area = static_cast<QScrollArea*>(m_centre->widget(1));
    area->takeWidget();
    m_browserView->hide();
    m_browserView->setParent(nullptr);
    m_browserView->setAttribute(Qt::WA_DontShowOnScreen, true);
    m_browserView = nullptr;
    m_centre->setCurrentIndex(0);
}

void MainWindow::openSession(qint64 session) {
    Result<agent::SessionStore> store =
        agent::SessionStore::open(m_settings.databasePath.toStdString());
    Result<agent::SessionRecord> recording =
        store ? store->loadSession(session) : Result<agent::SessionRecord>(store.status());
    if (!recording)
        return showError(tr("Session"), QString::fromStdString(recording.status().message()));
    m_viewer->setSession(std::move(*recording));
    m_centre->setCurrentWidget(m_viewer);
}

void MainWindow::onStep(const StepView& step) {
    // A desktop session has no page to embed: show what the agent saw at each step.
    if (!m_browserView && !step.screenshot.isNull()) {
        m_liveView->setPixmap(QPixmap::fromImage(step.screenshot.scaled(
            m_liveView->size(), Qt::KeepAspectRatio, Qt::SmoothTransformation)));
        m_centre->setCurrentWidget(m_liveView);
    }
    ++m_steps;
    m_tokens += step.promptTokens + step.completionTokens;
    QString text = tr("steps %1/%2 \u00b7 last step %3 s")
                       .arg(m_steps)
                       .arg(m_settings.maxSteps)
                       .arg(step.totalMs() / 1000.0, 0, 'f', 2);
    if (step.tokensPerSecond > 0)
        text += tr(" \u00b7 %1 tok/s").arg(step.tokensPerSecond, 0, 'f', 1);
    if (m_tokens > 0) text += tr(" \u00b7 %1 tokens").arg(m_tokens);
    m_runStatus->setText(text);
}

void MainWindow::onFinished(const RunOutcome& outcome) {
    setRunning(false);
    QString text = tr("Session %1: %2").arg(outcome.sessionId).arg(outcome.end);
    if (outcome.score) text += tr(", score %1").arg(*outcome.score, 0, 'f', 4);
    statusBar()->showMessage(text);
    (void)m_library->refresh();
    if (m_replayOf) reportReplay(*std::exchange(m_replayOf, std::nullopt), outcome.sessionId, text);
}

namespace {

// "all 5 steps replayed with identical screenshots", or where the replay first differs.
std::string replayVerdict(const std::string& database, qint64 original, qint64 replay) {
    Result<agent::SessionStore> store = agent::SessionStore::open(database);
    if (!store) return store.status().message();
    Result<agent::SessionRecord> recorded = store->loadSession(original);
    Result<agent::SessionRecord> replayed = store->loadSession(replay);
    if (!recorded) return recorded.status().message();
    if (!replayed) return replayed.status().message();
    const std::size_t steps = recorded->steps.size();
    for (std::size_t i = 0; i < std::min(steps, replayed->steps.size()); ++i) {
        Result<cv::Mat> before = agent::decodeImage(recorded->steps[i].observationPng, "recorded");
        Result<cv::Mat> after = agent::decodeImage(replayed->steps[i].observationPng, "replayed");
        if (!before) return before.status().message();
        if (!after) return after.status().message();
        const agent::PixelDifference d = agent::pixelDifference(*after, *before);
        if (d.changedShare > 0) {
            char share[32];
            std::snprintf(share, sizeof share, "%.3f%%", 100 * d.changedShare);
            return "step " + std::to_string(i + 1) + " differs from the recording (" +
                   (d.sameSize ? std::string(share) + " of pixels" : std::string("another size")) +
                   ")";
        }
    }
    if (replayed->steps.size() < steps) {
        return "the replay ended after " + std::to_string(replayed->steps.size()) + " of " +
               std::to_string(steps) + " steps";
    }
    return "all " + std::to_string(steps) + " steps replayed with identical screenshots";
}

}  // namespace

void MainWindow::reportReplay(qint64 original, qint64 replay, const QString& outcomeText) {
    statusBar()->showMessage(outcomeText + tr(" \u00b7 comparing with the recording\u2026"));
    // Decoding every screenshot of a long session takes a while: not on the GUI thread. The
    // verdict is posted through qApp, which outlives this window, and dropped if it is gone.
    QPointer<MainWindow> window(this);
    std::thread([window, outcomeText, original, replay,
                 database = m_settings.databasePath.toStdString()] {
        const QString verdict = QString::fromStdString(replayVerdict(database, original, replay));
        QMetaObject::invokeMethod(qApp, [window, outcomeText, verdict] {
            if (window)
                window->statusBar()->showMessage(outcomeText + QStringLiteral(" \u00b7 ") +
                                                 verdict);
        });
    }).detach();
}

void MainWindow::setRunning(bool running) {
    m_startAction->setEnabled(!running);
    m_pauseAction->setEnabled(running);
    m_stopAction->setEnabled(running);
    if (!running && m_pauseAction->isChecked()) {
        const QSignalBlocker blocker(m_pauseAction);
        m_pauseAction->setChecked(false);
    }
    if (m_agentPanel) m_agentPanel->setRunning(running);
}

void MainWindow::showError(const QString& title, const QString& message) {
    statusBar()->showMessage(message);
    QMessageBox::warning(this, title, message);
}

}  // namespace iris::app
