#pragma once
// What a user types to name a model, and which of a repository's files it means:
//   ui-tars-1.5-7b[:Q4_K_M]      a catalogue name (resources/models/catalogue.json)
//   user/repo[:QUANT]            a hub repository; the quantization chosen by file name
//   user/repo/file.gguf          one file of a repository
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace iris::app::models {

struct ModelReference {
    enum class Kind { Catalogue, Repository, RepositoryFile };
    Kind kind = Kind::Catalogue;
    std::string name;   // the catalogue name, or "user/repo": the model's name in the store
    std::string quant;  // as given (upper case), empty for the default
    std::string file;   // RepositoryFile: the path inside the repository
};

// Splits `text` into its parts. No look-ups: whether a catalogue name exists is the caller's
// question. InvalidArgument names the text and what is wrong with it.
Result<ModelReference> parseModelReference(std::string_view text);

// The quantization a GGUF file name states ("Model-Q4_K_M.gguf" -> "Q4_K_M",
// "mmproj-model-f16.gguf" -> "F16"), upper case; empty when it states none.
std::string quantizationOfFile(std::string_view fileName);

// Whether a file is a vision projector (llama.cpp's "mmproj" naming).
bool isProjectorFile(std::string_view fileName);

// Files of a repository as the hub lists them.
struct HubFile {
    std::string path;  // inside the repository
    std::uint64_t size = 0;
    std::string sha256;  // from the LFS metadata; empty when the hub gave none
};

struct ChosenFiles {
    HubFile model;
    std::optional<HubFile> mmproj;
    std::string quant;  // the model's quantization (its file stem when it names none)
};

// The language model of quantization `quant` (empty: Q4_K_M when there is one, else the only
// quantization) and the repository's projector (F16 preferred, then BF16, Q8_0, any), among
// `files`. `mmprojName`: the projector's exact file name when the caller knows it. Errors name
// `repo` and the quantizations it has.
Result<ChosenFiles> chooseFiles(const std::vector<HubFile>& files, const std::string& repo,
                                const std::string& quant, const std::string& mmprojName = {});

}  // namespace iris::app::models
