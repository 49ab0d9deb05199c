// iris models pull | list | rm | verify | info: the model store (app/models) on the command line.
// Everything but `pull` works offline.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

#include "app/cli/arguments.h"
#include "app/cli/interrupt_watcher.h"
#include "app/cli/models_commands.h"
#include "app/models/catalogue.h"
#include "app/models/model_pull.h"
#include "app/session/data_paths.h"
#include "base/strings.h"
#include "inference/gguf/gguf_file.h"
#include "kernels/tensor_type.h"

namespace iris::app {
namespace {
namespace fs = std::filesystem;
using namespace iris::app::models;

constexpr int kOk = 0, kFailed = 1, kUsage = 2;

int usageError(std::string_view command, const std::string& message) {
    std::cerr << "iris models " << command << ": " << message << "\nRun 'iris models " << command
              << " --help' for the options.\n";
    return kUsage;
}

int failure(std::string_view command, const std::string& message) {
    std::cerr << "iris models " << command << ": " << message << '\n';
    return kFailed;
}

// Parses argv, prints --help; nullopt-like: returns the exit code in `exit` when done.
std::optional<Arguments> parse(std::string_view command, std::string_view usage, int argc,
                               char** argv, std::vector<OptionSpec> specs, int& exit) {
    specs.push_back({"help", "h", false, "show this help"});
    Result<Arguments> args = Arguments::parse(argc, argv, specs);
    if (!args) {
        exit = usageError(command, args.status().message());
        return std::nullopt;
    }
    if (args->has("help")) {
        std::cout << "Usage: iris models " << command << ' ' << usage << "\n\n"
                  << Arguments::usage(specs)
                  << "\nThe store: $IRIS_MODELS_DIR, else $XDG_CACHE_HOME/iris/models, else "
                     "~/.cache/iris/models.\n";
        exit = kOk;
        return std::nullopt;
    }
    return std::move(*args);
}

Result<Catalogue> builtInCatalogue() {
    return loadCatalogue(dataDirectory() / "models" / "catalogue.json");
}

std::string durationText(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    const long long s = static_cast<long long>(seconds + 0.5);
    char text[32];
    if (s >= 3600)
        std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, s / 60 % 60);
    else if (s >= 60)
        std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
    else
        std::snprintf(text, sizeof text, "%llds", s);
    return text;
}

std::string dateText(std::int64_t unix) {
    if (unix <= 0) return "never";
    const std::time_t t = std::time_t(unix);
    std::tm tm{};
    ::localtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &tm);
    return text;
}

std::string padded(std::string text, std::size_t width) {
    if (text.size() < width) text.append(width - text.size(), ' ');
    return text;
}

// One updating line on a terminal; a line every ten seconds (and at the end) otherwise, so that
// logs stay readable.
class ProgressPrinter {
public:
    ProgressPrinter() : m_tty(::isatty(STDERR_FILENO) != 0) {}

    void update(const std::string& file, const DownloadProgress& p) {
        std::lock_guard lock(m_mutex);
        const auto now = std::chrono::steady_clock::now();
        const bool finished = p.total != 0 && p.done >= p.total;
        const bool newFile = file != m_file;
        if (!m_tty && !finished && !newFile && now - m_last < std::chrono::seconds(10)) return;
        if (!m_tty && finished && m_finished == file) return;
        m_last = now;
        m_file = file;
        if (finished) m_finished = file;
        std::string line = file + "  " + humanBytes(p.done);
        if (p.total) {
            char percent[16];
            std::snprintf(percent, sizeof percent, " %3.0f%%",
                          100.0 * double(p.done) / double(p.total));
            line += " / " + humanBytes(p.total) + percent;
        }
        if (p.bytesPerSecond > 0) {
            line += "  " + humanBytes(std::uint64_t(p.bytesPerSecond)) + "/s";
            if (p.total > p.done)
                line += "  ETA " + durationText(double(p.total - p.done) / p.bytesPerSecond);
        }
        if (p.resumed) line += "  (resumed at " + humanBytes(p.resumed) + ")";
        if (m_tty) {
            std::cerr << '\r' << padded(line, m_width) << (finished ? "\n" : "") << std::flush;
            m_width = finished ? 0 : std::max(m_width, line.size());
        } else {
            std::cerr << line << '\n';
        }
    }

    void message(const std::string& text) {
        std::lock_guard lock(m_mutex);
        if (m_tty && m_width) std::cerr << '\n';
        m_width = 0;
        std::cerr << text << '\n';
    }

