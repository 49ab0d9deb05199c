#pragma once
// The built-in catalogue of computer-use models (resources/models/catalogue.json): for each a
// short name, where its files are, and how Iris must drive it (action format, coordinate frame,
// image budget, chat template), so that `--model ui-tars-1.5-7b` sets all of them.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace iris::app::models {

struct CatalogueEntry {
    std::string name;         // "ui-tars-1.5-7b"
    std::string description;  // one line
    std::string repo;         // hub repository, user/repo; empty for a bundled model
    // Shipped with Iris: its files are in <data directory>/models/<name>/ (bundledModelFiles),
    // so it runs with no download and has no repository.
    bool bundled = false;
    // Whether the repository and its default model and projector files were found referenced by
    // their hub URLs in independent public projects (Iris's catalogue is written offline).
    bool verified = false;
    std::string defaultQuant;
    // quantization -> file name in the repository: a hint; when the repository's listing has no
    // file of that name, the pull takes the file its listing names with that quantization.
    std::map<std::string, std::string> files;
    std::string mmproj;          // the projector's file name
    std::string actionFormat;    // an agent/actions name: tools, computer13, pyautogui, uitars
    std::string coords;          // an `iris run --coords` value: auto, pixels, relative1000, ...
    std::int64_t maxPixels = 0;  // the image budget in pixels, 0: the projector's own
    std::string chatTemplate;    // the template family the engine renders: qwen2-vl, qwen2, ...
    // Screenshots the agent keeps in the prompt (`iris run --history`), 0: the agent's default.
    // A model trained on one screenshot per step (the bundled iris-tiny-cua) needs exactly that.
    int history = 0;
    std::string notes;  // quirks a user should know
};

struct Catalogue {
    std::vector<CatalogueEntry> entries;
    const CatalogueEntry* find(std::string_view name) const;
};

// Parses and validates the catalogue: every field's type, names unique and valid, the action
// format, coordinate frame and chat template ones Iris has, the default quantization among the
// files. Errors name `source`, the entry and the field.
Result<Catalogue> parseCatalogue(std::string_view json, const std::string& source);
Result<Catalogue> loadCatalogue(const std::filesystem::path& path);

// The files of a bundled entry: <modelsDirectory>/<name>/<its default file> and the projector.
// NotFound names the missing file (an installation without its data).
struct BundledFiles {
    std::filesystem::path model;
    std::filesystem::path mmproj;
};
Result<BundledFiles> bundledModelFiles(const CatalogueEntry& entry,
                                       const std::filesystem::path& modelsDirectory);

// Whether `coords` is a value `iris run --coords` takes (app/cli/run_command.cpp).
bool isCoordinateFrameName(std::string_view coords);

}  // namespace iris::app::models
