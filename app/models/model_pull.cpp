#include "app/models/model_pull.h"

#include <ctime>
#include <vector>

namespace iris::app::models {
namespace {

std::string baseName(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Fetches one file into its blob unless it is there. The lock is returned so that the caller
// keeps the blob from `iris models rm`'s clean-up until its manifest names it.
Result<BlobLock> fetchFile(const ModelStore& store, const std::string& repo, const HubFile& file,
                           const PullOptions& options) {
    if (file.sha256.empty()) {
        return Status::unsupported(repo + "/" + file.path +
                                   ": the hub gives no SHA-256 for it (not an LFS file); Iris "
                                   "stores only files it can verify");
    }
    const auto say = [&](const std::string& message) {
        if (options.onMessage) options.onMessage(message);
    };
    Result<BlobLock> lock = store.lockBlob(
        file.sha256, [&] { say("waiting for another Iris process pulling " + file.path); });
    IRIS_RETURN_IF_ERROR(lock.status());
    if (store.hasBlob(file.sha256)) {
        say(file.path + " is in the store already");
        return lock;
    }
    DownloadRequest request;
    request.url = fileUrl(options.hub, repo, file.path);
    request.target = store.blobPath(file.sha256);
    request.expectedSize = file.size;
    request.expectedSha256 = file.sha256;
    request.token = options.hub.token;
    request.cancel = options.cancel;
    request.parallelThreshold = options.parallelThreshold;
    request.connections = options.connections;
    request.firstRetryWaitS = options.firstRetryWaitS;
    if (options.onProgress) {
        request.onProgress = [&options, name = file.path](const DownloadProgress& progress) {
            options.onProgress(name, progress);
        };
    }
    IRIS_RETURN_IF_ERROR(downloadModelFile(request).withContext(repo + "/" + file.path + ": "));
    return lock;
}

}  // namespace

const CatalogueEntry* catalogueEntryFor(const Catalogue& catalogue, const std::string& name,
                                        const std::string& repo) {
    if (const CatalogueEntry* entry = catalogue.find(name)) return entry;
    for (const CatalogueEntry& entry : catalogue.entries)
        if (!entry.bundled && entry.repo == repo) return &entry;
    return nullptr;
}

Result<Manifest> pullModel(const ModelStore& store, const Catalogue& catalogue,
                           const ModelReference& reference, const PullOptions& options) {
    std::string repo = reference.name;
    std::string quant = reference.quant;
    const CatalogueEntry* entry = nullptr;
    if (reference.kind == ModelReference::Kind::Catalogue) {
        entry = catalogue.find(reference.name);
        if (!entry) {
            return Status::notFound("'" + reference.name +
                                    "' is not in the model catalogue (iris models list "
                                    "--catalogue); a hub repository is named user/repo[:QUANT]");
        }
        if (entry->bundled) {
            return Status::invalidArgument("'" + reference.name +
                                           "' is bundled with Iris: nothing to pull, run it with "
                                           "--model " +
                                           reference.name);
        }
        repo = entry->repo;
        if (quant.empty()) quant = entry->defaultQuant;
    }
    Result<std::vector<HubFile>> files = listRepositoryFiles(options.hub, repo);
    IRIS_RETURN_IF_ERROR(files.status());

    Result<ChosenFiles> chosen = Status::internal("unset");
    if (reference.kind == ModelReference::Kind::RepositoryFile) {
        std::vector<HubFile> candidates;
        for (const HubFile& file : *files) {
            if (file.path == reference.file || isProjectorFile(file.path))
                candidates.push_back(file);
        }
        const bool found = std::any_of(candidates.begin(), candidates.end(),
                                       [&](const HubFile& f) { return f.path == reference.file; });
        if (!found) return Status::notFound(repo + ": no file " + reference.file);
        if (isProjectorFile(reference.file))
            return Status::invalidArgument(reference.file + " is a projector, not a model");
        chosen = chooseFiles(candidates, repo, "");
    } else if (entry && entry->files.contains(quant)) {
        // The catalogue's file name when the repository has it, else the file its listing
        // names with that quantization (publishers rename files).
        chosen = chooseFiles(*files, repo, quant, entry->mmproj);
        if (chosen) {
            const std::string& exact = entry->files.at(quant);
            for (const HubFile& file : *files) {
                if (baseName(file.path) == exact) chosen->model = file;
            }
        }
    } else {
        chosen = chooseFiles(*files, repo, quant, entry ? entry->mmproj : std::string());
    }
    IRIS_RETURN_IF_ERROR(chosen.status());

    std::vector<BlobLock> locks;
    Result<BlobLock> model = fetchFile(store, repo, chosen->model, options);
    IRIS_RETURN_IF_ERROR(model.status());
    locks.push_back(std::move(*model));
    Manifest manifest;
    manifest.name = reference.name;
    manifest.quant = chosen->quant;
    manifest.repo = repo;
    manifest.model = {chosen->model.path, chosen->model.sha256, chosen->model.size};
    if (chosen->mmproj) {
        Result<BlobLock> mmproj = fetchFile(store, repo, *chosen->mmproj, options);
        IRIS_RETURN_IF_ERROR(mmproj.status());
        locks.push_back(std::move(*mmproj));
        manifest.mmproj =
            StoredFile{chosen->mmproj->path, chosen->mmproj->sha256, chosen->mmproj->size};
    }
    manifest.pulledAt = std::int64_t(std::time(nullptr));
    if (Result<Manifest> old = store.find(manifest.name, manifest.quant))
        manifest.lastUsed = old->lastUsed;
    IRIS_RETURN_IF_ERROR(store.writeManifest(manifest));
    return manifest;
}

Result<PulledModel> findPulledModel(const ModelStore& store, const Catalogue& catalogue,
                                    std::string_view text) {
    Result<ModelReference> reference = parseModelReference(text);
    IRIS_RETURN_IF_ERROR(reference.status());
    if (reference->kind == ModelReference::Kind::RepositoryFile) {
        return Status::invalidArgument("'" + std::string(text) +
                                       "': run a pulled file by its model name (iris models list)");
    }
    Result<Manifest> manifest = store.find(reference->name, reference->quant);
    IRIS_RETURN_IF_ERROR(manifest.status());
    PulledModel pulled;
    pulled.manifest = *manifest;
    pulled.modelPath = store.blobPath(manifest->model.sha256);
    if (!store.hasBlob(manifest->model.sha256)) {
        return Status::notFound(pulled.modelPath.string() + ": the file of '" + manifest->name +
                                ":" + manifest->quant + "' is missing; pull it again");
    }
    if (manifest->mmproj) {
        pulled.mmprojPath = store.blobPath(manifest->mmproj->sha256);
        if (!store.hasBlob(manifest->mmproj->sha256)) {
            return Status::notFound(pulled.mmprojPath.string() + ": the projector of '" +
                                    manifest->name + "' is missing; pull it again");
        }
    }
    if (const CatalogueEntry* entry = catalogueEntryFor(catalogue, manifest->name, manifest->repo))
        pulled.entry = *entry;
    // Best effort: a read-only store still runs its models.
    (void)store.touch(pulled.manifest);
    return pulled;
}

std::optional<CatalogueEntry> catalogueEntryOfFile(const ModelStore& store,
                                                   const Catalogue& catalogue,
                                                   const std::filesystem::path& modelFile) {
    std::error_code error;
    const std::filesystem::path blob = std::filesystem::canonical(modelFile, error);
    if (error || blob.parent_path() != std::filesystem::canonical(store.root() / "blobs", error))
        return std::nullopt;
    Result<std::vector<Manifest>> manifests = store.list();
    if (!manifests) return std::nullopt;  // an unreadable store only loses the defaults
    for (const Manifest& manifest : *manifests) {
        if (store.blobPath(manifest.model.sha256).filename() != blob.filename()) continue;
        if (const CatalogueEntry* entry =
                catalogueEntryFor(catalogue, manifest.name, manifest.repo))
            return *entry;
    }
    return std::nullopt;
}

}  // namespace iris::app::models