    void endLine() {
        std::lock_guard lock(m_mutex);
        if (m_tty && m_width) std::cerr << '\n';
        m_width = 0;
    }

private:
    bool m_tty;
    std::mutex m_mutex;
    std::string m_file, m_finished;
    std::size_t m_width = 0;
    std::chrono::steady_clock::time_point m_last{};
};

// The model named on the command line, in the store or as a file: its manifest when it is one.
struct Target {
    fs::path model;
    fs::path mmproj;
    std::optional<Manifest> manifest;
};

}  // namespace

int runModelsPull(int argc, char** argv) {
    InterruptWatcher interrupts;  // before any thread exists
    int exit = 0;
    std::optional<Arguments> args = parse(
        "pull", "NAME[:QUANT] | USER/REPO[:QUANT] | USER/REPO/FILE.gguf [options]", argc, argv,
        {{"hub", "", true,
          "the hub or a mirror (default $IRIS_HF_ENDPOINT, else https://huggingface.co)"},
         {"connections", "", true, "parallel ranges for large files (default 4)"}},
        exit);
    if (!args) return exit;
    if (args->positional().size() != 1) return usageError("pull", "name one model");
    Result<ModelReference> reference = parseModelReference(args->positional()[0]);
    if (!reference) return usageError("pull", reference.status().message());
    Result<Catalogue> catalogue = builtInCatalogue();
    if (!catalogue) return failure("pull", catalogue.status().message());
    const Result<std::int64_t> connections = args->integer("connections", 4);
    if (!connections || *connections < 1 || *connections > 16)
        return usageError("pull", "--connections: expected 1 to 16");

    PullOptions options;
    options.hub = hubOptionsFromEnvironment();
    if (std::optional<std::string> hub = args->value("hub")) {
        options.hub.endpoint = *hub;
        while (options.hub.endpoint.ends_with('/'))
            options.hub.endpoint.pop_back();
    }
    options.connections = int(*connections);
    std::atomic<bool> cancel = false;
    options.cancel = &cancel;
    interrupts.onInterrupt([&cancel] { cancel = true; });
    ProgressPrinter printer;
    options.onProgress = [&printer](const std::string& file, const DownloadProgress& progress) {
        printer.update(file, progress);
    };
    options.onMessage = [&printer](const std::string& text) { printer.message(text); };

    const ModelStore store(defaultModelsDirectory());
    Result<Manifest> manifest = pullModel(store, *catalogue, *reference, options);
    printer.endLine();
    if (!manifest) {
        if (manifest.status().code() == StatusCode::Cancelled) {
            return failure("pull", "stopped; run the same command again to resume (" +
                                       manifest.status().message() + ")");
        }
        return failure("pull", manifest.status().message());
    }
    std::cout << "pulled " << manifest->name << ':' << manifest->quant << " ("
              << manifest->model.file << ", " << humanBytes(manifest->model.size);
    if (manifest->mmproj)
        std::cout << "; projector " << manifest->mmproj->file << ", "
                  << humanBytes(manifest->mmproj->size);
    std::cout << ")\nrun it with: --model " << manifest->name
              << (manifest->quant == "Q4_K_M" ? "" : ":" + manifest->quant) << '\n';
    return kOk;
}

