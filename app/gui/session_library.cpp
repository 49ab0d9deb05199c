#include "app/gui/session_library.h"

#include <utility>
#include <vector>

#include <QAbstractTableModel>
#include <QAction>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPointer>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include "agent/recording/osworld_export.h"

namespace iris::app {

namespace {

enum Column { kId, kStarted, kStatus, kSteps, kScore, kInstruction, kColumnCount };

constexpr int kSortRole = Qt::UserRole;
constexpr int kIdRole = Qt::UserRole + 1;

// "<what> <file>: <why>", leaving the file out when the store's message already names it.
QString failureText(const QString& what, const std::filesystem::path& file, const Status& status) {
    const QString why = QString::fromStdString(status.message());
    const QString path = QString::fromStdString(file.string());
    if (why.contains(path)) return QStringLiteral("%1: %2").arg(what, why);
    return QStringLiteral("%1 %2: %3").arg(what, path, why);
}

QString startedText(std::int64_t ms) {
    return QDateTime::fromMSecsSinceEpoch(ms).toString(QStringLiteral("yyyy-MM-dd hh:mm"));
}

}  // namespace

// The sessions as listed by the store, one row each.
class SessionTableModel final : public QAbstractTableModel {
public:
    using QAbstractTableModel::QAbstractTableModel;

    void setSessions(std::vector<agent::SessionSummary> sessions) {
        beginResetModel();
        m_sessions = std::move(sessions);
        endResetModel();
    }

    int rowCount(const QModelIndex& parent = {}) const override {
        return parent.isValid() ? 0 : static_cast<int>(m_sessions.size());
    }
    int columnCount(const QModelIndex& parent = {}) const override {
        return parent.isValid() ? 0 : kColumnCount;
    }

    QVariant data(const QModelIndex& index, int role) const override {
        if (!index.isValid() || index.row() >= rowCount()) return {};
        const agent::SessionSummary& s = m_sessions[static_cast<std::size_t>(index.row())];
        if (role == kIdRole) return QVariant::fromValue<qint64>(s.id);
        const int column = index.column();
        if (role == kSortRole) {
            switch (column) {
                case kId:
                    return QVariant::fromValue<qint64>(s.id);
                case kStarted:
                    return QVariant::fromValue<qint64>(s.createdAtMs);
                case kStatus:
                    return QString::fromUtf8(
                        agent::sessionStatusName(s.status).data(),
                        static_cast<qsizetype>(agent::sessionStatusName(s.status).size()));
                case kSteps:
                    return s.stepCount;
                case kScore:
                    return s.score ? *s.score : -1.0;
                case kInstruction:
                    return QString::fromStdString(s.instruction);
                default:
                    return {};
            }
        }
        if (role == Qt::DisplayRole) {
            switch (column) {
                case kId:
                    return QString::number(s.id);
                case kStarted:
                    return startedText(s.createdAtMs);
                case kStatus: {
                    const std::string_view name = agent::sessionStatusName(s.status);
                    return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
                }
                case kSteps:
                    return QString::number(s.stepCount);
                case kScore:
                    return s.score ? QString::number(*s.score, 'f', 2) : QStringLiteral("–");
                case kInstruction: {
                    // One line in the table; the tooltip has the whole text.
                    QString text = QString::fromStdString(s.instruction).simplified();
                    if (s.forkedFrom) {
                        text = QStringLiteral("[fork of %1] ").arg(*s.forkedFrom) + text;
                    }
                    return text;
                }
                default:
                    return {};
            }
        }
        if (role == Qt::ToolTipRole && column == kInstruction) {
            return QString::fromStdString(s.instruction);
        }
        if (role == Qt::TextAlignmentRole &&
            (column == kId || column == kSteps || column == kScore)) {
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        }
        return {};
    }

    QVariant headerData(int section, Qt::Orientation orientation, int role) const override {
        if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
        switch (section) {
            case kId:
                return tr("Id");
            case kStarted:
                return tr("Started");
            case kStatus:
                return tr("Status");
            case kSteps:
                return tr("Steps");
            case kScore:
                return tr("Score");
            case kInstruction:
                return tr("Instruction");
            default:
                return {};
        }
    }

    const agent::SessionSummary* find(qint64 id) const {
        for (const auto& s : m_sessions) {
            if (s.id == id) return &s;
        }
        return nullptr;
    }

private:
    std::vector<agent::SessionSummary> m_sessions;
};

// Filters by instruction text and by start time; sorts by the raw values, not the display text.
class SessionFilterModel final : public QSortFilterProxyModel {
public:
    explicit SessionFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {
        setSortRole(kSortRole);
    }

