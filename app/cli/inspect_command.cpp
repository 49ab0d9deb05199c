#include "app/cli/inspect_command.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include "base/strings.h"

namespace iris::app {
namespace {

std::string shapeText(const std::vector<std::int64_t>& shape) {
    std::string text;
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i ? " x " : "") + std::to_string(shape[i]);
    return text.empty() ? std::string("scalar") : text;
}

std::string typeText(const inference::GgufValue& value) {
    if (const auto* array = std::get_if<inference::GgufArray>(&value)) {
        std::string text = "[";
        text.append(inference::ggufTypeName(array->elementType()));
        text.append(" x ").append(std::to_string(array->size())).append("]");
        return text;
    }
    return std::string(inference::ggufTypeName(inference::ggufTypeOf(value)));
}

std::string padded(std::string text, std::size_t width) {
    if (text.size() < width) text.append(width - text.size(), ' ');
    return text;
}

}  // namespace

void printGgufReport(const inference::GgufFile& file, std::ostream& out) {
    out << "file: " << file.name() << " (" << humanBytes(file.fileSize()) << "), GGUF v"
        << file.version() << ", alignment " << file.alignment() << ", data section at byte "
        << file.dataOffset() << "\n\n";

    out << "metadata (" << file.metadata().size() << " keys):\n";
    std::size_t keyWidth = 0;
    for (const auto& [key, value] : file.metadata())
        keyWidth = std::max(keyWidth, key.size());
    for (const auto& [key, value] : file.metadata()) {
        out << "  " << padded(key, keyWidth) << "  " << padded(typeText(value), 18) << "  "
            << inference::ggufToString(value, 6) << '\n';
    }

    std::uint64_t parameters = 0, bytes = 0;
    std::map<std::string, std::pair<int, std::uint64_t>> byType;  // name -> (count, bytes)
    std::size_t nameWidth = 4;
    for (const inference::GgufTensor& t : file.tensors()) {
        parameters += std::uint64_t(t.elements());
        bytes += t.bytes;
        auto& entry = byType[std::string(kernels::tensorTypeInfo(t.type).name)];
        ++entry.first;
        entry.second += t.bytes;
        nameWidth = std::max(nameWidth, t.name.size());
    }
    out << "\ntensors (" << file.tensors().size() << ", " << parameters << " parameters, "
        << humanBytes(bytes) << "):\n";
    out << "  " << padded("name", nameWidth) << "  " << padded("type", 8) << padded("shape", 24)
        << padded("offset", 14) << "size\n";
    for (const inference::GgufTensor& t : file.tensors()) {
        const kernels::TensorTypeInfo& info = kernels::tensorTypeInfo(t.type);
        out << "  " << padded(t.name, nameWidth) << "  " << padded(std::string(info.name), 8)
            << padded(shapeText(t.shape), 24) << padded(std::to_string(t.offset), 14)
            << humanBytes(t.bytes) << (info.computable ? "" : "  (no Iris kernels for this type)")
            << '\n';
    }
    if (!byType.empty()) {
        out << "\nby type:";
        for (const auto& [name, entry] : byType) {
            out << "  " << name << ": " << entry.first << " tensors, " << humanBytes(entry.second)
                << ';';
        }
        out << '\n';
    }
}

int runInspect(int argc, char** argv) {
    if (argc != 2 || std::string(argv[1]).starts_with("-")) {
        std::cerr << "usage: iris inspect FILE.gguf\n";
        return 2;
    }
    const Result<inference::GgufFile> file = inference::GgufFile::open(argv[1]);
    if (!file) {
        std::cerr << "iris inspect: " << file.status().message() << '\n';
        return 1;
    }
    printGgufReport(*file, std::cout);
    return 0;
}

}  // namespace iris::app
