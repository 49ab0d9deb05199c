#include "app/models/catalogue.h"

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/actions/action_format.h"
#include "app/models/model_reference.h"
#include "app/models/model_store.h"
#include "inference/chat_template.h"

namespace iris::app::models {
namespace {

Result<std::string> stringField(const nlohmann::json& entry, const char* key,
                                const std::string& where, bool required = true) {
    const auto value = entry.find(key);
    if (value == entry.end()) {
        if (!required) return std::string();
        return Status::corrupt(where + ": field '" + key + "' is missing");
    }
    if (!value->is_string() || (required && value->get<std::string>().empty()))
        return Status::corrupt(where + ": field '" + key + "': expected a non-empty string");
    return value->get<std::string>();
}

}  // namespace

const CatalogueEntry* Catalogue::find(std::string_view name) const {
    for (const CatalogueEntry& entry : entries)
        if (entry.name == name) return &entry;
    return nullptr;
}

bool isCoordinateFrameName(std::string_view coords) {
    if (coords == "auto" || coords == "pixels" || coords == "relative1000" || coords == "resized")
        return true;
    if (!coords.starts_with("resized:")) return false;
    const std::string_view size = coords.substr(8);
    const std::size_t x = size.find('x');
    if (x == 0 || x == std::string_view::npos || x + 1 == size.size()) return false;
    return size.find_first_not_of("0123456789x") == std::string_view::npos &&
           size.find('x', x + 1) == std::string_view::npos;
}

Result<Catalogue> parseCatalogue(std::string_view json, const std::string& source) {
    const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object())
        return Status::corrupt(source + ": not a JSON object");
    const auto models = parsed.find("models");
    if (models == parsed.end() || !models->is_array())
        return Status::corrupt(source + ": field 'models': expected an array");
    Catalogue catalogue;
    std::set<std::string> names;
    for (std::size_t i = 0; i < models->size(); ++i) {
        const nlohmann::json& item = (*models)[i];
        std::string where = source + ": models[" + std::to_string(i) + "]";
        if (!item.is_object()) return Status::corrupt(where + ": expected an object");
        CatalogueEntry entry;
        const auto bundled = item.find("bundled");
        if (bundled != item.end() && !bundled->is_boolean())
            return Status::corrupt(where + ": field 'bundled': expected true or false");
        entry.bundled = bundled != item.end() && bundled->get<bool>();
        for (const auto& [key, target, required] : {std::tuple{"name", &entry.name, true},
                                                    {"description", &entry.description, true},
                                                    {"repo", &entry.repo, !entry.bundled},
                                                    {"default_quant", &entry.defaultQuant, true},
                                                    {"mmproj", &entry.mmproj, true},
                                                    {"action_format", &entry.actionFormat, true},
                                                    {"coords", &entry.coords, true},
                                                    {"chat_template", &entry.chatTemplate, true},
                                                    {"notes", &entry.notes, false}}) {
            Result<std::string> value = stringField(item, key, where, required);
            IRIS_RETURN_IF_ERROR(value.status());
            *target = *value;
            if (std::string_view(key) == "name") where += " ('" + entry.name + "')";
        }
        if (!isValidModelName(entry.name) || entry.name.find('/') != std::string::npos ||
            entry.name.find(':') != std::string::npos) {
            return Status::corrupt(where + ": field 'name': letters, digits, '.', '_', '-' only");
        }
        if (!names.insert(entry.name).second)
            return Status::corrupt(where + ": field 'name': a second entry of that name");
        if (entry.bundled && !entry.repo.empty())
            return Status::corrupt(where + ": field 'repo': a bundled model has none");
        if (!entry.bundled && (std::count(entry.repo.begin(), entry.repo.end(), '/') != 1 ||
                               !isValidModelName(entry.repo))) {
            return Status::corrupt(where + ": field 'repo': expected user/repo");
        }
        const auto verified = item.find("verified");
        if (!entry.bundled && (verified == item.end() || !verified->is_boolean()))
            return Status::corrupt(where + ": field 'verified': expected true or false");
        entry.verified = !entry.bundled && verified->get<bool>();
        const auto files = item.find("files");
        if (files == item.end() || !files->is_object() || files->empty())
            return Status::corrupt(where + ": field 'files': expected {\"QUANT\": \"file.gguf\"}");
        for (const auto& [quant, file] : files->items()) {
            if (!file.is_string())
                return Status::corrupt(where + ": files." + quant + ": expected a file name");
            const std::string name = file.get<std::string>();
            if (quantizationOfFile(name) != quant || isProjectorFile(name)) {
                return Status::corrupt(where + ": files." + quant + ": '" + name +
                                       "' does not name that quantization");
            }
            entry.files.emplace(quant, name);
        }
        if (!entry.files.contains(entry.defaultQuant))
            return Status::corrupt(where + ": field 'default_quant': not one of 'files'");
        if (!isProjectorFile(entry.mmproj) || !entry.mmproj.ends_with(".gguf"))
            return Status::corrupt(where + ": field 'mmproj': expected an mmproj .gguf file name");
        if (!agent::actionFormatFromName(entry.actionFormat)) {
            return Status::corrupt(where + ": field 'action_format': '" + entry.actionFormat +
                                   "' (expected tools, computer13, pyautogui or uitars)");
        }
        if (!isCoordinateFrameName(entry.coords)) {
            return Status::corrupt(where + ": field 'coords': '" + entry.coords +
                                   "' (expected auto, pixels, relative1000, resized, resized:WxH)");
        }
        if (!inference::chatTemplateKindFromName(entry.chatTemplate)) {
            return Status::corrupt(where + ": field 'chat_template': '" + entry.chatTemplate +
                                   "' (expected qwen2, qwen2-vl, qwen3 or minimax-m3)");
        }
        const auto pixels = item.find("max_pixels");
        if (pixels == item.end() || !pixels->is_number_integer() || pixels->get<std::int64_t>() < 0)
            return Status::corrupt(
                where + ": field 'max_pixels': expected a pixel count (0: the projector's)");
        entry.maxPixels = pixels->get<std::int64_t>();
        if (const auto history = item.find("history"); history != item.end()) {
            if (!history->is_number_integer() || history->get<std::int64_t>() < 1 ||
                history->get<std::int64_t>() > 100)
                return Status::corrupt(where + ": field 'history': expected screenshots, 1-100");
            entry.history = history->get<int>();
        }
        catalogue.entries.push_back(std::move(entry));
    }
    return catalogue;
}

Result<BundledFiles> bundledModelFiles(const CatalogueEntry& entry,
                                       const std::filesystem::path& modelsDirectory) {
    if (!entry.bundled)
        return Status::invalidArgument("'" + entry.name + "' is not bundled with Iris");
    const std::filesystem::path folder = modelsDirectory / entry.name;
    BundledFiles files{folder / entry.files.at(entry.defaultQuant), folder / entry.mmproj};
    for (const std::filesystem::path& file : {files.model, files.mmproj}) {
        std::error_code error;
        if (!std::filesystem::is_regular_file(file, error))
            return Status::notFound(file.string() + ": a file of the bundled model '" + entry.name +
                                    "' is missing; reinstall Iris");
    }
    return files;
}

Result<Catalogue> loadCatalogue(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) return Status::notFound(path.string() + ": cannot open the model catalogue");
    std::stringstream text;
    text << in.rdbuf();
    return parseCatalogue(text.str(), path.string());
}

}  // namespace iris::app::models
