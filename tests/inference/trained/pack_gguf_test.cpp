// iris_pack_gguf (tests/tools/pack_gguf.cpp), the export step of scripts/training/export.py: a
// manifest and an f32 blob become a GGUF whose metadata and tensors GgufFile reads back with the
// types asked for (f16 values rounded as the f16 format rounds them), and bad manifests are
// refused with the tensor or key named.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "base/temporary_folder.h"
#include "inference/gguf/gguf_file.h"
#include "kernels/quant.h"

namespace iris::inference {
namespace {

namespace fs = std::filesystem;

class PackGgufTest : public ::testing::Test {
protected:
    void SetUp() override {
        Result<TemporaryFolder> folder = TemporaryFolder::create("iris_pack_gguf_test");
        ASSERT_TRUE(folder);
        m_folder.emplace(std::move(*folder));
        // 1/3 is not an f16 value: it must come back as the nearest one, 0.333251953125.
        const std::vector<float> blob = {0.5f, -2.25f, 1.0f / 3.0f, 7.0f, 1.0f, 2.0f, 3.0f, 4.0f};
        std::ofstream(dir() / "t.f32", std::ios::binary)
            .write(reinterpret_cast<const char*>(blob.data()), std::streamsize(blob.size() * 4));
    }

    fs::path dir() const { return m_folder->path(); }

    // Runs the packer on `manifest`; its exit status and what it printed to stderr.
    int pack(const std::string& manifest, std::string& errors) {
        std::ofstream(dir() / "m.json") << manifest;
        const std::string command =
            std::string(IRIS_PACK_GGUF) + " " + (dir() / "m.json").string() + " " +
            (dir() / "out.gguf").string() + " >/dev/null 2>" + (dir() / "err.txt").string();
        const int status = std::system(command.c_str());
        std::ifstream in(dir() / "err.txt");
        errors.assign(std::istreambuf_iterator<char>(in), {});
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

    std::optional<TemporaryFolder> m_folder;
};

TEST_F(PackGgufTest, WritesMetadataAndTensorsOfTheRequestedTypes) {
    std::string errors;
    ASSERT_EQ(pack(R"({"data": "t.f32",
        "metadata": [["general.architecture", "string", "qwen2vl"],
                     ["n", "uint32", 7], ["eps", "float32", 0.25], ["flag", "bool", false],
                     ["tokens", "array:string", ["a", "<|im_end|>"]],
                     ["types", "array:int32", [1, 3]], ["means", "array:float32", [0.5, 1.5]]],
        "tensors": [{"name": "bias", "shape": [2], "type": "f32", "offset": 0},
                    {"name": "w", "shape": [3, 2], "type": "f16", "offset": 2}]})",
                   errors),
              0)
        << errors;
    Result<GgufFile> file = GgufFile::open(dir() / "out.gguf");
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_EQ(*file->getString("general.architecture"), "qwen2vl");
    EXPECT_EQ(*file->getInteger("n"), 7);
    EXPECT_EQ(*file->getFloat("eps"), 0.25);
    ASSERT_NE(file->find("flag"), nullptr);
    EXPECT_EQ(std::get<bool>(*file->find("flag")), false);
    EXPECT_EQ(std::get<std::vector<std::string>>((*file->getArray("tokens"))->elements),
              (std::vector<std::string>{"a", "<|im_end|>"}));
    EXPECT_EQ(std::get<std::vector<std::int32_t>>((*file->getArray("types"))->elements),
              (std::vector<std::int32_t>{1, 3}));
    EXPECT_EQ(std::get<std::vector<float>>((*file->getArray("means"))->elements),
              (std::vector<float>{0.5f, 1.5f}));

    const GgufTensor* bias = file->findTensor("bias");
    ASSERT_NE(bias, nullptr);
    EXPECT_EQ(bias->type, kernels::TensorType::F32);
    std::vector<float> values(2);
    kernels::dequantizeRow(bias->type, bias->data.data(), values.data(), 2);
    EXPECT_EQ(values, (std::vector<float>{0.5f, -2.25f}));

    const GgufTensor* w = file->findTensor("w");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->type, kernels::TensorType::F16);
    EXPECT_EQ(w->shape, (std::vector<std::int64_t>{3, 2}));
    values.resize(6);
    kernels::dequantizeRow(w->type, w->data.data(), values.data(), 6);
    EXPECT_EQ(values, (std::vector<float>{0.333251953125f, 7, 1, 2, 3, 4}));
}

TEST_F(PackGgufTest, RefusesValuesPastTheBlob) {
    std::string errors;
    EXPECT_EQ(pack(R"({"data": "t.f32", "metadata": [],
        "tensors": [{"name": "w", "shape": [4, 2], "type": "f32", "offset": 2}]})",
                   errors),
              1);
    EXPECT_NE(errors.find("tensor w"), std::string::npos) << errors;
    EXPECT_FALSE(fs::exists(dir() / "out.gguf"));
}

TEST_F(PackGgufTest, RefusesAValueOfTheWrongType) {
    std::string errors;
    EXPECT_EQ(
        pack(R"({"data": "t.f32", "metadata": [["n", "uint32", "seven"]], "tensors": []})", errors),
        1);
    EXPECT_NE(errors.find("metadata n"), std::string::npos) << errors;
}

}  // namespace
}  // namespace iris::inference
