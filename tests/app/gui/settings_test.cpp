// Settings persistence and validation, and the settings dialog: it fills from settings, returns
// what the user edited, and checks chosen GGUF files on a background thread before enabling OK.
#include "app/gui/settings.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include <gtest/gtest.h>
#include <sched.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/settings_dialog.h"
#include "app/models/model_store.h"
#include "inference/chat_template.h"
#include "tests/inference/models/tiny_model.h"

namespace iris::app {
namespace {

// Sets an environment variable for one test and restores the previous state afterwards.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const QByteArray& value) : m_name(name) {
        if (qEnvironmentVariableIsSet(name)) m_previous = qgetenv(name);
        qputenv(name, value);
    }
    ~ScopedEnv() {
        if (m_previous)
            qputenv(m_name, *m_previous);
        else
            qunsetenv(m_name);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* m_name;
    std::optional<QByteArray> m_previous;
};

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::WriteOnly)) << path.toStdString();
    ASSERT_EQ(file.write(bytes), bytes.size());
}

// A tiny Qwen2 model with Q8_0 weights. Its parameter count, from the architecture: token
// embedding (tied output) vocab*hidden; per layer two norms, q (+bias), k and v (+biases), o and
// three FFN matrices; the output norm: 96*64 + 2*(64 + 64*64+64 + 2*(64*32+32) + 64*64 + 64 +
// 3*64*96) + 64 = 68160.
QString writeTinyModel(const QString& folder) {
    inference::testing::TinyModelSpec spec;
    spec.weightType = kernels::TensorType::Q8_0;
    const std::vector<std::byte> bytes = inference::testing::makeTinyModel(spec);
    const QString path = QDir(folder).filePath(QStringLiteral("tiny-qwen2.gguf"));
    writeFile(path, QByteArray(reinterpret_cast<const char*>(bytes.data()),
                               static_cast<qsizetype>(bytes.size())));
    return path;
}

void saveArtifact(QWidget& widget, const QString& name) {
    const QString path = QDir(QStringLiteral(IRIS_TEST_ARTIFACTS)).filePath(name);
    EXPECT_TRUE(widget.grab().save(path)) << path.toStdString();
}

template <typename T>
T* child(QWidget& parent, const char* name) {
    T* found = parent.findChild<T*>(QString::fromLatin1(name));
    EXPECT_NE(found, nullptr) << name;
    return found;
}

QPushButton* okButton(SettingsDialog& dialog) {
    return child<QDialogButtonBox>(dialog, "buttons")->button(QDialogButtonBox::Ok);
}

AppSettings editedSettings(const QString& folder) {
    AppSettings s;
    s.backend = AppSettings::Backend::Endpoint;
    s.modelPath = QDir(folder).filePath(QStringLiteral("model.gguf"));
    s.mmprojPath = QDir(folder).filePath(QStringLiteral("mmproj.gguf"));
    s.endpointUrl = QStringLiteral("https://models.example.com/v1");
    s.endpointModelName = QStringLiteral("ui-tars-7b");
    s.apiKeyEnv = QStringLiteral("MY_SERVER_KEY");
    s.threads = 3;
    s.contextSize = 8192;
    s.shareEngine = false;
    s.actionFormat = QStringLiteral("uitars");
    s.screenshotsInHistory = 5;
    s.maxSteps = 40;
    s.confirmEveryAction = true;
    s.confirmRiskyActions = false;
    s.databasePath = QDir(folder).filePath(QStringLiteral("sessions.db"));
    s.viewport = QSize(1920, 1080);
    return s;
}

TEST(Settings, DefaultsMatchTheIssueAndTheCli) {
    QTemporaryDir data;
    ASSERT_TRUE(data.isValid());
    const ScopedEnv xdg("XDG_DATA_HOME", data.path().toUtf8());
    const AppSettings s;
    EXPECT_EQ(s.backend, AppSettings::Backend::Local);
    EXPECT_EQ(s.apiKeyEnv, QStringLiteral("IRIS_API_KEY"));
    cpu_set_t cpus;
    ASSERT_EQ(sched_getaffinity(0, sizeof cpus, &cpus), 0);
    EXPECT_EQ(s.threads, CPU_COUNT(&cpus)) << "all the cores this process may use, like the CLI";
    EXPECT_EQ(s.contextSize, 16384);
    EXPECT_TRUE(s.shareEngine) << "like the CLI without --no-shared-engine";
    EXPECT_EQ(s.actionFormat, QStringLiteral("tools"));
    EXPECT_EQ(s.screenshotsInHistory, 3);
    EXPECT_EQ(s.maxSteps, 15);
    EXPECT_FALSE(s.confirmEveryAction);
    EXPECT_TRUE(s.confirmRiskyActions);
    EXPECT_EQ(s.databasePath, QString(data.path() + QStringLiteral("/iris/sessions.db")));
    EXPECT_EQ(s.viewport, QSize(1280, 800));
}

