#include "app/cli/agent_setup.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "app/cli/device_option.h"
#include "app/models/model_pull.h"
#include "app/session/data_paths.h"
#include "app/session/engine_sharing.h"
#include "base/strings.h"

namespace iris::app {

Result<ModelFiles> resolveModelOption(const std::string& value) {
    ModelFiles files;
    std::error_code error;
    if (value.ends_with(".gguf") || std::filesystem::is_regular_file(value, error)) {
        files.model = value;
        files.name = std::filesystem::path(value).stem().string();
        return files;
    }
    // A missing catalogue only loses the defaults: the pulled files still run.
    Result<models::Catalogue> catalogue =
        models::loadCatalogue(dataDirectory() / "models" / "catalogue.json");
    if (const models::CatalogueEntry* entry = catalogue ? catalogue->find(value) : nullptr;
        entry && entry->bundled) {
        Result<models::BundledFiles> bundled =
            models::bundledModelFiles(*entry, dataDirectory() / "models");
        if (!bundled) return bundled.status().withContext("--model " + value + ": ");
        files.model = bundled->model;
        files.mmproj = bundled->mmproj;
        files.name = value;
        files.entry = *entry;
        return files;
    }
    const models::ModelStore store(models::defaultModelsDirectory());
    Result<models::PulledModel> pulled =
        models::findPulledModel(store, catalogue ? *catalogue : models::Catalogue{}, value);
    if (!pulled) return pulled.status().withContext("--model " + value + ": ");
    files.model = pulled->modelPath;
    files.mmproj = pulled->mmprojPath;
    files.name = value;
    files.pulled = true;
    files.entry = pulled->entry;
    return files;
}

std::optional<models::CatalogueEntry> catalogueEntryFromArguments(const Arguments& args) {
    const std::optional<std::string> model = args.value("model");
    if (!model) return std::nullopt;
    Result<ModelFiles> files = resolveModelOption(*model);
    if (!files) return std::nullopt;  // modelChoiceFromArguments reports it
    return files->entry;
}

std::vector<OptionSpec> modelAndDatabaseOptions() {
    return {
        {"model", "m", true,
         "GGUF model file for Iris's own engine, or a pulled model's name (iris models list)"},
        {"mmproj", "", true, "the model's vision projector GGUF (image input)"},
        {"endpoint", "", true,
         "an OpenAI-compatible server instead, e.g. http://127.0.0.1:8000/v1; given several "
         "times, requests are balanced over the servers"},
        {"model-name", "", true, "the model name the endpoint expects (default: iris)"},
        {"api-key-env", "", true, "environment variable holding the endpoint's key (IRIS_API_KEY)"},
        {"threads", "t", true, "compute threads of the local engine (default: all cores)"},
        kDeviceOption,
        {"ctx-size", "c", true, "context size of the local engine in tokens (default 16384)"},
        {"kv-disk-gb", "", true,
         "keep the local engine's KV blocks in ~/.cache/iris/kv up to N GiB, so that a prompt "
         "prefix seen before (also before a restart) is read back, not recomputed (default 0: "
         "off)"},
        {"kv-resident-mb", "", true,
         "MiniMax-M3: keep at most N MiB of the sparse layers' K/V in the KV pool; the rest waits "
         "in host memory (--kv-host-mb) and on disk (--kv-disk-gb), and each step brings in the "
         "blocks its sparse attention selects (default 0: all in the pool)"},
        {"kv-host-mb", "", true,
         "with --kv-resident-mb: MiB of spilled K/V kept in host memory before disk (default "
         "4096)"},
        {"db", "", true, "session database (default ~/.local/share/iris/sessions.db)"},
        {"no-shared-engine", "", false,
         "never use another Iris process's engine of the same --model, nor offer this one's"},
    };
}

Result<std::vector<std::string>> readEndpointsFile(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) return Status::ioError(path.string() + ": cannot be read");
    std::vector<std::string> endpoints;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        const std::string_view text = trim(line);
        if (text.empty() || text.front() == '#') continue;
        const std::string where = path.string() + ":" + std::to_string(number) + ": ";
        if (!text.starts_with("http://") && !text.starts_with("https://"))
            return Status::invalidArgument(where + "'" + std::string(text) +
                                           "' is not an http:// or https:// base URL");
        if (text.find_first_of(" \t") != std::string_view::npos)
            return Status::invalidArgument(where + "one base URL per line");
        if (std::find(endpoints.begin(), endpoints.end(), text) != endpoints.end())
            return Status::invalidArgument(where + std::string(text) + " is listed twice");
        endpoints.emplace_back(text);
    }
    if (in.bad()) return Status::ioError(path.string() + ": read error");
    if (endpoints.empty()) return Status::invalidArgument(path.string() + ": no endpoint listed");
    return endpoints;
}

