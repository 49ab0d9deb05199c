// iris serve --model F.gguf [--mmproj MM.gguf] [--host 127.0.0.1] [--port 8080]
//            [--api-key-env VAR] [--parallel N] [--ctx-size N] [--threads N]
//            [--allow-public-without-key]
// The socket listens first and the model loads on a thread of its own, so that /health can say
// "loading" meanwhile. Ctrl-C or SIGTERM ends streams in flight with an error event, cancels
// every generation and exits 0.
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "app/cli/agent_setup.h"
#include "app/cli/arguments.h"
#include "app/cli/device_option.h"
#include "app/cli/engine_commands.h"
#include "app/cli/interrupt_watcher.h"
#include "app/session/engine_sharing.h"
#include "app/serve/openai_server.h"
#include "inference/engine.h"
#include "inference/scheduler.h"

namespace iris::app {
namespace {

constexpr OptionSpec kOptions[] = {
    {"model", "m", true, "GGUF model file or a pulled model's name (required)"},
    {"mmproj", "", true, "the model's vision projector GGUF (for image parts)"},
    {"host", "", true, "address to listen on (default 127.0.0.1: this machine only)"},
    {"port", "", true, "TCP port (default 8080; 0: any free port, printed)"},
    {"api-key-env", "", true,
     "require 'Authorization: Bearer KEY', KEY read from this environment variable"},
    {"allow-public-without-key", "", false,
     "listen on a non-loopback address without --api-key-env (anyone who reaches it can use it)"},
    {"parallel", "np", true, "sequences generated at once; the KV cache holds this many contexts "
                             "(default 4)"},
    {"ctx-size", "c", true, "context size in tokens per sequence (default 4096)"},
    {"threads", "t", true, "compute threads (default: all cores)"},
    kDeviceOption,
    {"kv-disk-gb", "", true,
     "keep KV blocks in ~/.cache/iris/kv up to N GiB; prompt prefixes seen before (also before "
     "a restart) are read back instead of recomputed (default 0: off)"},
    {"kv-resident-mb", "", true,
     "MiniMax-M3: keep at most N MiB of the sparse layers' K/V in the KV pool, the rest in host "
     "memory and on disk; each step brings in the blocks its sparse attention selects (default "
     "0: all in the pool)"},
    {"kv-host-mb", "", true,
     "with --kv-resident-mb: MiB of spilled K/V kept in host memory before disk (default 4096)"},
    {"max-waiting", "", true, "requests queued beyond the running ones before 429 (default 64)"},
    {"max-body-mb", "", true, "largest request body in MiB, 413 above (default 64)"},
    {"no-shared-engine", "", false,
     "do not offer this engine to other Iris processes of this user (iris run, eval, the GUI)"},
    {"help", "h", false, "show this help"},
};

int usageError(const std::string& message) {
    std::cerr << "iris serve: " << message << "\nRun 'iris serve --help' for the options.\n";
    return 2;
}

// Loopback addresses reach only this machine; anything else (0.0.0.0, a LAN address) may be
// reached by others.
bool isLoopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host.starts_with("127.");
}

struct ServeSettings {
    std::filesystem::path model;
    inference::EngineOptions engine;
    inference::SchedulerOptions scheduler;
    serve::ServerOptions server;
    bool shareEngine = true;
};

Result<ServeSettings> readSettings(const Arguments& args) {
    const Result<std::string> model = args.required("model");
    const Result<std::int64_t> port = args.integer("port", 8080),
                               parallel = args.integer("parallel", 4),
                               ctx = args.integer("ctx-size", 4096),
                               threads = args.integer("threads",
                                                      inference::ThreadPool::hardwareThreads()),
                               waiting = args.integer("max-waiting", 64),
                               bodyMb = args.integer("max-body-mb", 64);
    for (const Status& s : {model.status(), port.status(), parallel.status(), ctx.status(),
                            threads.status(), waiting.status(), bodyMb.status()})
        IRIS_RETURN_IF_ERROR(s);
    if (*port < 0 || *port > 65535) return Status::invalidArgument("--port must be 0 to 65535");
    if (*parallel < 1 || *parallel > 256)
        return Status::invalidArgument("--parallel must be 1 to 256");
    if (*ctx < 16 || *threads < 1 || *waiting < 0 || *bodyMb < 1)
        return Status::invalidArgument(
            "--ctx-size must be >= 16, --threads and --max-body-mb >= 1, --max-waiting >= 0");
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
    ServeSettings settings;
    settings.engine.device = *device;
    settings.engine.kvTiers = std::move(*tiers);
    settings.scheduler.kvDisk = kvDiskOptions(*kvDiskBytes);
    settings.model = files->model;
    settings.engine.threads = int(*threads);
    settings.engine.contextSize = *ctx;
    settings.engine.maxSessions = int(*parallel);
    settings.engine.mmprojPath = args.value("mmproj").value_or(files->mmproj.string());
    if (files->entry) settings.engine.imageMaxPixels = files->entry->maxPixels;
    settings.scheduler.maxRunning = int(*parallel);
    settings.scheduler.maxWaiting = int(*waiting);
    settings.server.host = args.value("host").value_or("127.0.0.1");
    settings.server.port = int(*port);
    settings.server.maxBodyBytes = std::size_t(*bodyMb) << 20;
    // A pulled model answers to its name, a file to its file name.
    settings.server.modelName = files->pulled ? files->name : settings.model.filename().string();
    // A connection's thread waits for its generation, so the running and the waiting requests
    // each need one, plus a few for /health and /metrics.
    settings.server.httpThreads = int(*parallel + *waiting + 4);
    settings.shareEngine = !args.has("no-shared-engine");

    if (std::optional<std::string> variable = args.value("api-key-env")) {
        const char* key = std::getenv(variable->c_str());
        if (key == nullptr || *key == '\0')
            return Status::invalidArgument("--api-key-env " + *variable +
                                           ": the environment variable " + *variable +
                                           " is unset or empty");
        settings.server.apiKey = key;
    }
    if (settings.server.apiKey.empty() && !isLoopback(settings.server.host) &&
        !args.has("allow-public-without-key")) {
        return Status::invalidArgument(
            "--host " + settings.server.host +
            " is reachable from other machines: give --api-key-env VAR, or "
            "--allow-public-without-key to serve without a key");
    }
    return settings;
}

// The entry that offers the served engine to other Iris processes of this user
// (app/session/engine_sharing.h); null when sharing is off or not wanted. The entry holds the
// server's key, --api-key-env's value included: it is written 0600 into the user's own 0700
// runtime folder, so only processes of this user can read it, and those can read the serving
// process's environment (/proc/PID/environ) anyway.
std::unique_ptr<PublishedEntry> publishServedEngine(const ServeSettings& settings,
                                                    const inference::Engine& engine, int port) {
    configureEngineSharing({"serve", {}});
    const std::optional<std::filesystem::path> directory = engineSharingDirectory();
    if (!settings.shareEngine || !directory) {
        std::cerr << "iris serve: engine: loaded here (not shared with other Iris processes)\n";
        return nullptr;
    }
    Result<EngineEntry> entry = engineEntryFor(engine, settings.model, "serve");
    if (!entry) {
        std::cerr << "iris serve: not shared with other Iris processes: "
                  << entry.status().message() << '\n';
        return nullptr;
    }
    // Other processes connect over loopback whatever address the server listens on.
    entry->host = settings.server.host == "0.0.0.0" ? "127.0.0.1" : settings.server.host;
    entry->port = port;
    entry->apiKey = settings.server.apiKey;
    entry->modelName = settings.server.modelName;
    auto published = std::make_unique<PublishedEntry>(*directory, *entry);
    if (!published->written()) return nullptr;
    std::cerr << "iris serve: engine: loaded here (published for other Iris processes)\n";
    return published;
}

// Set by Ctrl-C or SIGTERM (through the InterruptWatcher); waited on by the main thread.
struct Interrupt {
    std::mutex mutex;
    std::condition_variable changed;
    bool requested = false;
};

// Loads the model on a loader thread while the server answers /health. The scheduler, or null
// when interrupted meanwhile or failed (then `failure` says why).
std::unique_ptr<inference::Scheduler> loadModel(const ServeSettings& settings,
                                                Interrupt& interrupt, Status& failure) {
    bool done = false;
    Result<std::unique_ptr<inference::Scheduler>> scheduler = Status::internal("not loaded");
    std::thread loader([&] {
        Result<std::unique_ptr<inference::Engine>> engine =
            inference::Engine::load(settings.model, settings.engine);
        if (engine) reportDevice(**engine, "iris serve", std::cerr);
        Result<std::unique_ptr<inference::Scheduler>> started =
            engine ? inference::Scheduler::start(std::move(*engine), settings.scheduler)
                   : Result<std::unique_ptr<inference::Scheduler>>(engine.status());
        std::lock_guard lock(interrupt.mutex);
        scheduler = std::move(started);
        done = true;
        interrupt.changed.notify_all();
    });
    bool interrupted = false;
    {
        std::unique_lock lock(interrupt.mutex);
        interrupt.changed.wait(lock, [&] { return done || interrupt.requested; });
        interrupted = interrupt.requested;
    }
    if (interrupted) std::cerr << "iris serve: stopping once the model has loaded\n";
    loader.join();  // Engine::load cannot be cancelled; a second interrupt quits at once
    if (interrupted) return nullptr;
    if (!scheduler) failure = scheduler.status();
    return scheduler ? std::move(*scheduler) : nullptr;
}

}  // namespace

