#include "app/gui/settings_dialog.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

#include "app/gui/models_panel.h"

namespace iris::app {
namespace {

constexpr int kCheckDelayMs = 250;  // typing a path should not parse every prefix of it

const QString kGgufFilter = QStringLiteral("GGUF files (*.gguf);;All files (*)");

struct FormatChoice {
    const char* name;  // agent::actionFormatFromName
    const char* label;
};
constexpr FormatChoice kFormats[] = {
    {"tools", "Tool calls (OpenAI / Qwen)"},
    {"uitars", "UI-TARS"},
    {"pyautogui", "OSWorld pyautogui"},
    {"computer13", "OSWorld computer_13"},
};

QLabel* makeInfoLabel(const QString& name) {
    auto* label = new QLabel;
    label->setObjectName(name);
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

enum class Tone { Normal, Warning, Error };

void showInfo(QLabel* label, const QString& text, Tone tone) {
    label->setText(text);
    // The palette's own colours for normal text; fixed ones for warnings and errors, readable on
    // both light and dark themes.
    label->setStyleSheet(tone == Tone::Error     ? QStringLiteral("color: #d32f2f;")
                         : tone == Tone::Warning ? QStringLiteral("color: #b26a00;")
                                                 : QString());
    label->setVisible(!text.isEmpty());
}

QString startFolder(const QString& path) {
    if (path.isEmpty()) return QDir::homePath();
    const QFileInfo info(path);
    return info.isDir() ? path : info.absolutePath();
}

}  // namespace

SettingsDialog::SettingsDialog(const AppSettings& initial, QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("settingsDialog"));
    setWindowTitle(tr("Iris Settings"));

    auto* columns = new QHBoxLayout;
    auto* left = new QVBoxLayout;
    left->addWidget(buildModelSection());
    left->addWidget(buildEngineSection());
    left->addStretch();
    auto* right = new QVBoxLayout;
    right->addWidget(buildAgentSection());
    right->addWidget(buildSafetySection());
    right->addWidget(buildStorageSection());
    right->addWidget(buildModelsSection());
    right->addStretch();
    columns->addLayout(left, 3);
    columns->addLayout(right, 2);

    m_problems = makeInfoLabel(QStringLiteral("problems"));

    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel |
                                     QDialogButtonBox::RestoreDefaults);
    m_buttons->setObjectName(QStringLiteral("buttons"));
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_buttons->button(QDialogButtonBox::RestoreDefaults), &QPushButton::clicked, this,
            [this] { setSettings(AppSettings{}); });

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(columns);
    layout->addWidget(m_problems);
    layout->addWidget(m_buttons);

    setSettings(initial);
}

SettingsDialog::~SettingsDialog() {
    // Join the checks before any member they report to goes away; their queued results die with
    // this QObject.
    m_checks.clear();
}

QWidget* SettingsDialog::buildModelsSection() {
    auto* box = new QGroupBox(tr("Models"));
    auto* layout = new QVBoxLayout(box);
    m_models = new ModelsPanel;
    layout->addWidget(m_models);
    // A pulled model comes with its projector and, from the catalogue, its action format.
    connect(m_models, &ModelsPanel::modelChosen, this,
            [this](const QString& model, const QString& mmproj, const QString& format) {
                m_local->setChecked(true);
                m_model.edit->setText(model);
                m_mmproj.edit->setText(mmproj);
                if (const int index = m_actionFormat->findData(format); index >= 0)
                    m_actionFormat->setCurrentIndex(index);
                updateBackend();
            });
    return box;
}