    void setSearch(const QString& text) {
        m_search = text.trimmed();
        invalidateFilter();
    }
    void setNotBeforeMs(std::optional<std::int64_t> ms) {
        m_notBeforeMs = ms;
        invalidateFilter();
    }

protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
        const QAbstractItemModel* source = sourceModel();
        if (m_notBeforeMs) {
            const qint64 started =
                source->index(row, kStarted, parent).data(kSortRole).toLongLong();
            if (started < *m_notBeforeMs) return false;
        }
        if (m_search.isEmpty()) return true;
        const QString instruction =
            source->index(row, kInstruction, parent).data(kSortRole).toString();
        return instruction.contains(m_search, Qt::CaseInsensitive);
    }

private:
    QString m_search;
    std::optional<std::int64_t> m_notBeforeMs;
};

SessionLibraryWidget::SessionLibraryWidget(QWidget* parent) : QWidget(parent) {
    m_model = new SessionTableModel(this);
    m_filter = new SessionFilterModel(this);
    m_filter->setSourceModel(m_model);

    m_search = new QLineEdit(this);
    m_search->setPlaceholderText(tr("Search instructions"));
    m_search->setClearButtonEnabled(true);
    auto* searchLabel = new QLabel(tr("&Search:"), this);
    searchLabel->setBuddy(m_search);

    m_since = new QComboBox(this);
    m_since->addItems({tr("All time"), tr("Today"), tr("Last 7 days"), tr("Last 30 days")});
    auto* sinceLabel = new QLabel(tr("Si&nce:"), this);
    sinceLabel->setBuddy(m_since);

    m_table = new QTableView(this);
    m_table->setModel(m_filter);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(kStarted, Qt::DescendingOrder);
    m_table->setContextMenuPolicy(Qt::CustomContextMenu);
    m_table->verticalHeader()->hide();
    m_table->setAlternatingRowColors(true);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(kInstruction, QHeaderView::Stretch);
    m_table->setWordWrap(false);

    m_error = new QLabel(this);
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->setStyleSheet(QStringLiteral("QLabel { color: #b00020; font-weight: bold; }"));
    m_error->hide();
    m_message = new QLabel(this);
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_message->hide();

    createActions();

    auto* filters = new QHBoxLayout;
    filters->addWidget(searchLabel);
    filters->addWidget(m_search, 1);
    filters->addWidget(sinceLabel);
    filters->addWidget(m_since);

    auto* buttons = new QHBoxLayout;
    for (QAction* action : {m_openAction, m_replayAction, m_forkAction, m_exportAction,
                            m_deleteAction, m_refreshAction}) {
        auto* button = new QToolButton(this);
        button->setDefaultAction(action);
        button->setToolButtonStyle(Qt::ToolButtonTextOnly);
        button->setFocusPolicy(Qt::StrongFocus);
        buttons->addWidget(button);
        if (action == m_deleteAction) buttons->addStretch(1);
    }

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(filters);
    layout->addWidget(m_error);
    layout->addWidget(m_table, 1);
    layout->addWidget(m_message);
    layout->addLayout(buttons);

    setTabOrder(m_search, m_since);
    setTabOrder(m_since, m_table);

    connect(m_search, &QLineEdit::textChanged, this,
            [this](const QString& text) { m_filter->setSearch(text); });
    connect(m_since, &QComboBox::currentIndexChanged, this,
            [this](int index) { setSince(static_cast<Since>(index)); });
    connect(m_table, &QAbstractItemView::activated, this, &SessionLibraryWidget::onActivated);
    connect(m_table, &QWidget::customContextMenuRequested, this,
            &SessionLibraryWidget::onContextMenu);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            [this] { updateActions(); });
    connect(m_filter, &QAbstractItemModel::modelReset, this, [this] { updateActions(); });
    connect(m_filter, &QAbstractItemModel::layoutChanged, this, [this] { updateActions(); });
    updateActions();
}

SessionLibraryWidget::~SessionLibraryWidget() = default;

void SessionLibraryWidget::createActions() {
    auto make = [this](const QString& text, const QKeySequence& shortcut, auto slot) {
        auto* action = new QAction(text, this);
        if (!shortcut.isEmpty()) {
            action->setShortcut(shortcut);
            action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        }
        addAction(action);
        connect(action, &QAction::triggered, this, slot);
        return action;
    };
    m_openAction = make(tr("&Open"), QKeySequence(), [this] {
        if (const auto id = selectedSession()) Q_EMIT sessionActivated(*id);
    });
    m_replayAction = make(tr("&Replay"), QKeySequence(Qt::CTRL | Qt::Key_R), [this] {
        if (const auto id = selectedSession()) Q_EMIT replayRequested(*id);
    });
    m_forkAction = make(tr("&Fork from step…"), QKeySequence(), [this] { askFork(); });
    m_exportAction =
        make(tr("E&xport…"), QKeySequence(Qt::CTRL | Qt::Key_E), [this] { askExport(); });
    m_deleteAction =
        make(tr("&Delete"), QKeySequence(QKeySequence::Delete), [this] { askDelete(); });
    m_refreshAction = make(tr("Re&fresh"), QKeySequence(QKeySequence::Refresh),
                           [this] { static_cast<void>(refresh()); });
    m_openAction->setToolTip(tr("Step through the selected session (Enter)"));
}

