#pragma once

#include <QMainWindow>

class QLabel;
class QListWidget;
class QPlainTextEdit;

namespace iris::app {

// The main window: live view in the centre, the session panel (instruction, steps) beside it,
// engine facts in the status bar. Lives on the GUI thread.
class MainWindow final : public QMainWindow {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(MainWindow)

public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

private:
    void createMenus();
    void createCentralArea();
    void createStatusBar();
    void onHelpAbout();

    QLabel* m_liveView = nullptr;
    QPlainTextEdit* m_instruction = nullptr;
    QListWidget* m_steps = nullptr;
};

}  // namespace iris::app
