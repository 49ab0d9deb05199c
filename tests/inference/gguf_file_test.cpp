#include "inference/gguf/gguf_file.h"

#include <filesystem>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "inference/gguf/gguf_writer.h"
#include "tests/inference/models/scratch_dir.h"

namespace iris::inference {
namespace {

using kernels::TensorType;

std::vector<std::byte> bytesOf(std::size_t count, unsigned seed) {
    std::vector<std::byte> bytes(count);
    std::mt19937 rng(seed);
    for (std::byte& b : bytes)
        b = std::byte(rng() & 0xff);
    return bytes;
}

// One value of every type, arrays of every element type, arrays of arrays, an empty array.
std::vector<std::pair<std::string, GgufValue>> everyValueType() {
    GgufArray strings{
        std::vector<std::string>{"", "a", "\xe4\xbd\xa0\xe5\xa5\xbd", std::string("nul\0in", 6)}};
    GgufArray nested{std::vector<GgufArray>{strings, GgufArray{std::vector<std::int32_t>{-1, 2}},
                                            GgufArray{std::vector<GgufArray>{}}}};
    return {
        {"t.u8", std::uint8_t(200)},
        {"t.i8", std::int8_t(-100)},
        {"t.u16", std::uint16_t(60000)},
        {"t.i16", std::int16_t(-30000)},
        {"t.u32", std::uint32_t(4000000000u)},
        {"t.i32", std::int32_t(-2000000000)},
        {"t.f32", 3.25f},
        {"t.bool", true},
        {"t.string", std::string("Qwen2.5 0.5B Instruct")},
        {"t.u64", std::uint64_t(1) << 60},
        {"t.i64", -(std::int64_t(1) << 60)},
        {"t.f64", 1e-300},
        {"a.u8", GgufArray{std::vector<std::uint8_t>{1, 2, 255}}},
        {"a.i8", GgufArray{std::vector<std::int8_t>{-128, 127}}},
        {"a.u16", GgufArray{std::vector<std::uint16_t>{65535}}},
        {"a.i16", GgufArray{std::vector<std::int16_t>{-1}}},
        {"a.u32", GgufArray{std::vector<std::uint32_t>{16, 24, 24, 0}}},
        {"a.i32", GgufArray{std::vector<std::int32_t>{1, 1, 3}}},
        {"a.f32", GgufArray{std::vector<float>{-1.5f, 0.0f, 1e30f}}},
        {"a.bool", GgufArray{std::vector<char>{1, 0, 1}}},
        {"a.string", strings},
        {"a.u64", GgufArray{std::vector<std::uint64_t>{~std::uint64_t(0)}}},
        {"a.i64", GgufArray{std::vector<std::int64_t>{-5}}},
        {"a.f64", GgufArray{std::vector<double>{0.1, 0.2}}},
        {"a.nested", nested},
        {"a.empty", GgufArray{std::vector<float>{}}},
    };
}

TEST(GgufFile, RoundTripsEveryValueTypeAndNestedArrays) {
    GgufWriter writer;
    const auto values = everyValueType();
    for (const auto& [key, value] : values)
        writer.set(key, value);
    const std::vector<std::byte> bytes = writer.serialize();

    Result<GgufFile> file = GgufFile::parse(bytes, "values.gguf");
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_EQ(file->version(), 3u);
    EXPECT_EQ(file->metadata(), values);
    EXPECT_TRUE(file->tensors().empty());
    for (const auto& [key, value] : values) {
        const GgufValue* found = file->find(key);
        ASSERT_NE(found, nullptr) << key;
        EXPECT_EQ(ggufTypeOf(*found), ggufTypeOf(value)) << key;
    }
}

TEST(GgufFile, TypedGettersConvertIntegersAndNameTheKeyOnError) {
    GgufWriter writer;
    writer.set("n.u32", std::uint32_t(24));
    writer.set("n.i64", std::int64_t(-3));
    writer.set("f", 1e-6f);
    writer.set("s", std::string("qwen2"));
    const auto bytes = writer.serialize();
    Result<GgufFile> file = GgufFile::parse(bytes, "m.gguf");
    ASSERT_TRUE(file);
    EXPECT_EQ(*file->getInteger("n.u32"), 24);
    EXPECT_EQ(*file->getInteger("n.i64"), -3);
    EXPECT_FLOAT_EQ(float(*file->getFloat("f")), 1e-6f);
    EXPECT_EQ(*file->getString("s"), "qwen2");

    const Result<std::int64_t> missing = file->getInteger("qwen2.block_count");
    EXPECT_EQ(missing.status().code(), StatusCode::NotFound);
    EXPECT_EQ(missing.status().message(), "m.gguf: missing metadata key 'qwen2.block_count'");
    const Result<std::string> wrong = file->getString("n.u32");
    EXPECT_EQ(wrong.status().message(),
              "m.gguf: metadata 'n.u32' has type uint32, expected string");
}

TEST(GgufFile, TensorsRoundTripWithTheirAlignment) {
    for (std::uint32_t alignment : {32u, 64u, 1u}) {
        GgufWriter writer(alignment);
        writer.set("general.architecture", std::string("qwen2"));
        const auto q8 = bytesOf(34 * 2 * 3, 1);  // q8_0: 64 x 3 -> 2 blocks per row
        const auto f16 = bytesOf(2 * 7, 2);
        const auto q4k = bytesOf(144 * 2, 3);
        ASSERT_TRUE(writer.addTensor("q8", TensorType::Q8_0, {64, 3}, q8).isOk());
        ASSERT_TRUE(writer.addTensor("f16", TensorType::F16, {7}, f16).isOk());
        ASSERT_TRUE(writer.addTensor("q4k", TensorType::Q4_K, {256, 1, 2, 1}, q4k).isOk());
        const auto bytes = writer.serialize();

        Result<GgufFile> file = GgufFile::parse(bytes, "t.gguf");
        ASSERT_TRUE(file) << file.status().message();
        EXPECT_EQ(file->alignment(), alignment);
        EXPECT_EQ(file->dataOffset() % alignment, 0u);
        ASSERT_EQ(file->tensors().size(), 3u);
        const struct {
            const char* name;
            TensorType type;
            std::vector<std::int64_t> shape;
            const std::vector<std::byte>* data;
        } expected[] = {{"q8", TensorType::Q8_0, {64, 3}, &q8},
                        {"f16", TensorType::F16, {7}, &f16},
                        {"q4k", TensorType::Q4_K, {256, 1, 2, 1}, &q4k}};
        for (const auto& e : expected) {
            const GgufTensor* t = file->findTensor(e.name);
            ASSERT_NE(t, nullptr) << e.name;
            EXPECT_EQ(t->type, e.type);
            EXPECT_EQ(t->shape, e.shape);
            EXPECT_EQ(t->offset % alignment, 0u) << e.name;
            EXPECT_EQ(t->bytes, e.data->size());
            EXPECT_TRUE(std::equal(t->data.begin(), t->data.end(), e.data->begin(), e.data->end()))
                << e.name;
            // The data is a view into the buffer, not a copy.
            EXPECT_EQ(t->data.data(), bytes.data() + file->dataOffset() + t->offset);
        }
        EXPECT_EQ(file->findTensor("q4k")->elements(), 512);
    }
}

TEST(GgufFile, OpensAMappedFileFromDisk) {
    const testing::ScratchDir scratch("iris_gguf");
    const std::filesystem::path dir = scratch.path();
    const auto path = dir / "tiny.gguf";
    GgufWriter writer;
    writer.set("general.name", std::string("tiny"));
    std::vector<float> weights(32);
    std::iota(weights.begin(), weights.end(), 0.0f);
    ASSERT_TRUE(writer.addTensor("w", {32}, weights).isOk());
    ASSERT_TRUE(writer.writeFile(path).isOk());
    EXPECT_FALSE(std::filesystem::exists(dir / "tiny.gguf.partial"));

    Result<GgufFile> file = GgufFile::open(path);
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_EQ(file->name(), path.string());
    EXPECT_EQ(file->fileSize(), std::filesystem::file_size(path));
    const GgufTensor* w = file->findTensor("w");
    ASSERT_NE(w, nullptr);
    ASSERT_EQ(w->bytes, 128u);
    const auto* values = reinterpret_cast<const float*>(w->data.data());
    EXPECT_EQ(values[31], 31.0f);

    const Result<GgufFile> missing = GgufFile::open(dir / "absent.gguf");
    EXPECT_EQ(missing.status().code(), StatusCode::IoError);
    EXPECT_NE(missing.status().message().find("absent.gguf: cannot open: No such file"),
              std::string::npos)
        << missing.status().message();
}

TEST(GgufWriter, RefusesDataOfTheWrongSizeAndDuplicateNames) {
    GgufWriter writer;
    const auto q8 = bytesOf(34, 1);
    EXPECT_TRUE(writer.addTensor("a", TensorType::Q8_0, {32}, q8).isOk());
    EXPECT_EQ(writer.addTensor("a", TensorType::Q8_0, {32}, q8).code(),
              StatusCode::InvalidArgument);
    EXPECT_EQ(writer.addTensor("b", TensorType::Q8_0, {33}, q8).code(),
              StatusCode::InvalidArgument);
    EXPECT_EQ(writer.addTensor("c", TensorType::Q8_0, {64}, q8).code(),
              StatusCode::InvalidArgument);
    EXPECT_EQ(writer.addTensor("d", TensorType::F32, {1, 1, 1, 1, 1}, bytesOf(4, 0)).code(),
              StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace iris::inference