int runServe(int argc, char** argv) {
    Result<Arguments> args = Arguments::parse(argc, argv, kOptions);
    if (!args) return usageError(args.status().message());
    if (args->has("help")) {
        std::cout << "Usage: iris serve --model F.gguf [--mmproj MM.gguf] [options]\n\n"
                     "An OpenAI-compatible HTTP server: POST /v1/chat/completions, "
                     "POST /v1/completions,\nGET /v1/models, GET /health, GET /metrics.\n\n"
                  << Arguments::usage(kOptions);
        return 0;
    }
    Result<ServeSettings> settings = readSettings(*args);
    if (!settings) return usageError(settings.status().message());

    Interrupt interrupt;       // outlives the watcher's callback
    InterruptWatcher watcher;  // before any other thread, so that it alone gets the signals
    serve::OpenAiServer server(settings->server);
    Result<int> port = server.start();
    if (!port) {
        std::cerr << "iris serve: " << port.status().message() << '\n';
        return 1;
    }
    std::cerr << "iris serve: listening on http://" << settings->server.host << ':' << *port
              << (settings->server.apiKey.empty() ? "" : " (API key required)")
              << "; loading " << settings->model.string() << '\n';
    watcher.onInterrupt([&interrupt] {
        std::lock_guard lock(interrupt.mutex);
        interrupt.requested = true;
        interrupt.changed.notify_all();
    });
    Status failure;
    std::unique_ptr<inference::Scheduler> scheduler = loadModel(*settings, interrupt, failure);
    if (!failure.isOk()) {
        std::cerr << "iris serve: " << failure.message() << '\n';
        return 1;
    }
    if (scheduler == nullptr) return 0;  // interrupted while loading
    std::cerr << "iris serve: ready: " << settings->server.modelName << ", "
              << settings->scheduler.maxRunning << " sequences of " << settings->engine.contextSize
              << " tokens, " << settings->engine.threads << " threads\n";
    std::unique_ptr<PublishedEntry> published =
        publishServedEngine(*settings, scheduler->engine(), *port);
    server.setScheduler(std::move(scheduler));
    {
        std::unique_lock lock(interrupt.mutex);
        interrupt.changed.wait(lock, [&] { return interrupt.requested; });
    }
    published.reset();  // before the server stops: no reader finds it going
    server.stop();
    std::cerr << "iris serve: stopped\n";
    return 0;
}

}  // namespace iris::app