int runModelsList(int argc, char** argv) {
    int exit = 0;
    std::optional<Arguments> args = parse(
        "list", "[--catalogue]", argc, argv,
        {{"catalogue", "", false, "list the built-in catalogue instead of pulled models"}}, exit);
    if (!args) return exit;
    const ModelStore store(defaultModelsDirectory());
    Result<std::vector<Manifest>> pulled = store.list();
    if (!pulled) return failure("list", pulled.status().message());
    if (args->has("catalogue")) {
        Result<Catalogue> catalogue = builtInCatalogue();
        if (!catalogue) return failure("list", catalogue.status().message());
        std::cout << padded("NAME", 18) << padded("FORMAT", 8) << padded("PULLED", 8)
                  << "REPOSITORY\n";
        for (const CatalogueEntry& entry : catalogue->entries) {
            bool have = false;
            for (const Manifest& m : *pulled)
                have = have || m.name == entry.name;
            std::cout << padded(entry.name, 18) << padded(entry.actionFormat, 8)
                      << padded(entry.bundled ? "bundled"
                                : have        ? "yes"
                                              : "no",
                                8)
                      << (entry.bundled    ? "(installed with Iris)"
                          : entry.verified ? entry.repo
                                           : entry.repo + " (unverified)")
                      << "\n    " << entry.description << '\n';
        }
        return kOk;
    }
    if (pulled->empty()) {
        std::cout << "no models in " << store.root().string()
                  << " (iris models pull ui-tars-1.5-7b; iris models list --catalogue)\n";
        return kOk;
    }
    std::size_t width = 4;
    for (const Manifest& m : *pulled)
        width = std::max(width, m.name.size());
    std::cout << padded("NAME", width + 2) << padded("QUANT", 10) << padded("SIZE", 11)
              << padded("VISION", 8) << "LAST USED\n";
    for (const Manifest& m : *pulled) {
        const std::uint64_t size = m.model.size + (m.mmproj ? m.mmproj->size : 0);
        std::cout << padded(m.name, width + 2) << padded(m.quant, 10)
                  << padded(humanBytes(size), 11) << padded(m.mmproj ? "yes" : "no", 8)
                  << dateText(m.lastUsed) << '\n';
    }
    return kOk;
}

int runModelsRm(int argc, char** argv) {
    int exit = 0;
    std::optional<Arguments> args = parse("rm", "NAME[:QUANT]", argc, argv, {}, exit);
    if (!args) return exit;
    if (args->positional().size() != 1) return usageError("rm", "name one model");
    Result<ModelReference> reference = parseModelReference(args->positional()[0]);
    if (!reference || reference->kind == ModelReference::Kind::RepositoryFile)
        return usageError("rm", "'" + args->positional()[0] + "': expected NAME[:QUANT]");
    const ModelStore store(defaultModelsDirectory());
    Result<std::uint64_t> freed = store.remove(reference->name, reference->quant);
    if (!freed) return failure("rm", freed.status().message());
    std::cout << "removed " << args->positional()[0] << ", freed " << humanBytes(*freed) << '\n';
    return kOk;
}

int runModelsVerify(int argc, char** argv) {
    int exit = 0;
    std::optional<Arguments> args = parse("verify", "[NAME[:QUANT]]", argc, argv, {}, exit);
    if (!args) return exit;
    if (args->positional().size() > 1) return usageError("verify", "name at most one model");
    const ModelStore store(defaultModelsDirectory());
    std::vector<Manifest> manifests;
    if (args->positional().empty()) {
        Result<std::vector<Manifest>> all = store.list();
        if (!all) return failure("verify", all.status().message());
        manifests = *all;
    } else {
        Result<ModelReference> reference = parseModelReference(args->positional()[0]);
        if (!reference) return usageError("verify", reference.status().message());
        Result<std::vector<Manifest>> all = store.list();
        if (!all) return failure("verify", all.status().message());
        for (const Manifest& m : *all) {
            if (m.name == reference->name &&
                (reference->quant.empty() || equalsIgnoringAsciiCase(m.quant, reference->quant)))
                manifests.push_back(m);
        }
        if (manifests.empty())
            return failure("verify",
                           "no model '" + args->positional()[0] + "' in " + store.root().string());
    }
    int bad = 0;
    std::map<std::string, bool> checked;  // a projector shared by quantizations is hashed once
    for (const Manifest& m : manifests) {
        std::vector<StoredFile> files{m.model};
        if (m.mmproj) files.push_back(*m.mmproj);
        for (const StoredFile& file : files) {
            const fs::path path = store.blobPath(file.sha256);
            const std::string label = m.name + ":" + m.quant + "  " + file.file + "  ";
            if (const auto it = checked.find(file.sha256); it != checked.end()) {
                std::cout << label << (it->second ? "ok" : "BAD") << '\n';
                continue;
            }
            Result<std::string> digest = sha256OfFile(path);
            std::error_code error;
            const std::uint64_t size = fs::file_size(path, error);
            const bool ok = digest && *digest == file.sha256 && !error && size == file.size;
            checked[file.sha256] = ok;
            if (ok) {
                std::cout << label << "ok\n";
            } else {
                ++bad;
                std::cout << label << "BAD: "
                          << (!digest ? digest.status().message()
                                      : "expected SHA-256 " + file.sha256 + ", got " + *digest) +
                                 "; pull it again after 'iris models rm " + m.name + ":" + m.quant +
                                 "'"
                          << '\n';
            }
        }
    }
    return bad ? kFailed : kOk;
}

