#pragma once
// Settings ▸ Models: the models pulled into the store and the catalogue's, a pull with a
// progress bar and a Cancel button, and "Use", which hands the chosen model's file, its
// projector and its action format to the settings dialog (the pair comes from the store's
// manifest, so they always belong together). The pull runs on a thread of its own
// (app/models/model_pull.h) and reports through queued calls; a cancelled or interrupted pull
// keeps its partial file, and the next pull of the same model resumes it.
#include <atomic>
#include <filesystem>
#include <optional>
#include <thread>

#include <QString>
#include <QWidget>

#include "app/models/catalogue.h"
#include "app/models/hub_client.h"
#include "app/models/model_store.h"

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTreeWidget;

namespace iris::app {

struct ModelsPanelOptions {
    std::filesystem::path storeDirectory = models::defaultModelsDirectory();
    std::filesystem::path cataloguePath;  // empty: the bundled one (dataDirectory())
    models::HubOptions hub = models::hubOptionsFromEnvironment();
};

class ModelsPanel final : public QWidget {
    Q_OBJECT

public:
    explicit ModelsPanel(ModelsPanelOptions options = {}, QWidget* parent = nullptr);
    ~ModelsPanel() override;  // cancels a running pull and waits for its thread
    Q_DISABLE_COPY_MOVE(ModelsPanel)

    // Re-reads the store (offline).
    void refresh();
    bool pulling() const { return m_thread.joinable() && !m_finished; }

Q_SIGNALS:
    // The user chose a pulled model: its file, its projector (empty: none) and, when the
    // catalogue knows it, its action format ("uitars"; empty otherwise).
    void modelChosen(const QString& modelPath, const QString& mmprojPath,
                     const QString& actionFormat);

private:
    void startPull();
    void finishPull(bool ok, const QString& message);
    void useSelected();
    void selectionChanged();

    ModelsPanelOptions m_options;
    models::ModelStore m_store;
    models::Catalogue m_catalogue;
    QTreeWidget* m_list = nullptr;
    QLineEdit* m_reference = nullptr;
    QPushButton* m_pull = nullptr;
    QPushButton* m_cancel = nullptr;
    QPushButton* m_use = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_status = nullptr;
    std::thread m_thread;
    std::atomic<bool> m_cancelRequested = false;
    std::atomic<bool> m_finished = true;
};

}  // namespace iris::app