// The GUI hands the same ModelChoice to app/session's factory as `iris run` would make of the
// equivalent options.
TEST(Settings, ChooseTheModelTheBackendNames) {
    AppSettings s;
    s.modelPath = QStringLiteral("/models/m.gguf");
    s.mmprojPath = QStringLiteral("/models/mmproj.gguf");
    s.threads = 3;
    s.contextSize = 8192;
    ModelChoice local = modelChoiceOf(s);
    EXPECT_EQ(local.backend, ModelChoice::Backend::LocalEngine);
    EXPECT_EQ(local.modelPath, "/models/m.gguf");
    EXPECT_EQ(local.mmprojPath, "/models/mmproj.gguf");
    EXPECT_EQ(local.threads, 3);
    EXPECT_EQ(local.contextSize, 8192);
    EXPECT_TRUE(local.shareEngine);
    s.shareEngine = false;
    EXPECT_FALSE(modelChoiceOf(s).shareEngine);

    s.backend = AppSettings::Backend::Endpoint;
    s.endpointUrl = QStringLiteral("http://127.0.0.1:8000/v1");
    s.endpointModelName = QStringLiteral("ui-tars");
    s.apiKeyEnv = QStringLiteral("MY_KEY");
    const ModelChoice endpoint = modelChoiceOf(s);
    EXPECT_EQ(endpoint.backend, ModelChoice::Backend::Endpoint);
    EXPECT_EQ(endpoint.endpoint, "http://127.0.0.1:8000/v1");
    EXPECT_EQ(endpoint.modelName, "ui-tars");
    EXPECT_EQ(endpoint.apiKeyEnv, "MY_KEY");

    // No model file: the demo replays its demonstration, anything else asks for a model.
    EXPECT_EQ(modelChoiceOf(AppSettings{}).backend, ModelChoice::Backend::None);
}

// The models panel's "Use" keeps a pulled model's file path; running it takes the catalogue's
// image budget and chat template (resources/models/catalogue.json), as `--model NAME` does.
TEST(Settings, APulledModelsFileRunsWithItsCatalogueDefaults) {
    QTemporaryDir folder;
    ASSERT_TRUE(folder.isValid());
    const QByteArray saved = qgetenv("IRIS_MODELS_DIR");
    qputenv("IRIS_MODELS_DIR", folder.path().toUtf8());
    const models::ModelStore store(folder.path().toStdString());
    models::Manifest manifest;
    manifest.name = "ui-tars-1.5-7b";
    manifest.quant = "Q4_K_M";
    manifest.repo = "mradermacher/UI-TARS-1.5-7B-GGUF";
    manifest.model = {"UI-TARS-1.5-7B.Q4_K_M.gguf", std::string(64, 'a'), 4};
    ASSERT_TRUE(store.writeManifest(manifest).isOk());
    std::filesystem::create_directories(store.root() / "blobs");
    std::ofstream(store.blobPath(manifest.model.sha256)) << "gguf";

    AppSettings s;
    s.modelPath = QString::fromStdString(store.blobPath(manifest.model.sha256).string());
    const ModelChoice pulled = modelChoiceOf(s);
    s.modelPath = QStringLiteral("/models/m.gguf");
    const ModelChoice file = modelChoiceOf(s);
    if (saved.isNull())
        qunsetenv("IRIS_MODELS_DIR");
    else
        qputenv("IRIS_MODELS_DIR", saved);

    EXPECT_EQ(pulled.imageMaxPixels, 2116800);  // UI-TARS-1.5's max_pixels in the catalogue
    EXPECT_EQ(pulled.chatTemplate, inference::ChatTemplateKind::Qwen2Vl);
    EXPECT_EQ(file.imageMaxPixels, 0);  // a file of its own: the projector's budget
    EXPECT_FALSE(file.chatTemplate);
}