int runModelsInfo(int argc, char** argv) {
    int exit = 0;
    std::optional<Arguments> args = parse("info", "NAME[:QUANT] | FILE.gguf", argc, argv, {}, exit);
    if (!args) return exit;
    if (args->positional().size() != 1) return usageError("info", "name one model or file");
    const std::string name = args->positional()[0];
    Target target;
    std::error_code error;
    const ModelStore store(defaultModelsDirectory());
    std::optional<CatalogueEntry> entry;
    Result<Catalogue> catalogue = builtInCatalogue();
    if (fs::is_regular_file(name, error)) {
        target.model = name;
        // A projector beside the file (llama.cpp's mmproj naming) is the one it pairs with.
        for (const auto& other : fs::directory_iterator(fs::path(name).parent_path().empty()
                                                            ? fs::path(".")
                                                            : fs::path(name).parent_path(),
                                                        error)) {
            if (isProjectorFile(other.path().filename().string()) &&
                other.path().extension() == ".gguf" && !fs::equivalent(other.path(), name, error))
                target.mmproj = other.path();
        }
    } else {
        Result<ModelReference> reference = parseModelReference(name);
        if (!reference) return usageError("info", reference.status().message());
        Result<Manifest> manifest = store.find(reference->name, reference->quant);
        if (!manifest) return failure("info", manifest.status().message());
        target.manifest = *manifest;
        target.model = store.blobPath(manifest->model.sha256);
        if (manifest->mmproj) target.mmproj = store.blobPath(manifest->mmproj->sha256);
        if (catalogue) {
            if (const CatalogueEntry* e =
                    catalogueEntryFor(*catalogue, manifest->name, manifest->repo))
                entry = *e;
        }
    }
    Result<inference::GgufFile> file = inference::GgufFile::open(target.model);
    if (!file) return failure("info", file.status().message());
    const auto text = [&](const inference::GgufFile& f, const std::string& key) {
        const inference::GgufValue* value = f.find(key);
        return value ? inference::ggufToString(*value, 4) : std::string("?");
    };
    const std::string arch = file->getString("general.architecture").isOk()
                                 ? *file->getString("general.architecture")
                                 : std::string("?");
    std::uint64_t parameters = 0;
    std::map<std::string, int> types;
    for (const inference::GgufTensor& t : file->tensors()) {
        parameters += std::uint64_t(t.elements());
        ++types[std::string(kernels::tensorTypeInfo(t.type).name)];
    }
    if (target.manifest) {
        std::cout << "model:        " << target.manifest->name << ':' << target.manifest->quant
                  << " (" << target.manifest->repo << '/' << target.manifest->model.file << ")\n";
    }
    std::cout << "file:         " << target.model.string() << " (" << humanBytes(file->fileSize())
              << ")\n"
              << "name:         " << text(*file, "general.name") << '\n'
              << "architecture: " << arch << '\n';
    char billions[32];
    std::snprintf(billions, sizeof billions, "%.2f B", double(parameters) / 1e9);
    std::cout << "parameters:   " << parameters << " (" << billions << ")\n"
              << "context:      " << text(*file, arch + ".context_length") << " tokens\n"
              << "tensor types:";
    for (const auto& [type, count] : types)
        std::cout << ' ' << type << " x" << count;
    std::cout << '\n';
    if (target.mmproj.empty()) {
        std::cout << "projector:    none (text only)\n";
    } else {
        Result<inference::GgufFile> projector = inference::GgufFile::open(target.mmproj);
        std::cout << "projector:    " << target.mmproj.string();
        if (projector) {
            std::cout << " (" << humanBytes(projector->fileSize()) << ", "
                      << text(*projector, "general.architecture") << ", projector type "
                      << text(*projector, "clip.projector_type") << ", embeddings "
                      << text(*projector, "clip.vision.projection_dim") << " wide)";
        } else {
            std::cout << " (" << projector.status().message() << ")";
        }
        std::cout << '\n';
    }
    if (entry) {
        std::cout << "drive with:   --action-format " << entry->actionFormat << " --coords "
                  << entry->coords;
        if (entry->maxPixels) std::cout << ", images up to " << entry->maxPixels << " pixels";
        std::cout << ", chat template " << entry->chatTemplate << '\n';
        if (!entry->notes.empty()) std::cout << "notes:        " << entry->notes << '\n';
    }
    return kOk;
}

}  // namespace iris::app