Result<inference::KvTierOptions> kvTierOptionsFromArguments(const Arguments& args,
                                                            std::int64_t diskBytes) {
    const Result<double> residentMb = args.number("kv-resident-mb", 0),
                         hostMb = args.number("kv-host-mb", 4096);
    IRIS_RETURN_IF_ERROR(residentMb.status());
    IRIS_RETURN_IF_ERROR(hostMb.status());
    return kvTierOptions(*residentMb, *hostMb, diskBytes);
}

Result<ModelChoice> modelChoiceFromArguments(const Arguments& args) {
    const std::optional<std::string> model = args.value("model");
    std::vector<std::string> endpoints = args.values("endpoint");
    if (std::optional<std::string> file = args.value("endpoints-file")) {
        Result<std::vector<std::string>> listed = readEndpointsFile(*file);
        if (!listed) return listed.status().withContext("--endpoints-file: ");
        endpoints.insert(endpoints.end(), listed->begin(), listed->end());
    }
    if (model && !endpoints.empty())
        return Status::invalidArgument("give --model or --endpoint, not both");
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
        if (std::find(endpoints.begin(), endpoints.begin() + std::ptrdiff_t(i), endpoints[i]) !=
            endpoints.begin() + std::ptrdiff_t(i))
            return Status::invalidArgument("--endpoint: " + endpoints[i] + " is given twice");
    }
    ModelChoice choice;
    if (!endpoints.empty()) {
        choice.backend = ModelChoice::Backend::Endpoint;
        choice.endpoint = endpoints.front();
        if (endpoints.size() >= 2) choice.endpoints = std::move(endpoints);
        choice.modelName = args.value("model-name").value_or("iris");
        if (std::optional<std::string> keyEnv = args.value("api-key-env")) {
            if (!std::getenv(keyEnv->c_str()))
                return Status::invalidArgument("--api-key-env: the environment variable " +
                                               *keyEnv + " is not set");
            choice.apiKeyEnv = *keyEnv;
        }
        return choice;
    }
    if (!model) {
        if (args.has("mmproj")) return Status::invalidArgument("--mmproj needs --model");
        return choice;
    }
    const Result<std::int64_t> threads = args.integer("threads", choice.threads);
    IRIS_RETURN_IF_ERROR(threads.status());
    const Result<std::int64_t> context = args.integer("ctx-size", choice.contextSize);
    IRIS_RETURN_IF_ERROR(context.status());
    if (*threads < 1 || *context < 256)
        return Status::invalidArgument("--threads must be >= 1 and --ctx-size >= 256");
    const Result<double> kvDiskGb = args.number("kv-disk-gb", 0);
    IRIS_RETURN_IF_ERROR(kvDiskGb.status());
    const Result<std::int64_t> kvDiskBytes = kvDiskBytesFromGigabytes(*kvDiskGb);
    IRIS_RETURN_IF_ERROR(kvDiskBytes.status());
    Result<inference::KvTierOptions> tiers = kvTierOptionsFromArguments(args, *kvDiskBytes);
    IRIS_RETURN_IF_ERROR(tiers.status());
    const Result<inference::DeviceChoice> device = deviceFromArguments(args);
    IRIS_RETURN_IF_ERROR(device.status());
    Result<ModelFiles> files = resolveModelOption(*model);
    IRIS_RETURN_IF_ERROR(files.status());
    choice.device = *device;
    choice.backend = ModelChoice::Backend::LocalEngine;
    choice.kvDiskBytes = *kvDiskBytes;
    choice.kvTiers = std::move(*tiers);
    choice.modelPath = files->model;
    choice.mmprojPath = args.value("mmproj").value_or(files->mmproj.string());
    if (files->entry) {
        choice.imageMaxPixels = files->entry->maxPixels;
        choice.chatTemplate = inference::chatTemplateKindFromName(files->entry->chatTemplate);
    } else {
        applyCatalogueDefaults(choice);  // a file of the store given by its path
    }
    choice.threads = int(*threads);
    choice.contextSize = *context;
    choice.shareEngine = !args.has("no-shared-engine");
    return choice;
}

Result<std::unique_ptr<agent::ModelClient>> modelClientFromArguments(const Arguments& args) {
    Result<ModelChoice> choice = modelChoiceFromArguments(args);
    IRIS_RETURN_IF_ERROR(choice.status());
    return makeModelClient(*choice);
}

void shareLocalEngines(const std::string& processKind) {
    configureEngineSharing({processKind, {}});
}

void sayWhichEngine(const agent::ModelClient& client, std::ostream& out) {
    const std::string summary = engineUseSummary(client);
    if (!summary.empty()) out << "engine: " << summary << '\n';
    if (const std::string note = engineDeviceNote(client); !note.empty())
        out << "engine: " << note << '\n';
}

std::filesystem::path sessionDatabasePath(const Arguments& args) {
    if (std::optional<std::string> db = args.value("db")) return *db;
    return defaultSessionDatabasePath();
}

}  // namespace iris::app