QWidget* SettingsDialog::buildModelSection() {
    auto* box = new QGroupBox(tr("Model"));
    m_local = new QRadioButton(tr("&Local model (Iris's engine)"));
    m_local->setObjectName(QStringLiteral("backendLocal"));
    m_endpoint = new QRadioButton(tr("&OpenAI-compatible endpoint"));
    m_endpoint->setObjectName(QStringLiteral("backendEndpoint"));
    auto* group = new QButtonGroup(box);
    group->addButton(m_local);
    group->addButton(m_endpoint);
    connect(m_local, &QRadioButton::toggled, this, [this] { updateBackend(); });

    m_localPanel = new QWidget;
    auto* localForm = new QFormLayout(m_localPanel);
    localForm->setContentsMargins(24, 0, 0, 0);
    auto* modelEdit = new QLineEdit;
    modelEdit->setObjectName(QStringLiteral("modelPath"));
    modelEdit->setPlaceholderText(tr("/path/to/model.gguf"));
    modelEdit->setClearButtonEnabled(true);
    localForm->addRow(tr("&Model file:"),
                      pathRow(modelEdit, QStringLiteral("modelBrowse"),
                              tr("Choose the model's GGUF file"), &SettingsDialog::browseModel));
    auto* modelInfo = makeInfoLabel(QStringLiteral("modelInfo"));
    localForm->addRow(QString(), modelInfo);
    auto* mmprojEdit = new QLineEdit;
    mmprojEdit->setObjectName(QStringLiteral("mmprojPath"));
    mmprojEdit->setPlaceholderText(tr("optional: the model's vision projector (mmproj) GGUF"));
    mmprojEdit->setClearButtonEnabled(true);
    localForm->addRow(tr("&Vision projector:"),
                      pathRow(mmprojEdit, QStringLiteral("mmprojBrowse"),
                              tr("Choose the mmproj GGUF file"), &SettingsDialog::browseMmproj));
    auto* mmprojInfo = makeInfoLabel(QStringLiteral("mmprojInfo"));
    localForm->addRow(QString(), mmprojInfo);
    setUpGgufField(m_model, modelEdit, modelInfo, GgufRole::LanguageModel);
    setUpGgufField(m_mmproj, mmprojEdit, mmprojInfo, GgufRole::VisionProjector);

    m_endpointPanel = new QWidget;
    auto* endpointForm = new QFormLayout(m_endpointPanel);
    endpointForm->setContentsMargins(24, 0, 0, 0);
    m_endpointUrl = new QLineEdit;
    m_endpointUrl->setObjectName(QStringLiteral("endpointUrl"));
    m_endpointUrl->setPlaceholderText(QStringLiteral("http://127.0.0.1:8000/v1"));
    endpointForm->addRow(tr("&URL:"), m_endpointUrl);
    m_endpointModelName = new QLineEdit;
    m_endpointModelName->setObjectName(QStringLiteral("endpointModelName"));
    m_endpointModelName->setPlaceholderText(tr("as the server names it (default: iris)"));
    endpointForm->addRow(tr("Model &name:"), m_endpointModelName);
    m_apiKeyEnv = new QLineEdit;
    m_apiKeyEnv->setObjectName(QStringLiteral("apiKeyEnv"));
    m_apiKeyEnv->setToolTip(
        tr("The name of the environment variable that holds the API key. Iris reads the key "
           "from it when a session starts and never stores or shows the key."));
    endpointForm->addRow(tr("API &key variable:"), m_apiKeyEnv);
    m_apiKeyStatus = makeInfoLabel(QStringLiteral("apiKeyStatus"));
    endpointForm->addRow(QString(), m_apiKeyStatus);
    for (QLineEdit* edit : {m_endpointUrl, m_endpointModelName})
        connect(edit, &QLineEdit::textChanged, this, [this] { revalidate(); });
    connect(m_apiKeyEnv, &QLineEdit::textChanged, this, [this] {
        updateApiKeyStatus();
        revalidate();
    });

    auto* layout = new QVBoxLayout(box);
    layout->addWidget(m_local);
    layout->addWidget(m_localPanel);
    layout->addWidget(m_endpoint);
    layout->addWidget(m_endpointPanel);
    return box;
}

QWidget* SettingsDialog::buildEngineSection() {
    auto* box = new QGroupBox(tr("Engine"));
    auto* form = new QFormLayout(box);
    m_threads = new QSpinBox;
    m_threads->setObjectName(QStringLiteral("threads"));
    m_threads->setRange(1, kMaxThreads);
    m_threads->setToolTip(
        tr("Compute threads of the local engine (this machine has %1).").arg(defaultThreadCount()));
    form->addRow(tr("&Threads:"), m_threads);
    m_contextSize = new QSpinBox;
    m_contextSize->setObjectName(QStringLiteral("contextSize"));
    m_contextSize->setRange(kMinContextSize, kMaxContextSize);
    m_contextSize->setSingleStep(1024);
    m_contextSize->setSuffix(tr(" tokens"));
    form->addRow(tr("&Context size:"), m_contextSize);
    for (QSpinBox* spin : {m_threads, m_contextSize})
        connect(spin, &QSpinBox::valueChanged, this, [this] { revalidate(); });
    m_shareEngine = new QCheckBox(tr("&Share the engine with other Iris processes"));
    m_shareEngine->setObjectName(QStringLiteral("shareEngine"));
    m_shareEngine->setToolTip(
        tr("Use the engine of an Iris process that already runs this model (iris eval run, "
           "iris serve), and offer this one to them, instead of loading the model twice."));
    form->addRow(m_shareEngine);
    return box;
}

