#pragma once
// The agent's controls and live report: the instruction, an optional target image (dropped or
// chosen), start / take over / stop, the model's streamed answer, a step timeline with
// thumbnails and a stats line. It only shows and asks; an AgentRunner does the work.
#include <optional>

#include <QString>
#include <QWidget>

#include "app/gui/agent_runner.h"

class QLabel;
class QListWidget;
class QPlainTextEdit;
class QPushButton;

namespace iris::app {

class ImageDropLabel;

class AgentPanel final : public QWidget {
    Q_OBJECT
public:
    explicit AgentPanel(QWidget* parent = nullptr);

    QString instruction() const;
    void setInstruction(const QString& text);
    QString targetPath() const { return m_targetPath; }
    // Shows the image's thumbnail; false (with the reason shown inline) when it cannot be read.
    bool setTargetImage(const QString& path);
    void clearTarget();
    void setMaxSteps(int maxSteps);
    bool isRunning() const { return m_running; }
    int stepCount() const;
    QString statsText() const;
    QString answerText() const;
    QString errorText() const;  // the inline error, empty when none

    // A modal question before a risky action (default: refuse); fits
    // AgentRunner::setConsentAsker.
    bool askConsent(const QString& action, const QString& reason);

public Q_SLOTS:
    void setRunning(bool running);
    // Mirrors a pause toggled elsewhere (the main window's toolbar) without emitting pauseToggled.
    void setPaused(bool paused);
    void onStarted(qint64 sessionId);
    void onText(const QString& delta);
    void onStep(const iris::app::StepView& step);
    void onFinished(const iris::app::RunOutcome& outcome);
    void onFailed(const QString& message);
    void showError(const QString& message);

Q_SIGNALS:
    void startRequested(const QString& instruction, const QString& targetPath);
    void stopRequested();
    void pauseToggled(bool paused);  // true: the person takes over

private:
    // The constructor's parts: each creates its widgets (children of the panel) and connects
    // them; layOut arranges them and sets the tab order.
    QLabel* createInstructionEditor();  // returns the editor's caption
    void createTargetPicker();
    void createControls();
    QWidget* createReport();  // the error line and stats; returns the answer/steps splitter
    void layOut(QLabel* instructionLabel, QWidget* report);

    void requestStart();
    void chooseTarget();
    void updateStats();
    void showPaused(bool paused);

    QPlainTextEdit* m_instruction = nullptr;
    ImageDropLabel* m_target = nullptr;
    QPushButton* m_chooseTarget = nullptr;
    QPushButton* m_clearTarget = nullptr;
    QPushButton* m_start = nullptr;
    QPushButton* m_pause = nullptr;
    QPushButton* m_stop = nullptr;
    QLabel* m_error = nullptr;
    QPlainTextEdit* m_answer = nullptr;
    QListWidget* m_timeline = nullptr;
    QLabel* m_stats = nullptr;

    QString m_targetPath;
    bool m_running = false;
    int m_maxSteps = 0;
    qint64 m_sessionId = 0;
    std::optional<double> m_lastStepMs;
    std::optional<double> m_lastTokensPerSecond;
    long long m_totalTokens = 0;
    QString m_state;  // "running", "paused", "done (score 0.97)", ...
};

}  // namespace iris::app
