#include "app/cli/inspect_command.h"

#include <sstream>

#include <gtest/gtest.h>

#include "inference/gguf/gguf_writer.h"

namespace iris::app {
namespace {

TEST(InspectCommand, ReportsHeaderMetadataAndTensors) {
    inference::GgufWriter writer;
    writer.set("general.architecture", std::string("qwen2"));
    writer.set("tokenizer.ggml.tokens", inference::GgufArray{std::vector<std::string>{
                                            "a", "b", "c", "d", "e", "f", "g", "h"}});
    const std::vector<std::byte> q8(34 * 4);
    ASSERT_TRUE(
        writer.addTensor("blk.0.attn_q.weight", kernels::TensorType::Q8_0, {64, 2}, q8).isOk());
    const std::vector<std::byte> iq(66);
    ASSERT_TRUE(writer.addTensor("odd.weight", kernels::TensorType::IQ2_XXS, {256}, iq).isOk());
    const auto bytes = writer.serialize();
    const Result<inference::GgufFile> file = inference::GgufFile::parse(bytes, "m.gguf");
    ASSERT_TRUE(file);

    std::ostringstream out;
    printGgufReport(*file, out);
    const std::string report = out.str();
    for (const char* expected :
         {"file: m.gguf", "GGUF v3, alignment 32", "metadata (2 keys)", "general.architecture",
          "\"qwen2\"", "[string x 8]", "... (8 string values)", "tensors (2, 384 parameters",
          "blk.0.attn_q.weight", "q8_0", "64 x 2", "(no Iris kernels for this type)",
          "q8_0: 1 tensors"}) {
        EXPECT_NE(report.find(expected), std::string::npos) << expected << "\n" << report;
    }
}

}  // namespace
}  // namespace iris::app
