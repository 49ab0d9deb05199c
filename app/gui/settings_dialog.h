#pragma once
// The settings dialog: model backend (local GGUF + mmproj, or an OpenAI-compatible endpoint),
// engine, agent, safety and storage options. Checks as the user types: chosen GGUF files are
// parsed on a background thread and summarised ("qwen2 · 494M parameters · Q8_0") or their error
// shown; OK stays disabled while any problem (see problems()) or check is outstanding.

#include <future>
#include <vector>

#include <QDialog>
#include <QString>

#include "app/gui/settings.h"

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QRadioButton;
class QSpinBox;
class QTimer;
class QWidget;

namespace iris::app {

class ModelsPanel;

class SettingsDialog final : public QDialog {
    Q_OBJECT

public:
    explicit SettingsDialog(const AppSettings& initial, QWidget* parent = nullptr);
    ~SettingsDialog() override;  // waits for running file checks (they only parse headers)

    AppSettings settings() const;
    void setSettings(const AppSettings& settings);

    // What currently keeps OK disabled, as shown in the dialog; empty when OK is enabled
    // (a pending file check shows as "Checking ...").
    QStringList currentProblems() const;

private:
    // A GGUF path field with its background check. `generation` discards results of paths
    // the user has since changed.
    struct GgufField {
        QLineEdit* edit = nullptr;
        QLabel* info = nullptr;
        QTimer* debounce = nullptr;
        GgufRole role = GgufRole::LanguageModel;
        quint64 generation = 0;
        bool pending = false;
        QString summary;
        QString error;
    };

    QWidget* buildModelSection();
    QWidget* buildModelsSection();  // pulled and catalogue models (models_panel.h)
    QWidget* buildEngineSection();
    QWidget* buildAgentSection();
    QWidget* buildSafetySection();
    QWidget* buildStorageSection();
    QWidget* pathRow(QLineEdit* edit, const QString& browseName, const QString& browseTip,
                     void (SettingsDialog::*browse)());
    void setUpGgufField(GgufField& field, QLineEdit* edit, QLabel* info, GgufRole role);

    void browseModel();
    void browseMmproj();
    void browseDatabase();
    void browseGguf(QLineEdit* edit, const QString& title);

    void startCheck(GgufField& field);
    void finishCheck(GgufField* field, quint64 generation, bool ok, const QString& text);
    void updateApiKeyStatus();
    void updateBackend();
    void revalidate();

    QRadioButton* m_local = nullptr;
    QRadioButton* m_endpoint = nullptr;
    QWidget* m_localPanel = nullptr;
    QWidget* m_endpointPanel = nullptr;
    GgufField m_model;
    GgufField m_mmproj;
    QLineEdit* m_endpointUrl = nullptr;
    QLineEdit* m_endpointModelName = nullptr;
    QLineEdit* m_apiKeyEnv = nullptr;
    QLabel* m_apiKeyStatus = nullptr;
    QSpinBox* m_threads = nullptr;
    QSpinBox* m_contextSize = nullptr;
    QCheckBox* m_shareEngine = nullptr;
    QComboBox* m_actionFormat = nullptr;
    QSpinBox* m_screenshots = nullptr;
    QSpinBox* m_maxSteps = nullptr;
    QSpinBox* m_viewportWidth = nullptr;
    QSpinBox* m_viewportHeight = nullptr;
    QCheckBox* m_confirmRisky = nullptr;
    QCheckBox* m_confirmEvery = nullptr;
    QLineEdit* m_database = nullptr;
    ModelsPanel* m_models = nullptr;
    QLabel* m_problems = nullptr;
    QDialogButtonBox* m_buttons = nullptr;
    QStringList m_currentProblems;
    std::vector<std::future<void>> m_checks;  // std::async futures: their destructors wait
};

}  // namespace iris::app
