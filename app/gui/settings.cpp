#include "app/gui/settings.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <QFileInfo>
#include <QRegularExpression>
#include <QSettings>
#include <QUrl>

#include "agent/actions/action_format.h"
#include "app/session/data_paths.h"
#include "inference/gguf/gguf_file.h"
#include "inference/models/model.h"
#include "inference/thread_pool.h"
#include "kernels/tensor_type.h"

namespace iris::app {
namespace {

// Keys, grouped by the dialog's sections. Renaming one loses users' saved values: don't.
const QString kBackend = QStringLiteral("model/backend");
const QString kModelPath = QStringLiteral("model/path");
const QString kMmprojPath = QStringLiteral("model/mmproj");
const QString kEndpointUrl = QStringLiteral("endpoint/url");
const QString kEndpointModel = QStringLiteral("endpoint/modelName");
const QString kApiKeyEnv = QStringLiteral("endpoint/apiKeyEnv");
const QString kThreads = QStringLiteral("engine/threads");
const QString kContextSize = QStringLiteral("engine/contextSize");
const QString kShareEngine = QStringLiteral("engine/shareWithOtherProcesses");
const QString kActionFormat = QStringLiteral("agent/actionFormat");
const QString kScreenshots = QStringLiteral("agent/screenshotsInHistory");
const QString kMaxStepsKey = QStringLiteral("agent/maxSteps");
const QString kViewport = QStringLiteral("agent/viewport");
const QString kConfirmEvery = QStringLiteral("safety/confirmEveryAction");
const QString kConfirmRisky = QStringLiteral("safety/confirmRiskyActions");
const QString kDatabase = QStringLiteral("storage/database");

const QString kLocalName = QStringLiteral("local");
const QString kEndpointName = QStringLiteral("endpoint");

void readInt(QSettings& store, const QString& key, int& value) {
    const QVariant stored = store.value(key);
    if (!stored.isValid()) return;
    // QVariant::toInt() wraps numbers past int's range; parse wide and check instead.
    bool ok = false;
    const qlonglong parsed = stored.toString().trimmed().toLongLong(&ok);
    if (ok && parsed >= std::numeric_limits<int>::min() &&
        parsed <= std::numeric_limits<int>::max())
        value = static_cast<int>(parsed);
}

void readBool(QSettings& store, const QString& key, bool& value) {
    const QVariant stored = store.value(key);
    if (!stored.isValid()) return;
    // INI files hand back strings; only accept the spellings QSettings itself writes.
    const QString text = stored.toString().trimmed().toLower();
    if (text == QStringLiteral("true") || text == QStringLiteral("1")) value = true;
    if (text == QStringLiteral("false") || text == QStringLiteral("0")) value = false;
}

void readString(QSettings& store, const QString& key, QString& value) {
    const QVariant stored = store.value(key);
    if (stored.isValid()) value = stored.toString();
}

QString nativePath(const std::filesystem::path& path) {
    return QString::fromStdString(path.string());
}

// 494M, 1.5B, 51K: three significant digits at most, as model cards write sizes.
QString humanCount(std::uint64_t count) {
    static constexpr struct {
        double scale;
        const char* suffix;
    } kUnits[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
    const double value = static_cast<double>(count);
    for (const auto& unit : kUnits) {
        if (value >= unit.scale) {
            const double scaled = value / unit.scale;
            const int decimals = scaled < 10 ? 1 : 0;
            QString text = QString::number(scaled, 'f', decimals);
            if (text.endsWith(QStringLiteral(".0"))) text.chop(2);
            return text + QString::fromLatin1(unit.suffix);
        }
    }
    return QString::number(count);
}

QString typeName(std::string_view name) {
    return QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size())).toUpper();
}

}  // namespace

int defaultThreadCount() {
    return std::max(1, inference::ThreadPool::hardwareThreads());
}

QString defaultDatabasePath() {
    return nativePath(defaultSessionDatabasePath());
}

ModelChoice modelChoiceOf(const AppSettings& settings) {
    ModelChoice choice;
    if (settings.backend == AppSettings::Backend::Endpoint) {
        choice.backend = ModelChoice::Backend::Endpoint;
        choice.endpoint = settings.endpointUrl.toStdString();
        choice.modelName = settings.endpointModelName.toStdString();
        choice.apiKeyEnv = settings.apiKeyEnv.toStdString();
    } else if (!settings.modelPath.isEmpty()) {
        choice.backend = ModelChoice::Backend::LocalEngine;
        choice.modelPath = settings.modelPath.toStdString();
        choice.mmprojPath = settings.mmprojPath.toStdString();
        choice.threads = settings.threads;
        choice.contextSize = settings.contextSize;
        choice.shareEngine = settings.shareEngine;
        // A pulled model (the models panel's "Use" keeps its file's path) runs with the
        // catalogue's image budget and chat template, as `--model NAME` does.
        applyCatalogueDefaults(choice);
    }
    return choice;
}

