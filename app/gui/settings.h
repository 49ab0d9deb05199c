#pragma once
// The desktop app's settings: what model to run, how the engine and the agent are configured,
// when to ask before acting, and where sessions are stored. Kept with QSettings (grouped keys such
// as "model/path"); the API key itself is never stored, only the name of the environment
// variable that holds it.

#include <filesystem>
#include <vector>

#include <QSize>
#include <QString>

#include "app/session/model_choice.h"
#include "base/status.h"

class QSettings;

namespace iris::app {

// std::thread::hardware_concurrency(), at least 1.
int defaultThreadCount();

// The CLI's default session database (app/session's defaultSessionDatabasePath()), as a QString.
QString defaultDatabasePath();

struct AppSettings {
    enum class Backend { Local, Endpoint };

    Backend backend = Backend::Local;
    QString modelPath;    // local GGUF language model
    QString mmprojPath;   // optional vision projector for it
    QString endpointUrl;  // OpenAI-compatible server, http(s)://...
    QString endpointModelName;
    QString apiKeyEnv = QStringLiteral("IRIS_API_KEY");  // the variable's name, never its value
    int threads = defaultThreadCount();
    int contextSize = 16384;
    // Share the local engine with other Iris processes (app/session/engine_sharing.h).
    bool shareEngine = true;
    QString actionFormat = QStringLiteral("tools");  // see agent::actionFormatFromName
    int screenshotsInHistory = 3;
    int maxSteps = 15;
    bool confirmEveryAction = false;
    bool confirmRiskyActions = true;
    QString databasePath = defaultDatabasePath();
    QSize viewport{1280, 800};

    bool operator==(const AppSettings&) const = default;
};

// Limits problems() enforces (and the dialog's spin boxes use).
inline constexpr int kMaxThreads = 1024;
inline constexpr int kMinContextSize = 512;
inline constexpr int kMaxContextSize = 1 << 20;
inline constexpr int kMaxScreenshotsInHistory = 50;
inline constexpr int kMaxSteps = 1000;
inline constexpr QSize kMinViewport{320, 240};
inline constexpr QSize kMaxViewport{7680, 4320};

// Values missing from `store` or of the wrong type keep their defaults; out-of-range ones are
// kept as read so that problems() can name them.
AppSettings loadSettings(QSettings& store);
void saveSettings(const AppSettings& settings, QSettings& store);

// The model the settings choose, for makeModelClient: the endpoint, the local model, or
// Backend::None when the local backend has no model file (the demo then replays its
// demonstration). A pulled model's file gets the catalogue's image budget and chat template
// (applyCatalogueDefaults). Ranges are problems()'s to check.
ModelChoice modelChoiceOf(const AppSettings& settings);

// What stops these settings from running an agent, one sentence each naming the field; empty
// when they are usable. Checks that files exist but does not parse them (see describeGguf).
std::vector<QString> problems(const AppSettings& settings);

// What a GGUF file is expected to be: a model Iris's engine runs, or a CLIP vision projector.
enum class GgufRole { LanguageModel, VisionProjector };

// "qwen2 · 494M parameters · Q8_0": the file's general.architecture, the total number of tensor
// elements, and the type holding most of its weight bytes; an error naming the file when it is
// not a GGUF file or not of `role`. Parses the whole header: call it off the GUI thread.
Result<QString> describeGguf(const std::filesystem::path& path, GgufRole role);

// True for names a POSIX shell accepts as an environment variable: [A-Za-z_][A-Za-z0-9_]*.
bool isValidEnvironmentName(const QString& name);

}  // namespace iris::app
