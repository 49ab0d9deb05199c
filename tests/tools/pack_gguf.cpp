// iris_pack_gguf: writes one GGUF file with the project's GgufWriter from a JSON manifest and a
// blob of little-endian f32 values, so that a model trained outside C++ (scripts/training/,
// docs/tiny-model.md) is exported with the same writer the tests use.
//
//   iris_pack_gguf MANIFEST.json OUT.gguf
//
// The manifest:
//   {"data": "tensors.f32",                 blob path, relative to the manifest's folder
//    "metadata": [[key, type, value], ...], in file order; type is one of uint32, int32, float32,
//                                           bool, string, array:string, array:int32,
//                                           array:uint32, array:float32
//    "tensors": [{"name": ..., "shape": [ne0, ne1, ...] (ggml order, ne0 contiguous),
//                 "type": "f32" | "f16" | "bf16" | "q8_0", "offset": first value's index}]}
// Each tensor's values are read from the blob as f32 and rounded to its type row by row.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "inference/gguf/gguf_writer.h"
#include "kernels/quant.h"

namespace {

using iris::Result;
using iris::Status;
using iris::inference::GgufArray;
using iris::inference::GgufValue;
using iris::kernels::TensorType;
using nlohmann::json;
namespace fs = std::filesystem;

template <typename T>
GgufArray arrayOf(const json& value) {
    return GgufArray{value.get<std::vector<T>>()};
}

Result<GgufValue> metadataValue(const std::string& key, const std::string& type,
                                const json& value) {
    try {
        if (type == "uint32") return GgufValue(value.get<std::uint32_t>());
        if (type == "int32") return GgufValue(value.get<std::int32_t>());
        if (type == "float32") return GgufValue(value.get<float>());
        if (type == "bool") return GgufValue(value.get<bool>());
        if (type == "string") return GgufValue(value.get<std::string>());
        if (type == "array:string") return GgufValue(arrayOf<std::string>(value));
        if (type == "array:int32") return GgufValue(arrayOf<std::int32_t>(value));
        if (type == "array:uint32") return GgufValue(arrayOf<std::uint32_t>(value));
        if (type == "array:float32") return GgufValue(arrayOf<float>(value));
    } catch (const json::exception& e) {
        return Status::invalidArgument("metadata " + key + ": value is not a " + type + " (" +
                                       e.what() + ")");
    }
    return Status::invalidArgument("metadata " + key + ": unknown type '" + type + "'");
}

Result<TensorType> tensorType(const std::string& name) {
    static const std::map<std::string, TensorType> types = {{"f32", TensorType::F32},
                                                            {"f16", TensorType::F16},
                                                            {"bf16", TensorType::BF16},
                                                            {"q8_0", TensorType::Q8_0}};
    const auto it = types.find(name);
    if (it == types.end()) return Status::invalidArgument("unknown tensor type '" + name + "'");
    return it->second;
}

Result<std::vector<float>> readBlob(const fs::path& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return Status::notFound(path.string() + ": cannot open the tensor data");
    const std::streamsize bytes = in.tellg();
    if (bytes % 4 != 0) return Status::invalidArgument(path.string() + ": size is not 4-byte f32s");
    std::vector<float> values(std::size_t(bytes / 4));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(values.data()), bytes);
    if (!in) return Status::ioError(path.string() + ": short read");
    return values;
}

Status addTensor(iris::inference::GgufWriter& writer, const json& tensor,
                 const std::vector<float>& blob) {
    const std::string name = tensor.at("name").get<std::string>();
    const std::vector<std::int64_t> shape = tensor.at("shape").get<std::vector<std::int64_t>>();
    Result<TensorType> type = tensorType(tensor.at("type").get<std::string>());
    if (!type) return type.status().withContext("tensor " + name + ": ");
    std::int64_t count = 1;
    for (std::int64_t d : shape)
        count *= d;
    const std::int64_t offset = tensor.at("offset").get<std::int64_t>();
    if (shape.empty() || offset < 0 || offset + count > std::int64_t(blob.size()))
        return Status::invalidArgument("tensor " + name + ": values [" + std::to_string(offset) +
                                       ", +" + std::to_string(count) + ") outside the blob of " +
                                       std::to_string(blob.size()));
    const std::int64_t rowLength = shape[0], rows = count / rowLength;
    const std::int64_t rowBytes = iris::kernels::rowBytes(*type, rowLength);
    std::vector<std::byte> bytes(std::size_t(rowBytes * rows));
    for (std::int64_t r = 0; r < rows; ++r)
        iris::kernels::quantizeRow(*type, blob.data() + offset + r * rowLength,
                                   bytes.data() + r * rowBytes, rowLength);
    return writer.addTensor(name, *type, shape, bytes);
}

Status pack(const fs::path& manifestPath, const fs::path& out) {
    std::ifstream in(manifestPath);
    if (!in) return Status::notFound(manifestPath.string() + ": cannot open");
    const json manifest = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (manifest.is_discarded() || !manifest.is_object())
        return Status::invalidArgument(manifestPath.string() + ": not a JSON object");
    Result<std::vector<float>> blob =
        readBlob(manifestPath.parent_path() / manifest.value("data", std::string()));
    if (!blob) return blob.status();
    iris::inference::GgufWriter writer;
    try {
        for (const json& entry : manifest.at("metadata")) {
            const std::string key = entry.at(0).get<std::string>();
            Result<GgufValue> value =
                metadataValue(key, entry.at(1).get<std::string>(), entry.at(2));
            if (!value) return value.status();
            writer.set(key, std::move(*value));
        }
        for (const json& tensor : manifest.at("tensors"))
            IRIS_RETURN_IF_ERROR(addTensor(writer, tensor, *blob));
    } catch (const json::exception& e) {
        return Status::invalidArgument(manifestPath.string() + ": " + e.what());
    }
    return writer.writeFile(out);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: iris_pack_gguf MANIFEST.json OUT.gguf\n";
        return 2;
    }
    const Status status = pack(argv[1], argv[2]);
    if (!status.isOk()) {
        std::cerr << "iris_pack_gguf: " << status.message() << '\n';
        return 1;
    }
    std::cout << "wrote " << argv[2] << '\n';
    return 0;
}