void SessionLibraryWidget::updateActions() {
    const auto selected = selectedSession();
    const agent::SessionSummary* summary = selected ? m_model->find(*selected) : nullptr;
    m_openAction->setEnabled(summary != nullptr);
    m_replayAction->setEnabled(summary != nullptr && summary->stepCount > 0);
    m_forkAction->setEnabled(summary != nullptr);
    m_exportAction->setEnabled(summary != nullptr && !m_exporting);
    m_deleteAction->setEnabled(summary != nullptr);
    m_refreshAction->setEnabled(m_store.has_value());
}

void SessionLibraryWidget::showError(const QString& text) {
    m_error->setText(text);
    m_error->setVisible(!text.isEmpty());
}

void SessionLibraryWidget::showMessage(const QString& text) {
    m_message->setText(text);
    m_message->setVisible(!text.isEmpty());
}

QString SessionLibraryWidget::errorText() const {
    return m_error->text();
}
QString SessionLibraryWidget::messageText() const {
    return m_message->text();
}

Status SessionLibraryWidget::setDatabase(const std::filesystem::path& dbFile) {
    m_dbFile = dbFile;
    m_store.reset();
    m_model->setSessions({});
    auto store = agent::SessionStore::open(dbFile);
    if (!store) {
        showError(failureText(tr("Cannot open the session library"), dbFile, store.status()));
        updateActions();
        return store.status();
    }
    m_store.emplace(std::move(store).value());
    return refresh();
}

Status SessionLibraryWidget::refresh() {
    if (!m_store) {
        const Status status = Status::invalidArgument("no session library is open");
        showError(tr("No session library is open."));
        return status;
    }
    const std::optional<qint64> selected = selectedSession();
    auto sessions = m_store->listSessions();
    if (!sessions) {
        showError(failureText(tr("Cannot list the sessions in"), m_dbFile, sessions.status()));
        m_model->setSessions({});
        updateActions();
        return sessions.status();
    }
    showError({});
    m_model->setSessions(std::move(sessions).value());
    if (selected) selectSession(*selected);
    updateActions();
    return Status::ok();
}

void SessionLibraryWidget::setSearchText(const QString& text) {
    m_search->setText(text);
}

void SessionLibraryWidget::setSince(Since since) {
    const int index = static_cast<int>(since);
    if (m_since->currentIndex() != index) {
        m_since->setCurrentIndex(index);  // comes back here through the signal
        return;
    }
    const QDateTime now = QDateTime::currentDateTime();
    std::optional<std::int64_t> notBefore;
    switch (since) {
        case Since::AllTime:
            break;
        case Since::Today:
            notBefore = QDateTime(now.date(), QTime(0, 0)).toMSecsSinceEpoch();
            break;
        case Since::Last7Days:
            notBefore = now.addDays(-7).toMSecsSinceEpoch();
            break;
        case Since::Last30Days:
            notBefore = now.addDays(-30).toMSecsSinceEpoch();
            break;
    }
    m_filter->setNotBeforeMs(notBefore);
}

int SessionLibraryWidget::visibleSessionCount() const {
    return m_filter->rowCount();
}

std::optional<qint64> SessionLibraryWidget::sessionAt(int visibleRow) const {
    if (visibleRow < 0 || visibleRow >= m_filter->rowCount()) return std::nullopt;
    return m_filter->index(visibleRow, kId).data(kIdRole).toLongLong();
}

std::optional<qint64> SessionLibraryWidget::selectedSession() const {
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    if (rows.isEmpty()) return std::nullopt;
    return rows.front().data(kIdRole).toLongLong();
}

void SessionLibraryWidget::selectSession(qint64 id) {
    for (int row = 0; row < m_filter->rowCount(); ++row) {
        const QModelIndex index = m_filter->index(row, kId);
        if (index.data(kIdRole).toLongLong() == id) {
            m_table->setCurrentIndex(index);
            m_table->selectRow(row);
            return;
        }
    }
}

Result<agent::SessionRecord> SessionLibraryWidget::loadSession(qint64 id) {
    if (!m_store) return Status::invalidArgument("no session library is open");
    auto record = m_store->loadSession(id);
    if (!record) {
        showError(
            failureText(tr("Cannot load session %1 from").arg(id), m_dbFile, record.status()));
    }
    return record;
}