TEST(Settings, PersistAcrossRestarts) {
    QTemporaryDir folder;
    ASSERT_TRUE(folder.isValid());
    const QString ini = folder.filePath(QStringLiteral("iris.ini"));
    const ScopedEnv key("MY_SERVER_KEY", "sk-never-stored-0123");
    const AppSettings edited = editedSettings(folder.path());
    {
        QSettings store(ini, QSettings::IniFormat);
        saveSettings(edited, store);
        store.sync();
        ASSERT_EQ(store.status(), QSettings::NoError);
    }
    {
        QSettings store(ini, QSettings::IniFormat);
        EXPECT_EQ(loadSettings(store), edited);
    }
    QFile file(ini);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QByteArray text = file.readAll();
    EXPECT_TRUE(text.contains("[model]")) << text.toStdString();
    EXPECT_TRUE(text.contains("viewport=1920x1080")) << text.toStdString();
    EXPECT_TRUE(text.contains("apiKeyEnv=MY_SERVER_KEY")) << text.toStdString();
    EXPECT_FALSE(text.contains("sk-never-stored")) << "the key itself must never be stored";

    // A second round trip from what was loaded changes nothing.
    QSettings again(folder.filePath(QStringLiteral("again.ini")), QSettings::IniFormat);
    saveSettings(edited, again);
    EXPECT_EQ(loadSettings(again), edited);
}

TEST(Settings, EmptyOrMalformedStoreKeepsDefaults) {
    QTemporaryDir folder;
    ASSERT_TRUE(folder.isValid());
    const QString ini = folder.filePath(QStringLiteral("iris.ini"));
    writeFile(ini,
              "[engine]\nthreads=lots\ncontextSize=99999999999999\n[model]\nbackend=quantum\n"
              "[agent]\nviewport=huge\nmaxSteps=0\n[safety]\nconfirmRiskyActions=maybe\n");
    QSettings store(ini, QSettings::IniFormat);
    const AppSettings loaded = loadSettings(store);
    const AppSettings defaults;
    EXPECT_EQ(loaded.threads, defaults.threads);
    EXPECT_EQ(loaded.contextSize, defaults.contextSize);
    EXPECT_EQ(loaded.backend, AppSettings::Backend::Local);
    EXPECT_EQ(loaded.viewport, defaults.viewport);
    EXPECT_TRUE(loaded.confirmRiskyActions);
    // In range of int but out of range for the agent: kept, so that problems() can name it.
    EXPECT_EQ(loaded.maxSteps, 0);
    bool named = false;
    for (const QString& problem : problems(loaded))
        named = named || problem.contains(QStringLiteral("Maximum steps"));
    EXPECT_TRUE(named);

    QSettings empty(folder.filePath(QStringLiteral("none.ini")), QSettings::IniFormat);
    EXPECT_EQ(loadSettings(empty), defaults);
}

TEST(Settings, ProblemsNameTheField) {
    QTemporaryDir folder;
    ASSERT_TRUE(folder.isValid());
    const auto mentions = [](const AppSettings& s, const QString& what) {
        for (const QString& problem : problems(s))
            if (problem.contains(what)) return true;
        return false;
    };
    AppSettings local;
    EXPECT_TRUE(mentions(local, QStringLiteral("Choose a model file")));
    local.mmprojPath = folder.filePath(QStringLiteral("mmproj.gguf"));
    EXPECT_TRUE(mentions(local, QStringLiteral("needs a model file")));
    local.modelPath = folder.filePath(QStringLiteral("missing.gguf"));
    EXPECT_TRUE(mentions(local, QStringLiteral("missing.gguf does not exist")));
    local.modelPath = writeTinyModel(folder.path());
    local.mmprojPath.clear();
    EXPECT_TRUE(problems(local).empty()) << problems(local).front().toStdString();
    local.actionFormat = QStringLiteral("morse");
    EXPECT_TRUE(mentions(local, QStringLiteral("'morse'")));

    AppSettings remote;
    remote.backend = AppSettings::Backend::Endpoint;
    EXPECT_TRUE(mentions(remote, QStringLiteral("endpoint URL")));
    remote.endpointUrl = QStringLiteral("ftp://models.example.com/v1");
    EXPECT_TRUE(mentions(remote, QStringLiteral("not an http(s) URL")));
    remote.endpointUrl = QStringLiteral("http://127.0.0.1:8000/v1");
    EXPECT_TRUE(problems(remote).empty()) << problems(remote).front().toStdString();
    remote.apiKeyEnv = QStringLiteral("MY-KEY");
    EXPECT_TRUE(mentions(remote, QStringLiteral("'MY-KEY'")));
    remote.apiKeyEnv.clear();  // servers without a key
    remote.databasePath = folder.path();
    EXPECT_TRUE(mentions(remote, QStringLiteral("is a folder")));
}