QWidget* SettingsDialog::buildAgentSection() {
    auto* box = new QGroupBox(tr("Agent"));
    auto* form = new QFormLayout(box);
    m_actionFormat = new QComboBox;
    m_actionFormat->setObjectName(QStringLiteral("actionFormat"));
    for (const FormatChoice& format : kFormats)
        m_actionFormat->addItem(tr(format.label), QString::fromLatin1(format.name));
    m_actionFormat->setToolTip(tr("How the model writes its actions."));
    form->addRow(tr("Action &format:"), m_actionFormat);
    m_screenshots = new QSpinBox;
    m_screenshots->setObjectName(QStringLiteral("screenshotsInHistory"));
    m_screenshots->setRange(1, kMaxScreenshotsInHistory);
    m_screenshots->setToolTip(tr("How many of the latest screenshots the model sees each step."));
    form->addRow(tr("Screenshots in &history:"), m_screenshots);
    m_maxSteps = new QSpinBox;
    m_maxSteps->setObjectName(QStringLiteral("maxSteps"));
    m_maxSteps->setRange(1, kMaxSteps);
    form->addRow(tr("Maximum &steps:"), m_maxSteps);
    m_viewportWidth = new QSpinBox;
    m_viewportWidth->setObjectName(QStringLiteral("viewportWidth"));
    m_viewportWidth->setRange(kMinViewport.width(), kMaxViewport.width());
    m_viewportWidth->setAccessibleName(tr("Viewport width"));
    m_viewportHeight = new QSpinBox;
    m_viewportHeight->setObjectName(QStringLiteral("viewportHeight"));
    m_viewportHeight->setRange(kMinViewport.height(), kMaxViewport.height());
    m_viewportHeight->setAccessibleName(tr("Viewport height"));
    auto* viewport = new QWidget;
    auto* viewportLayout = new QHBoxLayout(viewport);
    viewportLayout->setContentsMargins(0, 0, 0, 0);
    viewportLayout->addWidget(m_viewportWidth);
    viewportLayout->addWidget(new QLabel(QStringLiteral("×")));
    viewportLayout->addWidget(m_viewportHeight);
    auto* viewportLabel = new QLabel(tr("Vie&wport:"));
    viewportLabel->setBuddy(m_viewportWidth);
    form->addRow(viewportLabel, viewport);
    connect(m_actionFormat, &QComboBox::currentIndexChanged, this, [this] { revalidate(); });
    for (QSpinBox* spin : {m_screenshots, m_maxSteps, m_viewportWidth, m_viewportHeight})
        connect(spin, &QSpinBox::valueChanged, this, [this] { revalidate(); });
    return box;
}

QWidget* SettingsDialog::buildSafetySection() {
    auto* box = new QGroupBox(tr("Safety"));
    auto* layout = new QVBoxLayout(box);
    m_confirmRisky = new QCheckBox(tr("Confirm &risky actions"));
    m_confirmRisky->setObjectName(QStringLiteral("confirmRiskyActions"));
    m_confirmRisky->setToolTip(
        tr("Ask before actions the safety policy marks risky (deleting, submitting, shell)."));
    m_confirmEvery = new QCheckBox(tr("Confirm &every action"));
    m_confirmEvery->setObjectName(QStringLiteral("confirmEveryAction"));
    layout->addWidget(m_confirmRisky);
    layout->addWidget(m_confirmEvery);
    return box;
}

QWidget* SettingsDialog::buildStorageSection() {
    auto* box = new QGroupBox(tr("Storage"));
    auto* form = new QFormLayout(box);
    m_database = new QLineEdit;
    m_database->setObjectName(QStringLiteral("databasePath"));
    form->addRow(tr("Session &database:"),
                 pathRow(m_database, QStringLiteral("databaseBrowse"),
                         tr("Choose the session database file"), &SettingsDialog::browseDatabase));
    connect(m_database, &QLineEdit::textChanged, this, [this] { revalidate(); });
    return box;
}

QWidget* SettingsDialog::pathRow(QLineEdit* edit, const QString& browseName,
                                 const QString& browseTip, void (SettingsDialog::*browse)()) {
    // Room for a typical path, so that the file name is not the part scrolled out of view.
    edit->setMinimumWidth(edit->fontMetrics().averageCharWidth() * 44);
    auto* row = new QWidget;
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(edit, 1);
    auto* button = new QPushButton(tr("Browse…"));
    button->setObjectName(browseName);
    button->setToolTip(browseTip);
    button->setAccessibleName(browseTip);
    connect(button, &QPushButton::clicked, this, browse);
    layout->addWidget(button);
    // The form's label mnemonic focuses the row; hand that focus to the text field.
    row->setFocusProxy(edit);
    return row;
}

