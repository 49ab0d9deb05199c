#pragma once
// "Check Grounding": the grounding self-test of `iris models check` (app/session/
// grounding_check.h) for the model the settings choose. The model loads and the check runs on a
// worker thread; the pages render in browsers on the GUI thread. Each page's line shows as it
// finishes, then the report; Stop ends the check after the page in flight (its model call is
// cancelled) and shows the report of the pages that ran.
#include <atomic>
#include <memory>
#include <mutex>

#include <QDialog>

#include "app/gui/settings.h"

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace iris::agent {
class ModelClient;
}

namespace iris::app {

class GroundingDialog final : public QDialog {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(GroundingDialog)

public:
    explicit GroundingDialog(const AppSettings& settings, QWidget* parent = nullptr);
    ~GroundingDialog() override;  // stops a running check; the worker finishes on its own

    bool isRunning() const { return m_run != nullptr; }
    // What the log shows: one line per finished page, then the report.
    QString logText() const;

    // For tests: the check's pages and seed before start().
    void setPages(int pages, int seed);
    void start();
    void stop();

Q_SIGNALS:
    void finished(bool ok);  // the check ended (ok: a report was shown)

private:
    // Shared with the worker thread, which outlives the dialog when it is closed mid-check.
    struct Run {
        std::atomic<bool> stop{false};
        std::mutex mutex;                         // guards client
        agent::ModelClient* client = nullptr;  // while the check uses it: stop() cancels it
    };

    void onPage(const QString& line, int done, int total);
    void onDone(bool ok, const QString& text);

    AppSettings m_settings;
    QSpinBox* m_pages = nullptr;
    QSpinBox* m_seed = nullptr;
    QLabel* m_status = nullptr;
    QProgressBar* m_progress = nullptr;
    QPlainTextEdit* m_log = nullptr;
    QPushButton* m_startButton = nullptr;
    QPushButton* m_stopButton = nullptr;
    std::shared_ptr<Run> m_run;
};

}  // namespace iris::app
