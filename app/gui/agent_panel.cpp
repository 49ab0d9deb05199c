#include "app/gui/agent_panel.h"

#include <functional>
#include <utility>

#include <QColor>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QIcon>
#include <QImageReader>
#include <QKeySequence>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QMimeData>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QShortcut>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTextCursor>
#include <QUrl>
#include <QVBoxLayout>

namespace iris::app {

namespace {

constexpr QSize kTargetSize(176, 110);
constexpr QSize kTimelineIconSize(96, 60);

QString seconds(double milliseconds) {
    return QStringLiteral("%1 s").arg(milliseconds / 1000.0, 0, 'f', 2);
}

// The first local file among the dragged URLs, if any.
QString droppedFile(const QMimeData* mime) {
    if (mime == nullptr || !mime->hasUrls()) return {};
    for (const QUrl& url : mime->urls())
        if (url.isLocalFile()) return url.toLocalFile();
    return {};
}

}  // namespace

// A label that takes an image file dropped on it.
class ImageDropLabel final : public QLabel {
public:
    explicit ImageDropLabel(std::function<void(const QString&)> onDropped, QWidget* parent)
        : QLabel(parent), m_onDropped(std::move(onDropped)) {
        setAcceptDrops(true);
    }

protected:
    void dragEnterEvent(QDragEnterEvent* event) override {
        if (!droppedFile(event->mimeData()).isEmpty()) event->acceptProposedAction();
    }
    void dropEvent(QDropEvent* event) override {
        const QString path = droppedFile(event->mimeData());
        if (path.isEmpty()) return;
        event->acceptProposedAction();
        m_onDropped(path);
    }

private:
    std::function<void(const QString&)> m_onDropped;
};

AgentPanel::AgentPanel(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("agentPanel"));
    // In the order the person reads them: the instruction, the target, the controls, the report.
    QLabel* instructionLabel = createInstructionEditor();
    createTargetPicker();
    createControls();
    QWidget* report = createReport();
    layOut(instructionLabel, report);
    clearTarget();
    setRunning(false);
}

QLabel* AgentPanel::createInstructionEditor() {
    auto* label = new QLabel(tr("&Instruction:"), this);
    m_instruction = new QPlainTextEdit(this);
    m_instruction->setObjectName(QStringLiteral("instruction"));
    m_instruction->setPlaceholderText(tr("What should the agent do? (Ctrl+Return starts)"));
    m_instruction->setTabChangesFocus(true);
    m_instruction->setMaximumHeight(fontMetrics().lineSpacing() * 5 + 12);
    label->setBuddy(m_instruction);
    return label;
}

void AgentPanel::createTargetPicker() {
    m_target = new ImageDropLabel([this](const QString& path) { setTargetImage(path); }, this);
    m_target->setObjectName(QStringLiteral("targetImage"));
    m_target->setFixedSize(kTargetSize);
    m_target->setAlignment(Qt::AlignCenter);
    m_target->setFrameShape(QFrame::StyledPanel);
    m_target->setFrameShadow(QFrame::Sunken);
    m_target->setWordWrap(true);
    m_target->setToolTip(tr("Drop an image of the page you want here, or choose one"));
    m_chooseTarget = new QPushButton(tr("C&hoose target..."), this);
    m_clearTarget = new QPushButton(tr("Clea&r target"), this);
    connect(m_chooseTarget, &QPushButton::clicked, this, &AgentPanel::chooseTarget);
    connect(m_clearTarget, &QPushButton::clicked, this, &AgentPanel::clearTarget);
}

