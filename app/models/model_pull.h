#pragma once
// `iris models pull` without the terminal: a reference resolved against the catalogue and the
// hub, its model file and projector fetched into the store, its manifest written; and the
// reverse for running a pulled model by name, offline.
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "app/models/catalogue.h"
#include "app/models/hub_client.h"
#include "app/models/model_download.h"
#include "app/models/model_reference.h"
#include "app/models/model_store.h"
#include "base/status.h"

namespace iris::app::models {

struct PullOptions {
    HubOptions hub;
    const std::atomic<bool>* cancel = nullptr;  // Ctrl-C: Cancelled, the partial file kept
    // `file` is the file's name in its repository. Called from downloading threads.
    std::function<void(const std::string& file, const DownloadProgress&)> onProgress;
    // One line about what happens ("waiting for another pull of ...", "... is in the store").
    std::function<void(const std::string& message)> onMessage;
    // Passed to every DownloadRequest (tests make them small).
    std::uint64_t parallelThreshold = std::uint64_t(256) << 20;
    int connections = 4;
    double firstRetryWaitS = 0.5;
};

// The catalogue entry that describes `name` (a catalogue name) or `repo`, or nullptr.
const CatalogueEntry* catalogueEntryFor(const Catalogue& catalogue, const std::string& name,
                                        const std::string& repo);

// Pulls `reference` into `store` and returns its manifest. Files already in the store are not
// fetched again; two pulls of one file at once fetch it once (the blob's lock).
Result<Manifest> pullModel(const ModelStore& store, const Catalogue& catalogue,
                           const ModelReference& reference, const PullOptions& options);

struct PulledModel {
    Manifest manifest;
    std::filesystem::path modelPath;
    std::filesystem::path mmprojPath;     // empty: none
    std::optional<CatalogueEntry> entry;  // how to drive it, when the catalogue knows it
};

// A pulled model by name ("ui-tars-1.5-7b", "ui-tars-1.5-7b:Q8_0", "user/repo[:QUANT]"),
// offline, its last-used time updated. NotFound says how to pull it.
Result<PulledModel> findPulledModel(const ModelStore& store, const Catalogue& catalogue,
                                    std::string_view text);

// The catalogue entry of the pulled model whose language-model file is `modelFile` (a blob of
// `store`, as `iris models info` shows it and the GUI's settings keep it), or nullopt when the
// file is none of the store's or the catalogue does not know its model: how a front end that
// holds a file path finds the image budget and chat template the catalogue gives a name.
std::optional<CatalogueEntry> catalogueEntryOfFile(const ModelStore& store,
                                                   const Catalogue& catalogue,
                                                   const std::filesystem::path& modelFile);

}  // namespace iris::app::models