bool isValidEnvironmentName(const QString& name) {
    static const QRegularExpression kPattern(QStringLiteral("^[A-Za-z_][A-Za-z0-9_]*$"));
    return kPattern.match(name).hasMatch();
}

AppSettings loadSettings(QSettings& store) {
    AppSettings settings;
    const QString backend = store.value(kBackend).toString();
    if (backend == kEndpointName) settings.backend = AppSettings::Backend::Endpoint;
    if (backend == kLocalName) settings.backend = AppSettings::Backend::Local;
    readString(store, kModelPath, settings.modelPath);
    readString(store, kMmprojPath, settings.mmprojPath);
    readString(store, kEndpointUrl, settings.endpointUrl);
    readString(store, kEndpointModel, settings.endpointModelName);
    readString(store, kApiKeyEnv, settings.apiKeyEnv);
    readInt(store, kThreads, settings.threads);
    readInt(store, kContextSize, settings.contextSize);
    readBool(store, kShareEngine, settings.shareEngine);
    readString(store, kActionFormat, settings.actionFormat);
    readInt(store, kScreenshots, settings.screenshotsInHistory);
    readInt(store, kMaxStepsKey, settings.maxSteps);
    readBool(store, kConfirmEvery, settings.confirmEveryAction);
    readBool(store, kConfirmRisky, settings.confirmRiskyActions);
    readString(store, kDatabase, settings.databasePath);
    // "1280x800" rather than QSize's binary @Size(...) form, so the INI file stays editable.
    static const QRegularExpression kSize(
        QStringLiteral("^\\s*(\\d{1,6})\\s*x\\s*(\\d{1,6})\\s*$"));
    const QRegularExpressionMatch size = kSize.match(store.value(kViewport).toString());
    if (size.hasMatch())
        settings.viewport = QSize(size.captured(1).toInt(), size.captured(2).toInt());
    return settings;
}

void saveSettings(const AppSettings& settings, QSettings& store) {
    store.setValue(kBackend,
                   settings.backend == AppSettings::Backend::Endpoint ? kEndpointName : kLocalName);
    store.setValue(kModelPath, settings.modelPath);
    store.setValue(kMmprojPath, settings.mmprojPath);
    store.setValue(kEndpointUrl, settings.endpointUrl);
    store.setValue(kEndpointModel, settings.endpointModelName);
    store.setValue(kApiKeyEnv, settings.apiKeyEnv);
    store.setValue(kThreads, settings.threads);
    store.setValue(kContextSize, settings.contextSize);
    store.setValue(kShareEngine, settings.shareEngine);
    store.setValue(kActionFormat, settings.actionFormat);
    store.setValue(kScreenshots, settings.screenshotsInHistory);
    store.setValue(kMaxStepsKey, settings.maxSteps);
    store.setValue(
        kViewport,
        QStringLiteral("%1x%2").arg(settings.viewport.width()).arg(settings.viewport.height()));
    store.setValue(kConfirmEvery, settings.confirmEveryAction);
    store.setValue(kConfirmRisky, settings.confirmRiskyActions);
    store.setValue(kDatabase, settings.databasePath);
}