void AgentPanel::createControls() {
    m_start = new QPushButton(tr("&Start"), this);
    m_start->setObjectName(QStringLiteral("start"));
    m_start->setToolTip(tr("Start the agent (Ctrl+Return)"));
    m_pause = new QPushButton(tr("&Take over"), this);
    m_pause->setObjectName(QStringLiteral("pause"));
    m_pause->setCheckable(true);
    m_pause->setToolTip(tr("Pause the agent after its current step and take over control"));
    m_stop = new QPushButton(tr("St&op"), this);
    m_stop->setObjectName(QStringLiteral("stop"));
    m_stop->setToolTip(tr("Stop the agent within one step (Esc)"));
    connect(m_start, &QPushButton::clicked, this, &AgentPanel::requestStart);
    connect(m_stop, &QPushButton::clicked, this, [this] {
        if (m_running) Q_EMIT stopRequested();
    });
    connect(m_pause, &QPushButton::toggled, this, [this](bool paused) {
        showPaused(paused);
        Q_EMIT pauseToggled(paused);
    });

    for (const QKeySequence& keys :
         {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)}) {
        auto* start = new QShortcut(keys, this);
        start->setContext(Qt::WidgetWithChildrenShortcut);
        connect(start, &QShortcut::activated, this, &AgentPanel::requestStart);
    }
    auto* stop = new QShortcut(QKeySequence(Qt::Key_Escape), this);
    stop->setContext(Qt::WidgetWithChildrenShortcut);
    connect(stop, &QShortcut::activated, m_stop, &QPushButton::click);
}

QWidget* AgentPanel::createReport() {
    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("error"));
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_error->hide();

    auto* answerLabel = new QLabel(tr("Model &answer:"), this);
    m_answer = new QPlainTextEdit(this);
    m_answer->setObjectName(QStringLiteral("answer"));
    m_answer->setReadOnly(true);
    m_answer->setTabChangesFocus(true);
    m_answer->setPlaceholderText(tr("The model's answer appears here as it is written."));
    answerLabel->setBuddy(m_answer);

    auto* timelineLabel = new QLabel(tr("Ste&ps:"), this);
    m_timeline = new QListWidget(this);
    m_timeline->setObjectName(QStringLiteral("timeline"));
    m_timeline->setIconSize(kTimelineIconSize);
    m_timeline->setWordWrap(true);
    m_timeline->setUniformItemSizes(false);
    m_timeline->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
    timelineLabel->setBuddy(m_timeline);

    m_stats = new QLabel(this);
    m_stats->setObjectName(QStringLiteral("stats"));
    m_stats->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* answerBox = new QWidget(this);
    auto* answerLayout = new QVBoxLayout(answerBox);
    answerLayout->setContentsMargins(0, 0, 0, 0);
    answerLayout->addWidget(answerLabel);
    answerLayout->addWidget(m_answer);
    auto* timelineBox = new QWidget(this);
    auto* timelineLayout = new QVBoxLayout(timelineBox);
    timelineLayout->setContentsMargins(0, 0, 0, 0);
    timelineLayout->addWidget(timelineLabel);
    timelineLayout->addWidget(m_timeline);
    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(answerBox);
    splitter->addWidget(timelineBox);
    splitter->setChildrenCollapsible(false);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 2);
    return splitter;
}

void AgentPanel::layOut(QLabel* instructionLabel, QWidget* report) {
    auto* targetButtons = new QVBoxLayout;
    targetButtons->addWidget(m_chooseTarget);
    targetButtons->addWidget(m_clearTarget);
    targetButtons->addStretch();
    auto* targetRow = new QHBoxLayout;
    targetRow->addWidget(m_target);
    targetRow->addLayout(targetButtons);
    targetRow->addStretch();

    auto* controls = new QHBoxLayout;
    controls->addWidget(m_start);
    controls->addWidget(m_pause);
    controls->addWidget(m_stop);
    controls->addStretch();

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(instructionLabel);
    layout->addWidget(m_instruction);
    layout->addLayout(targetRow);
    layout->addLayout(controls);
    layout->addWidget(m_error);
    layout->addWidget(report, 1);
    layout->addWidget(m_stats);

    setTabOrder(m_instruction, m_chooseTarget);
    setTabOrder(m_chooseTarget, m_clearTarget);
    setTabOrder(m_clearTarget, m_start);
    setTabOrder(m_start, m_pause);
    setTabOrder(m_pause, m_stop);
    setTabOrder(m_stop, m_answer);
    setTabOrder(m_answer, m_timeline);
}

QString AgentPanel::instruction() const {
    return m_instruction->toPlainText().trimmed();
}

void AgentPanel::setInstruction(const QString& text) {
    m_instruction->setPlainText(text);
}

