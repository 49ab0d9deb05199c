#include "app/gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QKeySequence>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QStatusBar>
#include <QVBoxLayout>

#include "app/version.h"
#include "kernels/cpu_features.h"
#include "kernels/cuda_info.h"

namespace iris::app {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Iris"));
    setObjectName(QStringLiteral("mainWindow"));
    createMenus();
    createCentralArea();
    createStatusBar();
    resize(1280, 800);
}

MainWindow::~MainWindow() = default;

void MainWindow::createMenus() {
    QMenu* fileMenu = menuBar()->addMenu(tr("&File"));
    QAction* quit = fileMenu->addAction(tr("&Quit"));
    quit->setShortcut(QKeySequence::Quit);
    quit->setMenuRole(QAction::QuitRole);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    QMenu* viewMenu = menuBar()->addMenu(tr("&View"));
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
                      "The agent's browser or desktop appears here while it works."));
    m_liveView->setObjectName(QStringLiteral("liveView"));
    m_liveView->setAlignment(Qt::AlignCenter);
    m_liveView->setMinimumSize(640, 400);
    m_liveView->setFrameShape(QFrame::StyledPanel);
    m_liveView->setAutoFillBackground(true);
    m_liveView->setBackgroundRole(QPalette::Base);

    auto* sessionPanel = new QWidget;
    sessionPanel->setObjectName(QStringLiteral("sessionPanel"));
    auto* layout = new QVBoxLayout(sessionPanel);
    auto* instructionLabel = new QLabel(tr("&Instruction"));
    m_instruction = new QPlainTextEdit;
    m_instruction->setObjectName(QStringLiteral("instruction"));
    m_instruction->setPlaceholderText(
        tr("Describe the goal, e.g. \u201cmake the page match the "
           "mockup\u201d"));
    m_instruction->setMaximumHeight(120);
    instructionLabel->setBuddy(m_instruction);
    auto* stepsLabel = new QLabel(tr("&Steps"));
    m_steps = new QListWidget;
    m_steps->setObjectName(QStringLiteral("steps"));
    stepsLabel->setBuddy(m_steps);
    layout->addWidget(instructionLabel);
    layout->addWidget(m_instruction);
    layout->addWidget(stepsLabel);
    layout->addWidget(m_steps, 1);

    auto* splitter = new QSplitter(Qt::Horizontal);
    splitter->addWidget(m_liveView);
    splitter->addWidget(sessionPanel);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({900, 380});
    setCentralWidget(splitter);
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

}  // namespace iris::app