TEST(Settings, DescribeGgufSummarisesAndChecksTheRole) {
    QTemporaryDir folder;
    ASSERT_TRUE(folder.isValid());
    const QString model = writeTinyModel(folder.path());
    Result<QString> described = describeGguf(model.toStdString(), GgufRole::LanguageModel);
    ASSERT_TRUE(described.isOk()) << described.status().message();
    EXPECT_EQ(*described, QStringLiteral("qwen2 · 68K parameters · Q8_0"));

    Result<QString> asProjector = describeGguf(model.toStdString(), GgufRole::VisionProjector);
    ASSERT_FALSE(asProjector.isOk());
    EXPECT_NE(asProjector.status().message().find("not a vision projector"), std::string::npos);
    EXPECT_EQ(asProjector.status().message().rfind(model.toStdString(), 0), 0u)
        << "errors start with the file: " << asProjector.status().message();
}

TEST(SettingsDialog, FillsFromSettingsAndReturnsEdits) {
    QTemporaryDir folder;
    ASSERT_TRUE(folder.isValid());
    const AppSettings initial = editedSettings(folder.path());
    SettingsDialog dialog(initial);
    EXPECT_EQ(dialog.settings(), initial);
    EXPECT_TRUE(child<QRadioButton>(dialog, "backendEndpoint")->isChecked());
    EXPECT_EQ(child<QLineEdit>(dialog, "endpointUrl")->text(), initial.endpointUrl);
    EXPECT_EQ(child<QComboBox>(dialog, "actionFormat")->currentData().toString(),
              QStringLiteral("uitars"));
    EXPECT_EQ(child<QSpinBox>(dialog, "threads")->value(), 3);

    child<QRadioButton>(dialog, "backendLocal")->setChecked(true);
    const QString model = writeTinyModel(folder.path());
    child<QLineEdit>(dialog, "modelPath")->setText(model);
    child<QLineEdit>(dialog, "mmprojPath")->clear();
    child<QSpinBox>(dialog, "contextSize")->setValue(32768);
    EXPECT_FALSE(child<QCheckBox>(dialog, "shareEngine")->isChecked());
    child<QCheckBox>(dialog, "shareEngine")->setChecked(true);
    QComboBox* format = child<QComboBox>(dialog, "actionFormat");
    format->setCurrentIndex(format->findData(QStringLiteral("pyautogui")));
    child<QSpinBox>(dialog, "screenshotsInHistory")->setValue(1);
    child<QSpinBox>(dialog, "maxSteps")->setValue(7);
    child<QSpinBox>(dialog, "viewportWidth")->setValue(1024);
    child<QSpinBox>(dialog, "viewportHeight")->setValue(768);
    child<QCheckBox>(dialog, "confirmRiskyActions")->setChecked(true);
    child<QCheckBox>(dialog, "confirmEveryAction")->setChecked(false);
    child<QLineEdit>(dialog, "databasePath")->setText(folder.filePath(QStringLiteral("x.db")));

    AppSettings expected = initial;
    expected.backend = AppSettings::Backend::Local;
    expected.modelPath = model;
    expected.mmprojPath.clear();
    expected.contextSize = 32768;
    expected.shareEngine = true;
    expected.actionFormat = QStringLiteral("pyautogui");
    expected.screenshotsInHistory = 1;
    expected.maxSteps = 7;
    expected.viewport = QSize(1024, 768);
    expected.confirmRiskyActions = true;
    expected.confirmEveryAction = false;
    expected.databasePath = folder.filePath(QStringLiteral("x.db"));
    EXPECT_EQ(dialog.settings(), expected);

    // setSettings() puts everything back.
    dialog.setSettings(initial);
    EXPECT_EQ(dialog.settings(), initial);
}

