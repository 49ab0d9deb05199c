#include "app/cli/agent_setup.h"

#include <cstdlib>

#include <unistd.h>

#include <QApplication>

#include "agent/clients/local_engine_client.h"
#include "agent/clients/openai_client.h"
#include "agent/env/browser/browser_environment.h"
#include "app/build_info.h"
#include "inference/thread_pool.h"

namespace iris::app {
namespace fs = std::filesystem;

std::vector<OptionSpec> modelAndDatabaseOptions() {
    return {
        {"model", "m", true, "GGUF model file for Iris's own engine"},
        {"mmproj", "", true, "the model's vision projector GGUF (image input)"},
        {"endpoint", "", true,
         "an OpenAI-compatible server instead, e.g. http://127.0.0.1:8000/v1"},
        {"model-name", "", true, "the model name the endpoint expects (default: iris)"},
        {"api-key-env", "", true, "environment variable holding the endpoint's key (IRIS_API_KEY)"},
        {"threads", "t", true, "compute threads of the local engine (default: all cores)"},
        {"ctx-size", "c", true, "context size of the local engine in tokens (default 16384)"},
        {"db", "", true, "session database (default ~/.local/share/iris/sessions.db)"},
    };
}

Result<std::unique_ptr<agent::ModelClient>> makeModelClient(const Arguments& args) {
    const std::optional<std::string> model = args.value("model");
    const std::optional<std::string> endpoint = args.value("endpoint");
    if (model && endpoint) return Status::invalidArgument("give --model or --endpoint, not both");
    if (endpoint) {
        agent::OpenAiSettings settings;
        settings.baseUrl = *endpoint;
        settings.model = args.value("model-name").value_or("iris");
        if (std::optional<std::string> keyEnv = args.value("api-key-env")) {
            if (!std::getenv(keyEnv->c_str()))
                return Status::invalidArgument("--api-key-env: the environment variable " +
                                               *keyEnv + " is not set");
            settings.apiKeyEnv = *keyEnv;
        }
        return std::unique_ptr<agent::ModelClient>(
            std::make_unique<agent::OpenAiClient>(std::move(settings)));
    }
    if (!model) {
        if (args.has("mmproj")) return Status::invalidArgument("--mmproj needs --model");
        return std::unique_ptr<agent::ModelClient>();
    }
    const Result<std::int64_t> threads =
        args.integer("threads", inference::ThreadPool::hardwareThreads());
    IRIS_RETURN_IF_ERROR(threads.status());
    const Result<std::int64_t> context = args.integer("ctx-size", 16384);
    IRIS_RETURN_IF_ERROR(context.status());
    if (*threads < 1 || *context < 256)
        return Status::invalidArgument("--threads must be >= 1 and --ctx-size >= 256");
    inference::EngineOptions options;
    options.threads = int(*threads);
    options.contextSize = *context;
    if (std::optional<std::string> mmproj = args.value("mmproj")) options.mmprojPath = *mmproj;
    Result<std::unique_ptr<agent::LocalEngineClient>> client =
        agent::LocalEngineClient::open(*model, options);
    if (!client) return client.status();
    return std::unique_ptr<agent::ModelClient>(std::move(*client));
}

fs::path sessionDatabasePath(const Arguments& args) {
    if (std::optional<std::string> db = args.value("db")) return *db;
    return defaultSessionDatabasePath();
}

fs::path defaultSessionDatabasePath() {
    if (const char* data = std::getenv("XDG_DATA_HOME"); data && *data)
        return fs::path(data) / "iris" / "sessions.db";
    if (const char* home = std::getenv("HOME"); home && *home)
        return fs::path(home) / ".local" / "share" / "iris" / "sessions.db";
    return fs::path("iris-sessions.db");
}

fs::path dataDirectory() {
    if (const char* dir = std::getenv("IRIS_DATA_DIR"); dir && *dir) return dir;
    std::error_code error;
    const fs::path executable = fs::read_symlink("/proc/self/exe", error);
    if (!error) {
        const fs::path installed = executable.parent_path().parent_path() / "share" / "iris";
        if (fs::exists(installed / "demo", error)) return installed;
    }
    return kSourceResources;
}

std::unique_ptr<QApplication> makeBrowserApplication(int& argc, char** argv) {
    const bool hasDisplay = std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY");
    if (!hasDisplay && !std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    if (geteuid() == 0) setenv("QTWEBENGINE_DISABLE_SANDBOX", "1", 0);
    agent::BrowserEnvironment::prepareProcess();
    return std::make_unique<QApplication>(argc, argv);
}

}  // namespace iris::app
