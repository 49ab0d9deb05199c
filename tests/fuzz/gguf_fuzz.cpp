// libFuzzer target for the GGUF reader: any bytes must parse or fail cleanly, and whatever parses
// must be safe to walk. Build with the `fuzz` preset (clang) and run, e.g.:
//   build/fuzz/tests/fuzz/iris_gguf_fuzz -max_total_time=600 corpus/
// with a corpus started by iris_gguf_seeds.
#include <cstddef>
#include <cstdint>
#include <span>

#include "inference/gguf/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace iris::inference;
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    const iris::Result<GgufFile> file = GgufFile::parse(bytes, "fuzz.gguf");
    if (!file) return 0;
    std::size_t sink = 0;
    for (const auto& [key, value] : file->metadata())
        sink += ggufToString(value, 4).size();
    for (const GgufTensor& tensor : file->tensors()) {
        // Touch the first and last byte: out of range would be caught by ASan.
        if (!tensor.data.empty())
            sink += std::size_t(tensor.data.front()) + std::size_t(tensor.data.back());
        sink += std::size_t(tensor.elements());
    }
    return sink == 1 ? 0 : 0;  // `sink` keeps the reads from being optimised away
}
