#pragma once
// Test support: a model built from GGUF bytes made in memory (the tiny model writers), with the
// bytes and the parsed file kept alive as long as the model that points into them.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "inference/gguf/gguf_file.h"
#include "inference/models/model.h"

namespace iris::inference::testing {

struct LoadedModel {
    std::vector<std::byte> bytes;
    std::optional<GgufFile> file;
    std::unique_ptr<Model> model;  // null (and the test failed) when the file did not load
};

inline std::unique_ptr<LoadedModel> loadModelBytes(std::vector<std::byte> bytes,
                                                   const std::string& name) {
    auto loaded = std::make_unique<LoadedModel>();
    loaded->bytes = std::move(bytes);
    Result<GgufFile> file = GgufFile::parse(loaded->bytes, name);
    EXPECT_TRUE(file) << file.status().message();
    if (!file) return loaded;
    loaded->file = std::move(*file);
    Result<std::unique_ptr<Model>> model = createModel(*loaded->file);
    EXPECT_TRUE(model) << model.status().message();
    if (model) loaded->model = std::move(*model);
    return loaded;
}

}  // namespace iris::inference::testing