void SessionLibraryWidget::onActivated(const QModelIndex& index) {
    if (!index.isValid()) return;
    Q_EMIT sessionActivated(index.data(kIdRole).toLongLong());
}

void SessionLibraryWidget::onContextMenu(const QPoint& position) {
    if (!m_table->indexAt(position).isValid()) return;
    QMenu menu(this);
    menu.addAction(m_openAction);
    menu.addAction(m_replayAction);
    menu.addAction(m_forkAction);
    menu.addSeparator();
    menu.addAction(m_exportAction);
    menu.addAction(m_deleteAction);
    menu.exec(m_table->viewport()->mapToGlobal(position));
}

void SessionLibraryWidget::askFork() {
    const auto id = selectedSession();
    if (!id) return;
    const agent::SessionSummary* summary = m_model->find(*id);
    if (summary == nullptr) return;
    bool ok = false;
    // Steps [0, n) are kept; the new run continues from step n.
    const int step = QInputDialog::getInt(
        this, tr("Fork session %1").arg(*id),
        tr("Keep the first how many steps? The new run continues from that step (0–%1).")
            .arg(summary->stepCount),
        summary->stepCount, 0, summary->stepCount, 1, &ok);
    if (ok) Q_EMIT forkRequested(*id, step);
}

void SessionLibraryWidget::askExport() {
    const auto id = selectedSession();
    if (!id) return;
    const QString parent = QFileDialog::getExistingDirectory(
        this, tr("Export session %1 (OSWorld layout) into").arg(*id), QDir::homePath());
    if (parent.isEmpty()) return;
    exportSession(*id, QDir(parent).filePath(QStringLiteral("iris-session-%1").arg(*id)));
}

void SessionLibraryWidget::exportSession(qint64 id, const QString& directory) {
    auto refuse = [&](const QString& why) {
        showError(why);
        Q_EMIT exportFinished(id, false, why);
    };
    if (m_exporting) return refuse(tr("Another export is still running."));
    if (m_dbFile.empty()) return refuse(tr("No session library is open."));
    m_exporting = true;
    updateActions();
    showMessage(tr("Exporting session %1 to %2…").arg(id).arg(directory));
    if (m_exportThread.joinable()) m_exportThread.join();
    // The worker opens its own connection: a SessionStore belongs to one thread.
    m_exportThread = std::jthread([this, id, db = m_dbFile,
                                   dir = std::filesystem::path(directory.toStdString())] {
        Status status = Status::ok();
        auto store = agent::SessionStore::open(db);
        if (!store) {
            status = store.status();
        } else if (auto record = store->loadSession(id); !record) {
            status = record.status();
        } else {
            status = agent::exportOsworld(*record, dir);
        }
        const bool ok = status.isOk();
        const QString message =
            ok ? tr("Exported session %1 to %2.").arg(id).arg(QString::fromStdString(dir.string()))
               : tr("Export of session %1 failed: %2")
                     .arg(id)
                     .arg(QString::fromStdString(status.message()));
        // Queued to the GUI thread; dropped if the widget is gone by then.
        QMetaObject::invokeMethod(
            this, [this, id, ok, message] { onExportDone(id, ok, message); }, Qt::QueuedConnection);
    });
}

void SessionLibraryWidget::onExportDone(qint64 session, bool ok, const QString& message) {
    if (m_exportThread.joinable()) m_exportThread.join();  // it has finished its work
    m_exporting = false;
    updateActions();
    if (ok) {
        showMessage(message);
    } else {
        showMessage({});
        showError(message);
    }
    Q_EMIT exportFinished(session, ok, message);
}

void SessionLibraryWidget::askDelete() {
    const auto id = selectedSession();
    if (!id) return;
    const agent::SessionSummary* summary = m_model->find(*id);
    const QString instruction =
        summary ? QString::fromStdString(summary->instruction).simplified().left(120) : QString();
    const auto answer = QMessageBox::question(
        this, tr("Delete session %1").arg(*id),
        tr("Delete session %1 (“%2”) with all its steps and screenshots? This cannot be undone.")
            .arg(*id)
            .arg(instruction),
        QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Yes) return;
    // A failure is shown in the inline error label.
    static_cast<void>(deleteSession(*id));
}

Status SessionLibraryWidget::deleteSession(qint64 id) {
    if (!m_store) return Status::invalidArgument("no session library is open");
    const Status status = m_store->deleteSession(id);
    if (!status.isOk()) {
        showError(failureText(tr("Cannot delete session %1 from").arg(id), m_dbFile, status));
        return status;
    }
    showMessage(tr("Deleted session %1.").arg(id));
    Q_EMIT sessionDeleted(id);
    return refresh();
}

}  // namespace iris::app
