#include "app/models/model_reference.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "app/models/model_store.h"
#include "base/strings.h"

namespace iris::app::models {
namespace {

std::string asciiUpper(std::string_view text) {
    std::string upper(text);
    for (char& c : upper)
        if (c >= 'a' && c <= 'z') c = char(c - 'a' + 'A');
    return upper;
}

// "Q4_K_M", "IQ3_XXS", "F16", "BF16", "Q8_0", "TQ1_0", "MXFP4": llama.cpp's quantization names.
bool isQuantizationToken(std::string_view token) {
    const std::string upper = asciiUpper(token);
    if (upper == "F16" || upper == "BF16" || upper == "F32" || upper == "FP16" ||
        upper == "MXFP4" || upper == "FP8") {
        return true;
    }
    std::string_view rest = upper;
    if (rest.starts_with("IQ") || rest.starts_with("TQ")) {
        rest.remove_prefix(2);
    } else if (rest.starts_with("Q")) {
        rest.remove_prefix(1);
    } else {
        return false;
    }
    if (rest.empty() || rest[0] < '0' || rest[0] > '9') return false;
    rest.remove_prefix(1);
    while (!rest.empty()) {
        if (rest[0] != '_' || rest.size() < 2) return false;
        rest.remove_prefix(1);
        const std::size_t end = std::min(rest.find('_'), rest.size());
        for (char c : rest.substr(0, end))
            if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
        rest.remove_prefix(end);
    }
    return true;
}

bool endsWithGguf(std::string_view name) {
    return name.size() > 5 && equalsIgnoringAsciiCase(name.substr(name.size() - 5), ".gguf");
}

std::string baseName(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// "x-00001-of-00003.gguf": one part of a split model.
bool isSplitPart(std::string_view name) {
    const std::size_t of = name.rfind("-of-");
    return of != std::string_view::npos && of >= 6 && name[of - 6] == '-';
}

}  // namespace

Result<ModelReference> parseModelReference(std::string_view text) {
    ModelReference reference;
    std::string_view rest = trim(text);
    const std::string quoted = "'" + std::string(text) + "'";
    if (rest.empty()) return Status::invalidArgument("an empty model name");
    const std::size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos && rest.find('/', colon) == std::string_view::npos) {
        reference.quant = asciiUpper(rest.substr(colon + 1));
        rest = rest.substr(0, colon);
        if (reference.quant.empty() || !isValidModelName(reference.quant) ||
            reference.quant.find('/') != std::string::npos) {
            return Status::invalidArgument(quoted +
                                           ": expected NAME:QUANT, e.g. ui-tars-1.5-7b:Q4_K_M");
        }
    }
    const std::size_t slashes = std::size_t(std::count(rest.begin(), rest.end(), '/'));
    if (slashes == 0) {
        reference.kind = ModelReference::Kind::Catalogue;
        reference.name = std::string(rest);
    } else if (slashes == 1) {
        reference.kind = ModelReference::Kind::Repository;
        reference.name = std::string(rest);
    } else {
        const std::size_t second = rest.find('/', rest.find('/') + 1);
        reference.kind = ModelReference::Kind::RepositoryFile;
        reference.name = std::string(rest.substr(0, second));
        reference.file = std::string(rest.substr(second + 1));
        if (!endsWithGguf(reference.file))
            return Status::invalidArgument(quoted + ": user/repo/FILE names a .gguf file");
        if (!reference.quant.empty())
            return Status::invalidArgument(quoted + ": a file names its quantization itself");
        if (!isValidModelName(reference.file))
            return Status::invalidArgument(quoted + ": not a file name");
    }
    if (!isValidModelName(reference.name)) {
        return Status::invalidArgument(quoted +
                                       ": expected a catalogue name (letters, digits, "
                                       ". _ -), user/repo[:QUANT] or user/repo/FILE.gguf");
    }
    return reference;
}

std::string quantizationOfFile(std::string_view fileName) {
    std::string stem = baseName(fileName);
    if (endsWithGguf(stem)) stem.resize(stem.size() - 5);
    // The last token (between '-' and '.') that is a quantization name.
    std::string found;
    std::size_t start = 0;
    while (start <= stem.size()) {
        std::size_t end = stem.find_first_of("-.", start);
        if (end == std::string::npos) end = stem.size();
        const std::string_view token = std::string_view(stem).substr(start, end - start);
        if (isQuantizationToken(token)) found = asciiUpper(token);
        start = end + 1;
    }
    return found;
}

bool isProjectorFile(std::string_view fileName) {
    return asciiLower(baseName(fileName)).find("mmproj") != std::string::npos;
}

Result<ChosenFiles> chooseFiles(const std::vector<HubFile>& files, const std::string& repo,
                                const std::string& quant, const std::string& mmprojName) {
    std::map<std::string, HubFile> models;  // quantization -> file
    std::vector<HubFile> projectors;
    for (const HubFile& file : files) {
        if (!endsWithGguf(file.path)) continue;
        if (isProjectorFile(file.path)) {
            projectors.push_back(file);
            continue;
        }
        std::string q = quantizationOfFile(file.path);
        if (q.empty()) {
            q = baseName(file.path);
            q.resize(q.size() - 5);
        }
        if (isSplitPart(file.path)) q += " (split)";
        if (!models.contains(q)) models.emplace(q, file);
    }
    std::string available;
    for (const auto& [q, file] : models)
        available += (available.empty() ? "" : ", ") + q;
    if (models.empty()) return Status::notFound(repo + ": no GGUF model files in the repository");
    ChosenFiles chosen;
    if (!quant.empty()) {
        const auto it = models.find(asciiUpper(quant));
        if (it == models.end()) {
            return Status::notFound(repo + ": no " + asciiUpper(quant) +
                                    " file (quantizations there: " + available + ")");
        }
        chosen.quant = it->first;
        chosen.model = it->second;
    } else if (const auto it = models.find("Q4_K_M"); it != models.end()) {
        chosen.quant = it->first;
        chosen.model = it->second;
    } else if (models.size() == 1) {
        chosen.quant = models.begin()->first;
        chosen.model = models.begin()->second;
    } else {
        return Status::invalidArgument(repo + ": has no Q4_K_M; name a quantization as " + repo +
                                       ":QUANT (there: " + available + ")");
    }
    if (isSplitPart(chosen.model.path)) {
        return Status::unsupported(repo + ": " + chosen.model.path +
                                   " is one part of a split model; Iris reads single-file GGUF");
    }
    if (!mmprojName.empty()) {
        for (const HubFile& file : projectors)
            if (baseName(file.path) == mmprojName || file.path == mmprojName) chosen.mmproj = file;
        if (!chosen.mmproj) return Status::notFound(repo + ": no projector file " + mmprojName);
        return chosen;
    }
    for (const char* preference : {"F16", "BF16", "Q8_0", "F32"}) {
        for (const HubFile& file : projectors) {
            if (!chosen.mmproj && quantizationOfFile(file.path) == preference) chosen.mmproj = file;
        }
    }
    if (!chosen.mmproj && !projectors.empty()) chosen.mmproj = projectors.front();
    return chosen;
}

}  // namespace iris::app::models