TEST(SettingsDialog, InvalidModelShowsTheErrorAndDisablesOk) {
    QTemporaryDir folder;
    ASSERT_TRUE(folder.isValid());
    AppSettings s;
    s.modelPath = writeTinyModel(folder.path());
    SettingsDialog dialog(s);
    QPushButton* ok = okButton(dialog);
    ASSERT_TRUE(QTest::qWaitFor([&] { return ok->isEnabled(); }));

    // Not a GGUF file: the background check's error names the file.
    const QString garbage = folder.filePath(QStringLiteral("garbage.gguf"));
    writeFile(garbage, QByteArray("this is not a model, just text", 30));
    child<QLineEdit>(dialog, "modelPath")->setText(garbage);
    EXPECT_FALSE(ok->isEnabled()) << "OK must wait for the check";
    QLabel* info = child<QLabel>(dialog, "modelInfo");
    ASSERT_TRUE(QTest::qWaitFor([&] { return info->text().startsWith(garbage); }));
    EXPECT_FALSE(ok->isEnabled());
    EXPECT_TRUE(child<QLabel>(dialog, "problems")->text().contains(garbage));
    dialog.resize(dialog.sizeHint());
    saveArtifact(dialog, QStringLiteral("settings_dialog_invalid_model.png"));

    // A file that does not exist.
    const QString missing = folder.filePath(QStringLiteral("missing.gguf"));
    child<QLineEdit>(dialog, "modelPath")->setText(missing);
    ASSERT_TRUE(QTest::qWaitFor([&] {
        return child<QLabel>(dialog, "problems")
            ->text()
            .contains(QString(missing + QStringLiteral(" does not exist")));
    }));
    EXPECT_FALSE(ok->isEnabled());

    // A model file given as the projector.
    child<QLineEdit>(dialog, "modelPath")->setText(s.modelPath);
    child<QLineEdit>(dialog, "mmprojPath")->setText(s.modelPath);
    ASSERT_TRUE(QTest::qWaitFor([&] {
        return child<QLabel>(dialog, "mmprojInfo")
            ->text()
            .contains(QStringLiteral("not a vision projector"));
    }));
    EXPECT_FALSE(ok->isEnabled());
    child<QLineEdit>(dialog, "mmprojPath")->clear();
    ASSERT_TRUE(QTest::qWaitFor([&] { return ok->isEnabled(); }));
}

TEST(SettingsDialog, ValidModelShowsItsArchitecture) {
    QTemporaryDir folder;
    ASSERT_TRUE(folder.isValid());
    SettingsDialog dialog(AppSettings{});
    EXPECT_FALSE(okButton(dialog)->isEnabled()) << "no model chosen yet";
    child<QLineEdit>(dialog, "modelPath")->setText(writeTinyModel(folder.path()));
    QLabel* info = child<QLabel>(dialog, "modelInfo");
    ASSERT_TRUE(QTest::qWaitFor(
        [&] { return info->text() == QStringLiteral("qwen2 · 68K parameters · Q8_0"); }));
    ASSERT_TRUE(QTest::qWaitFor([&] { return okButton(dialog)->isEnabled(); }));
    EXPECT_TRUE(dialog.currentProblems().isEmpty());
    dialog.resize(dialog.sizeHint());
    saveArtifact(dialog, QStringLiteral("settings_dialog_local.png"));
}

TEST(SettingsDialog, EndpointChecksTheUrlAndShowsWhetherTheKeyIsSet) {
    const ScopedEnv key("IRIS_SETTINGS_TEST_KEY", "sk-do-not-show-4711");
    AppSettings s;
    s.backend = AppSettings::Backend::Endpoint;
    s.endpointUrl = QStringLiteral("http://127.0.0.1:8000/v1");
    s.apiKeyEnv = QStringLiteral("IRIS_SETTINGS_TEST_KEY");
    SettingsDialog dialog(s);
    QPushButton* ok = okButton(dialog);
    EXPECT_TRUE(ok->isEnabled()) << dialog.currentProblems().join(QLatin1Char('\n')).toStdString();
    EXPECT_FALSE(child<QLineEdit>(dialog, "modelPath")->isEnabled());
    QLabel* status = child<QLabel>(dialog, "apiKeyStatus");
    EXPECT_TRUE(status->text().contains(QStringLiteral("is set"))) << status->text().toStdString();
    EXPECT_FALSE(status->text().contains(QStringLiteral("sk-do-not-show")));
    dialog.resize(dialog.sizeHint());
    saveArtifact(dialog, QStringLiteral("settings_dialog_endpoint.png"));

    child<QLineEdit>(dialog, "apiKeyEnv")->setText(QStringLiteral("IRIS_SETTINGS_UNSET_VARIABLE"));
    EXPECT_TRUE(status->text().contains(QStringLiteral("not set"))) << status->text().toStdString();
    EXPECT_TRUE(ok->isEnabled()) << "a server may need no key";

    child<QLineEdit>(dialog, "endpointUrl")->setText(QStringLiteral("file:///etc/passwd"));
    EXPECT_FALSE(ok->isEnabled());
    EXPECT_TRUE(child<QLabel>(dialog, "problems")->text().contains(QStringLiteral("http(s)")));
    child<QLineEdit>(dialog, "endpointUrl")->setText(QStringLiteral("https://api.example.com/v1"));
    EXPECT_TRUE(ok->isEnabled());
}

}  // namespace
}  // namespace iris::app