bool AgentPanel::setTargetImage(const QString& path) {
    QImageReader reader(path);
    reader.setAutoTransform(true);
    const QImage image = reader.read();
    if (image.isNull()) {
        showError(tr("The target image %1 cannot be read: %2")
                      .arg(QFileInfo(path).fileName(), reader.errorString()));
        return false;
    }
    const qreal ratio = devicePixelRatioF();
    QImage thumbnail =
        image.scaled(kTargetSize * ratio, Qt::KeepAspectRatio, Qt::SmoothTransformation);
    thumbnail.setDevicePixelRatio(ratio);
    m_target->setPixmap(QPixmap::fromImage(thumbnail));
    m_target->setToolTip(tr("Target: %1 (%2 x %3)")
                             .arg(QDir::toNativeSeparators(path))
                             .arg(image.width())
                             .arg(image.height()));
    m_targetPath = path;
    m_clearTarget->setEnabled(!m_running);
    showError({});
    return true;
}

void AgentPanel::clearTarget() {
    m_targetPath.clear();
    m_target->setPixmap({});
    m_target->setText(tr("Drop a target image here (optional)"));
    m_target->setToolTip(tr("Drop an image of the page you want here, or choose one"));
    m_clearTarget->setEnabled(false);
}

void AgentPanel::chooseTarget() {
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Choose a target image"), QFileInfo(m_targetPath).absolutePath(),
        tr("Images (*.png *.jpg *.jpeg *.bmp *.webp);;All files (*)"));
    if (!path.isEmpty()) setTargetImage(path);
}

void AgentPanel::setMaxSteps(int maxSteps) {
    m_maxSteps = maxSteps;
    updateStats();
}

int AgentPanel::stepCount() const {
    return m_timeline->count();
}

QString AgentPanel::statsText() const {
    return m_stats->text();
}

QString AgentPanel::answerText() const {
    return m_answer->toPlainText();
}

QString AgentPanel::errorText() const {
    return m_error->isHidden() ? QString() : m_error->text();
}

bool AgentPanel::askConsent(const QString& action, const QString& reason) {
    QMessageBox box(
        QMessageBox::Warning, tr("Allow this action?"),
        tr("The agent wants to do:\n\n%1\n\nWhy this needs your consent: %2")
            .arg(action, reason.isEmpty() ? tr("you asked to confirm every action") : reason),
        QMessageBox::Yes | QMessageBox::No, this);
    box.setDefaultButton(QMessageBox::No);
    box.setEscapeButton(QMessageBox::No);
    box.button(QMessageBox::Yes)->setText(tr("&Allow"));
    box.button(QMessageBox::No)->setText(tr("&Refuse"));
    return box.exec() == QMessageBox::Yes;
}

void AgentPanel::showError(const QString& message) {
    m_error->setText(message);
    m_error->setVisible(!message.isEmpty());
}

void AgentPanel::requestStart() {
    if (m_running) return;
    const QString text = instruction();
    if (text.isEmpty()) {
        showError(tr("Write an instruction first."));
        m_instruction->setFocus();
        return;
    }
    showError({});
    Q_EMIT startRequested(text, m_targetPath);
}

void AgentPanel::setRunning(bool running) {
    m_running = running;
    m_instruction->setReadOnly(running);
    m_start->setEnabled(!running);
    m_chooseTarget->setEnabled(!running);
    m_clearTarget->setEnabled(!running && !m_targetPath.isEmpty());
    m_target->setAcceptDrops(!running);
    m_stop->setEnabled(running);
    m_pause->setEnabled(running);
    if (!running && m_pause->isChecked()) {
        const QSignalBlocker block(m_pause);
        m_pause->setChecked(false);
        m_pause->setText(tr("&Take over"));
    }
    if (running && m_state.isEmpty()) m_state = tr("starting");
    updateStats();
}

void AgentPanel::setPaused(bool paused) {
    if (!m_running || m_pause->isChecked() == paused) return;
    const QSignalBlocker block(m_pause);
    m_pause->setChecked(paused);
    showPaused(paused);
}