void SettingsDialog::setUpGgufField(GgufField& field, QLineEdit* edit, QLabel* info,
                                    GgufRole role) {
    field.edit = edit;
    field.info = info;
    field.role = role;
    field.debounce = new QTimer(this);
    field.debounce->setSingleShot(true);
    field.debounce->setInterval(kCheckDelayMs);
    GgufField* target = &field;
    connect(field.debounce, &QTimer::timeout, this, [this, target] { startCheck(*target); });
    connect(edit, &QLineEdit::textChanged, this, [this, target] {
        // Anything said about the previous path is stale from now on.
        ++target->generation;
        target->summary.clear();
        target->error.clear();
        target->pending = false;
        showInfo(target->info, QString(), Tone::Normal);
        target->debounce->start();
        revalidate();
    });
}

void SettingsDialog::browseModel() {
    browseGguf(m_model.edit, tr("Choose the model (GGUF)"));
}

void SettingsDialog::browseMmproj() {
    browseGguf(m_mmproj.edit, tr("Choose the vision projector (mmproj GGUF)"));
}

void SettingsDialog::browseGguf(QLineEdit* edit, const QString& title) {
    const QString path = QFileDialog::getOpenFileName(
        this, title,
        startFolder(edit->text().trimmed().isEmpty() ? m_model.edit->text().trimmed()
                                                     : edit->text().trimmed()),
        kGgufFilter);
    if (!path.isEmpty()) edit->setText(QDir::toNativeSeparators(path));
}

void SettingsDialog::browseDatabase() {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Choose the session database"), startFolder(m_database->text().trimmed()),
        tr("SQLite databases (*.db *.sqlite);;All files (*)"), nullptr,
        QFileDialog::DontConfirmOverwrite);
    if (!path.isEmpty()) m_database->setText(QDir::toNativeSeparators(path));
}

void SettingsDialog::startCheck(GgufField& field) {
    const QString path = field.edit->text().trimmed();
    ++field.generation;
    field.summary.clear();
    field.error.clear();
    field.pending = false;
    showInfo(field.info, QString(), Tone::Normal);
    // A missing path or file is reported by problems(); only real files are worth parsing.
    if (path.isEmpty() || !QFileInfo(path).isFile()) {
        revalidate();
        return;
    }
    field.pending = true;
    showInfo(field.info, tr("Checking %1…").arg(QFileInfo(path).fileName()), Tone::Normal);
    revalidate();

    // Drop the futures of finished checks so that the list does not grow while the user types.
    std::erase_if(m_checks, [](const std::future<void>& check) {
        return check.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    });
    GgufField* target = &field;
    const quint64 generation = field.generation;
    const GgufRole role = field.role;
    m_checks.push_back(std::async(std::launch::async, [this, target, generation, role, path] {
        Result<QString> described = describeGguf(path.toStdString(), role);
        const bool ok = described.isOk();
        QString text = ok ? *described : QString::fromStdString(described.status().message());
        QMetaObject::invokeMethod(
            this,
            [this, target, generation, ok, text = std::move(text)] {
                finishCheck(target, generation, ok, text);
            },
            Qt::QueuedConnection);
    }));
}

void SettingsDialog::finishCheck(GgufField* field, quint64 generation, bool ok,
                                 const QString& text) {
    if (generation != field->generation) return;  // the path changed meanwhile
    field->pending = false;
    if (ok) {
        field->summary = text;
        QString shown = text;
        if (field->role == GgufRole::VisionProjector) {
            shown +=
                tr("\nScreenshots go through this vision tower (it must belong to the model "
                   "above; the pair is checked when the model loads).");
        }
        showInfo(field->info, shown, Tone::Normal);
    } else {
        field->error = text;
        showInfo(field->info, text, Tone::Error);
    }
    revalidate();
}

void SettingsDialog::updateApiKeyStatus() {
    const QString name = m_apiKeyEnv->text().trimmed();
    if (name.isEmpty()) {
        showInfo(m_apiKeyStatus, tr("No key: requests are sent without authorization."),
                 Tone::Normal);
    } else if (!isValidEnvironmentName(name)) {
        showInfo(m_apiKeyStatus, tr("Not a valid variable name."), Tone::Error);
    } else if (!qEnvironmentVariableIsEmpty(name.toLocal8Bit().constData())) {
        // Only whether it is set: the value never reaches the screen.
        showInfo(m_apiKeyStatus, tr("✓ %1 is set in Iris's environment.").arg(name), Tone::Normal);
    } else {
        showInfo(m_apiKeyStatus,
                 tr("⚠ %1 is not set in Iris's environment; set it before starting Iris if "
                    "the server needs a key.")
                     .arg(name),
                 Tone::Warning);
    }
}

