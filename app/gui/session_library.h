#pragma once
// The session library: every session in one SessionStore database, searchable by instruction
// text and start date, with status, steps and score. Opening and replaying a session, and forking
// one, are asked of the owner by signals; export (OSWorld layout, on a worker thread) and delete
// (after confirmation) happen here. Store errors show in an inline label naming the file.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include <QWidget>

#include "agent/recording/recording_types.h"
#include "agent/recording/session_store.h"
#include "base/status.h"

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QModelIndex;
class QTableView;

namespace iris::app {

class SessionTableModel;
class SessionFilterModel;

class SessionLibraryWidget final : public QWidget {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(SessionLibraryWidget)

public:
    // How far back the date filter reaches (the "since" combo box, in this order).
    enum class Since { AllTime, Today, Last7Days, Last30Days };

    explicit SessionLibraryWidget(QWidget* parent = nullptr);
    ~SessionLibraryWidget() override;

    // Opens (creating when missing) the database and lists its sessions. On failure the inline
    // error names the file and the table is emptied.
    Status setDatabase(const std::filesystem::path& dbFile);
    const std::filesystem::path& database() const { return m_dbFile; }

    // Lists the sessions again, keeping the selection where the session still exists.
    Status refresh();

    // The search box's text (instruction substring, case-insensitive) and the date filter.
    void setSearchText(const QString& text);
    void setSince(Since since);

    int visibleSessionCount() const;
    std::optional<qint64> sessionAt(int visibleRow) const;
    std::optional<qint64> selectedSession() const;
    void selectSession(qint64 id);

    // The whole record of one session, for the viewer.
    Result<agent::SessionRecord> loadSession(qint64 id);

    // Writes the session in OSWorld's layout into `directory` on a worker thread; exportFinished
    // reports the outcome. One export at a time: a second one while busy fails at once.
    void exportSession(qint64 id, const QString& directory);
    bool isExporting() const { return m_exporting; }

    // Without asking. The inline error shows a failure.
    Status deleteSession(qint64 id);

    QString errorText() const;
    QString messageText() const;

Q_SIGNALS:
    void sessionActivated(qint64 session);
    void replayRequested(qint64 session);
    void forkRequested(qint64 session, int fromStep);
    void exportFinished(qint64 session, bool ok, const QString& message);
    void sessionDeleted(qint64 session);

private:
    void createActions();
    void updateActions();
    void showError(const QString& text);
    void showMessage(const QString& text);
    void onActivated(const QModelIndex& index);
    void onContextMenu(const QPoint& position);
    void askFork();
    void askExport();
    void askDelete();
    void onExportDone(qint64 id, bool ok, const QString& message);

    std::filesystem::path m_dbFile;
    std::optional<agent::SessionStore> m_store;

    SessionTableModel* m_model = nullptr;
    SessionFilterModel* m_filter = nullptr;
    QLineEdit* m_search = nullptr;
    QComboBox* m_since = nullptr;
    QTableView* m_table = nullptr;
    QLabel* m_error = nullptr;
    QLabel* m_message = nullptr;

    QAction* m_openAction = nullptr;
    QAction* m_replayAction = nullptr;
    QAction* m_forkAction = nullptr;
    QAction* m_exportAction = nullptr;
    QAction* m_deleteAction = nullptr;
    QAction* m_refreshAction = nullptr;

    bool m_exporting = false;
    // Joined on destruction: the export opens its own store connection, which must not outlive
    // the widget's process teardown.
    std::jthread m_exportThread;
};

}  // namespace iris::app