std::vector<QString> problems(const AppSettings& settings) {
    std::vector<QString> found;
    const auto needFile = [&](const QString& path, const QString& what) {
        const QFileInfo info(path);
        if (!info.exists())
            found.push_back(QStringLiteral("%1 %2 does not exist.").arg(what, path));
        else if (!info.isFile())
            found.push_back(QStringLiteral("%1 %2 is not a file.").arg(what, path));
        else if (!info.isReadable())
            found.push_back(QStringLiteral("%1 %2 is not readable.").arg(what, path));
    };

    if (settings.backend == AppSettings::Backend::Local) {
        if (settings.modelPath.isEmpty()) {
            found.push_back(
                settings.mmprojPath.isEmpty()
                    ? QStringLiteral("Choose a model file (GGUF).")
                    : QStringLiteral("A vision projector (mmproj) needs a model file."));
        } else {
            needFile(settings.modelPath, QStringLiteral("Model file"));
        }
        if (!settings.mmprojPath.isEmpty())
            needFile(settings.mmprojPath, QStringLiteral("Vision projector"));
    } else {
        const QUrl url(settings.endpointUrl, QUrl::StrictMode);
        const QString scheme = url.scheme().toLower();
        if (settings.endpointUrl.trimmed().isEmpty())
            found.push_back(
                QStringLiteral("Enter the endpoint URL (e.g. http://127.0.0.1:8000/v1)."));
        else if (!url.isValid() ||
                 (scheme != QStringLiteral("http") && scheme != QStringLiteral("https")) ||
                 url.host().isEmpty())
            found.push_back(QStringLiteral("Endpoint URL %1 is not an http(s) URL with a host.")
                                .arg(settings.endpointUrl));
        if (!settings.apiKeyEnv.isEmpty() && !isValidEnvironmentName(settings.apiKeyEnv))
            found.push_back(
                QStringLiteral("API key variable '%1' is not a valid environment variable name.")
                    .arg(settings.apiKeyEnv));
    }

    if (settings.threads < 1 || settings.threads > kMaxThreads)
        found.push_back(QStringLiteral("Threads must be between 1 and %1 (is %2).")
                            .arg(kMaxThreads)
                            .arg(settings.threads));
    if (settings.contextSize < kMinContextSize || settings.contextSize > kMaxContextSize)
        found.push_back(QStringLiteral("Context size must be between %1 and %2 tokens (is %3).")
                            .arg(kMinContextSize)
                            .arg(kMaxContextSize)
                            .arg(settings.contextSize));
    if (!agent::actionFormatFromName(settings.actionFormat.toStdString()))
        found.push_back(QStringLiteral("Unknown action format '%1' (expected computer13, "
                                       "pyautogui, uitars or tools).")
                            .arg(settings.actionFormat));
    if (settings.screenshotsInHistory < 1 ||
        settings.screenshotsInHistory > kMaxScreenshotsInHistory)
        found.push_back(QStringLiteral("Screenshots in history must be between 1 and %1 (is %2).")
                            .arg(kMaxScreenshotsInHistory)
                            .arg(settings.screenshotsInHistory));
    if (settings.maxSteps < 1 || settings.maxSteps > kMaxSteps)
        found.push_back(QStringLiteral("Maximum steps must be between 1 and %1 (is %2).")
                            .arg(kMaxSteps)
                            .arg(settings.maxSteps));
    if (settings.viewport.width() < kMinViewport.width() ||
        settings.viewport.height() < kMinViewport.height() ||
        settings.viewport.width() > kMaxViewport.width() ||
        settings.viewport.height() > kMaxViewport.height())
        found.push_back(QStringLiteral("Viewport %1x%2 is outside %3x%4 .. %5x%6.")
                            .arg(settings.viewport.width())
                            .arg(settings.viewport.height())
                            .arg(kMinViewport.width())
                            .arg(kMinViewport.height())
                            .arg(kMaxViewport.width())
                            .arg(kMaxViewport.height()));

    if (settings.databasePath.trimmed().isEmpty()) {
        found.push_back(QStringLiteral("Choose a session database file."));
    } else {
        const QFileInfo database(settings.databasePath);
        if (database.isDir())
            found.push_back(QStringLiteral("Session database %1 is a folder, not a file.")
                                .arg(settings.databasePath));
    }
    return found;
}

Result<QString> describeGguf(const std::filesystem::path& path, GgufRole role) {
    Result<inference::GgufFile> file = inference::GgufFile::open(path);
    if (!file) return file.status();
    Result<std::string> arch = file->getString("general.architecture");
    if (!arch) return arch.status();
    if (role == GgufRole::VisionProjector && *arch != "clip") {
        return Status::invalidArgument(file->name() +
                                       ": not a vision projector (general.architecture is '" +
                                       *arch + "', expected 'clip')");
    }
    if (role == GgufRole::LanguageModel) {
        const std::vector<std::string> supported = inference::supportedArchitectures();
        if (std::find(supported.begin(), supported.end(), *arch) == supported.end()) {
            std::string known;
            for (const std::string& name : supported)
                known += (known.empty() ? "" : ", ") + name;
            return Status::unsupported(
                file->name() + ": architecture '" + *arch +
                (*arch == "clip" ? "' is a vision projector (mmproj)" : "' is not supported") +
                "; Iris's engine runs " + known);
        }
    }

    std::uint64_t parameters = 0;
    std::map<kernels::TensorType, std::uint64_t> bytesByType;
    for (const inference::GgufTensor& tensor : file->tensors()) {
        parameters += static_cast<std::uint64_t>(tensor.elements());
        bytesByType[tensor.type] += tensor.bytes;
    }
    QString text = QString::fromStdString(*arch) + QStringLiteral(" · ") + humanCount(parameters) +
                   QStringLiteral(" parameters");
    const auto dominant =
        std::max_element(bytesByType.begin(), bytesByType.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    if (dominant != bytesByType.end()) {
        text += QStringLiteral(" · ") + typeName(kernels::tensorTypeInfo(dominant->first).name);
    }
    return text;
}

}  // namespace iris::app