void SettingsDialog::updateBackend() {
    const bool local = m_local->isChecked();
    m_localPanel->setEnabled(local);
    m_endpointPanel->setEnabled(!local);
    m_threads->setEnabled(local);
    m_contextSize->setEnabled(local);
    m_shareEngine->setEnabled(local);
    revalidate();
}

void SettingsDialog::revalidate() {
    const AppSettings current = settings();
    QStringList found;
    for (const QString& problem : problems(current))
        found << problem;
    if (current.backend == AppSettings::Backend::Local) {
        for (const GgufField* field : {&m_model, &m_mmproj}) {
            if (field->edit->text().trimmed().isEmpty()) continue;
            if (!field->error.isEmpty()) found << field->error;
            // Also while the debounce runs: the path has not been checked yet.
            if (field->pending || field->debounce->isActive())
                found << tr("Checking %1…").arg(field->edit->text().trimmed());
        }
    }
    m_currentProblems = found;
    showInfo(m_problems, found.join(QLatin1Char('\n')), Tone::Error);
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(found.isEmpty());
}

QStringList SettingsDialog::currentProblems() const {
    return m_currentProblems;
}

AppSettings SettingsDialog::settings() const {
    AppSettings out;
    out.backend =
        m_endpoint->isChecked() ? AppSettings::Backend::Endpoint : AppSettings::Backend::Local;
    out.modelPath = m_model.edit->text().trimmed();
    out.mmprojPath = m_mmproj.edit->text().trimmed();
    out.endpointUrl = m_endpointUrl->text().trimmed();
    out.endpointModelName = m_endpointModelName->text().trimmed();
    out.apiKeyEnv = m_apiKeyEnv->text().trimmed();
    out.threads = m_threads->value();
    out.contextSize = m_contextSize->value();
    out.shareEngine = m_shareEngine->isChecked();
    out.actionFormat = m_actionFormat->currentData().toString();
    out.screenshotsInHistory = m_screenshots->value();
    out.maxSteps = m_maxSteps->value();
    out.viewport = QSize(m_viewportWidth->value(), m_viewportHeight->value());
    out.confirmRiskyActions = m_confirmRisky->isChecked();
    out.confirmEveryAction = m_confirmEvery->isChecked();
    out.databasePath = m_database->text().trimmed();
    return out;
}

void SettingsDialog::setSettings(const AppSettings& settings) {
    const bool local = settings.backend == AppSettings::Backend::Local;
    m_local->setChecked(local);
    m_endpoint->setChecked(!local);
    m_model.edit->setText(settings.modelPath);
    m_mmproj.edit->setText(settings.mmprojPath);
    m_endpointUrl->setText(settings.endpointUrl);
    m_endpointModelName->setText(settings.endpointModelName);
    m_apiKeyEnv->setText(settings.apiKeyEnv);
    m_threads->setValue(settings.threads);
    m_contextSize->setValue(settings.contextSize);
    m_shareEngine->setChecked(settings.shareEngine);
    int format = m_actionFormat->findData(settings.actionFormat);
    // Aliases the agent accepts ("tool_calls", "computer_13") map onto the canonical entries.
    if (format < 0 && settings.actionFormat == QStringLiteral("tool_calls")) format = 0;
    if (format < 0 && settings.actionFormat == QStringLiteral("computer_13"))
        format = m_actionFormat->findData(QStringLiteral("computer13"));
    m_actionFormat->setCurrentIndex(std::max(format, 0));
    m_screenshots->setValue(settings.screenshotsInHistory);
    m_maxSteps->setValue(settings.maxSteps);
    m_viewportWidth->setValue(settings.viewport.width());
    m_viewportHeight->setValue(settings.viewport.height());
    m_confirmRisky->setChecked(settings.confirmRiskyActions);
    m_confirmEvery->setChecked(settings.confirmEveryAction);
    m_database->setText(settings.databasePath);
    // Check the files now rather than after the typing delay.
    for (GgufField* field : {&m_model, &m_mmproj}) {
        field->debounce->stop();
        startCheck(*field);
    }
    updateApiKeyStatus();
    updateBackend();
}

}  // namespace iris::app