void AgentPanel::showPaused(bool paused) {
    m_pause->setText(paused ? tr("Give &back") : tr("&Take over"));
    m_pause->setToolTip(paused ? tr("Give control back to the agent")
                               : tr("Pause the agent after its current step and take over "
                                    "control"));
    m_state = paused ? tr("paused: you have control") : tr("running");
    updateStats();
}

void AgentPanel::onStarted(qint64 sessionId) {
    m_sessionId = sessionId;
    m_timeline->clear();
    m_answer->clear();
    m_lastStepMs.reset();
    m_lastTokensPerSecond.reset();
    m_totalTokens = 0;
    m_state = tr("running");
    showError({});
    setRunning(true);
}

void AgentPanel::onText(const QString& delta) {
    QScrollBar* bar = m_answer->verticalScrollBar();
    const bool following = bar->value() == bar->maximum();
    QTextCursor cursor(m_answer->document());
    cursor.movePosition(QTextCursor::End);
    cursor.insertText(delta);
    if (following) bar->setValue(bar->maximum());
}

void AgentPanel::onStep(const StepView& step) {
    QStringList lines;
    const QString actions =
        step.actions.isEmpty() ? tr("(no action)") : step.actions.join(QStringLiteral("; "));
    lines << QStringLiteral("%1: %2").arg(step.index + 1).arg(actions);
    QStringList details;
    if (step.score) details << tr("score %1").arg(*step.score, 0, 'f', 3);
    if (!step.verdict.isEmpty()) details << step.verdict;
    details << seconds(step.totalMs());
    lines << details.join(QStringLiteral(" · "));
    for (const QString& problem : step.problems)
        lines << QStringLiteral("⚠ %1").arg(problem);

    auto* item = new QListWidgetItem(lines.join(QLatin1Char('\n')));
    if (!step.thumbnail.isNull()) item->setIcon(QIcon(QPixmap::fromImage(step.thumbnail)));
    QString tip = step.thought.isEmpty() ? step.answer : step.thought;
    if (tip.size() > 600) tip = tip.left(600) + QStringLiteral("…");
    item->setToolTip(tip);
    item->setData(Qt::UserRole, step.index);
    if (!step.problems.isEmpty()) item->setForeground(QColor(0xb0, 0x00, 0x20));
    m_timeline->addItem(item);
    m_timeline->scrollToItem(item);

    m_lastStepMs = step.totalMs();
    if (step.tokensPerSecond > 0) m_lastTokensPerSecond = step.tokensPerSecond;
    m_totalTokens += step.promptTokens + step.completionTokens;
    // The next step's answer starts on a fresh line.
    if (!m_answer->document()->isEmpty()) onText(QStringLiteral("\n\n"));
    updateStats();
}

void AgentPanel::onFinished(const RunOutcome& outcome) {
    QString state = outcome.end;
    if (outcome.score) state += tr(", score %1").arg(*outcome.score, 0, 'f', 3);
    if (!outcome.message.isEmpty()) state += QStringLiteral(": ") + outcome.message;
    m_state = state;
    if (outcome.end == QStringLiteral("error"))
        showError(tr("The agent stopped: %1").arg(outcome.message));
    if (!outcome.recordingError.isEmpty())
        showError(tr("The session was not fully recorded: %1").arg(outcome.recordingError));
    setRunning(false);
}

void AgentPanel::onFailed(const QString& message) {
    m_state = tr("could not start");
    showError(message);
    setRunning(false);
}

void AgentPanel::updateStats() {
    QStringList parts;
    if (m_sessionId > 0) parts << tr("Session %1").arg(m_sessionId);
    parts << (m_maxSteps > 0 ? tr("steps %1/%2").arg(stepCount()).arg(m_maxSteps)
                             : tr("steps %1").arg(stepCount()));
    if (m_lastStepMs) parts << tr("last step %1").arg(seconds(*m_lastStepMs));
    if (m_lastTokensPerSecond) parts << tr("%1 tok/s").arg(*m_lastTokensPerSecond, 0, 'f', 1);
    if (m_totalTokens > 0) parts << tr("%1 tokens").arg(m_totalTokens);
    if (!m_state.isEmpty()) parts << m_state;
    m_stats->setText(parts.join(QStringLiteral(" · ")));
}

}  // namespace iris::app
