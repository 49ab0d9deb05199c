// Malformed GGUF input: every case gives a clear error naming the field and byte offset, and
// nothing ever reads out of bounds (run under the asan preset to see that as well).
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "inference/gguf/gguf_file.h"
#include "inference/gguf/gguf_writer.h"

namespace iris::inference {
namespace {

// Writes raw GGUF fields, valid or not.
class RawGguf {
public:
    RawGguf& u8(std::uint8_t v) { return put(v); }
    RawGguf& u32(std::uint32_t v) { return put(v); }
    RawGguf& u64(std::uint64_t v) { return put(v); }
    RawGguf& str(const std::string& s) {
        u64(s.size());
        for (char c : s)
            m_bytes.push_back(std::byte(c));
        return *this;
    }
    RawGguf& header(std::uint64_t tensors, std::uint64_t metadata, std::uint32_t version = 3) {
        for (char c : std::string("GGUF"))
            m_bytes.push_back(std::byte(c));
        return u32(version).u64(tensors).u64(metadata);
    }
    // A tensor info entry.
    RawGguf& tensor(const std::string& name, std::vector<std::uint64_t> dims, std::uint32_t type,
                    std::uint64_t offset) {
        str(name).u32(std::uint32_t(dims.size()));
        for (std::uint64_t d : dims)
            u64(d);
        return u32(type).u64(offset);
    }
    RawGguf& padTo(std::size_t alignment) {
        while (m_bytes.size() % alignment != 0)
            m_bytes.push_back(std::byte{0});
        return *this;
    }
    RawGguf& zeros(std::size_t n) {
        m_bytes.insert(m_bytes.end(), n, std::byte{0});
        return *this;
    }
    const std::vector<std::byte>& bytes() const { return m_bytes; }

private:
    template <class T>
    RawGguf& put(T v) {
        const auto* p = reinterpret_cast<const std::byte*>(&v);
        m_bytes.insert(m_bytes.end(), p, p + sizeof(T));
        return *this;
    }
    std::vector<std::byte> m_bytes;
};

constexpr std::uint32_t kF32 = 0, kQ8_0 = 8, kString = 8, kArray = 9, kU32 = 4, kBool = 7;

struct Case {
    const char* what;
    std::vector<std::byte> bytes;
    StatusCode code;
    const char* message;  // the whole message after "bad.gguf: "
};

std::vector<Case> malformedCases() {
    std::vector<Case> cases;
    cases.push_back({"empty file",
                     {},
                     StatusCode::Corrupt,
                     "byte 0: magic: file ends 0 bytes into a 4-byte field"});
    cases.push_back({"wrong magic", RawGguf().u32(0x46554747 + 1).u32(3).u64(0).u64(0).bytes(),
                     StatusCode::Corrupt,
                     "byte 0: not a GGUF file (the first 4 bytes are not \"GGUF\")"});
    cases.push_back(
        {"version 1", RawGguf().header(0, 0, 1).bytes(), StatusCode::Unsupported,
         "byte 4: version: GGUF version 1 (2023) is not supported; convert the model again "
         "with a current llama.cpp"});
    cases.push_back({"version 9", RawGguf().header(0, 0, 9).bytes(), StatusCode::Unsupported,
                     "byte 4: version: unknown GGUF version 9 (Iris reads versions 2 and 3)"});
    cases.push_back({"big endian", RawGguf().header(0, 0, 0x03000000).bytes(),
                     StatusCode::Unsupported,
                     "byte 4: version: a big-endian GGUF file; Iris reads little-endian files"});
    cases.push_back(
        {"huge metadata count", RawGguf().header(0, ~0ull).bytes(), StatusCode::Corrupt,
         "byte 16: metadata count 18446744073709551615 cannot fit in the 0 bytes left"});
    cases.push_back({"huge tensor count", RawGguf().header(1ull << 40, 0).zeros(64).bytes(),
                     StatusCode::Corrupt,
                     "byte 8: tensor count 1099511627776 cannot fit in the 64 bytes left"});
    cases.push_back(
        {"key longer than the file", RawGguf().header(0, 1).u64(1000).zeros(20).bytes(),
         StatusCode::Corrupt,
         "byte 24: metadata entry 0 key: string length 1000 runs past the end of the file "
         "(20 bytes left)"});
    cases.push_back({"unknown value type", RawGguf().header(0, 1).str("k").u32(13).u32(0).bytes(),
                     StatusCode::Corrupt,
                     "byte 33: metadata entry 0 ('k'): unknown value type 13"});
    cases.push_back({"bool that is 2", RawGguf().header(0, 1).str("k").u32(kBool).u8(2).bytes(),
                     StatusCode::Corrupt,
                     "byte 37: metadata entry 0 ('k'): bool value 2 is not 0 or 1"});
    cases.push_back(
        {"duplicate key",
         RawGguf().header(0, 2).str("k").u32(kU32).u32(1).str("k").u32(kU32).u32(2).bytes(),
         StatusCode::Corrupt, "byte 41: metadata entry 1 ('k'): duplicate key (also entry 0)"});
    cases.push_back(
        {"array count larger than the file",
         RawGguf().header(0, 1).str("k").u32(kArray).u32(kU32).u64(1ull << 61).bytes(),
         StatusCode::Corrupt,
         "byte 41: metadata entry 0 ('k'): 2305843009213693952 uint32 values cannot fit in the 0 "
         "bytes left"});
    {
        RawGguf deep;
        deep.header(0, 1).str("k").u32(kArray);
        for (int i = 0; i < 20; ++i)
            deep.u32(kArray).u64(1);
        deep.u32(kU32).u64(0);
        cases.push_back(
            {"arrays nested 20 deep", deep.bytes(), StatusCode::Corrupt,
             "byte 229: metadata entry 0 ('k')[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: "
             "arrays nested deeper than 16 levels"});
    }
    cases.push_back({"alignment of the wrong type",
                     RawGguf().header(0, 1).str("general.alignment").u32(kString).str("32").bytes(),
                     StatusCode::Corrupt,
                     "metadata 'general.alignment' has type string, expected uint32"});
    cases.push_back({"alignment not a power of two",
                     RawGguf().header(0, 1).str("general.alignment").u32(kU32).u32(24).bytes(),
                     StatusCode::Corrupt,
                     "metadata 'general.alignment' is 24, expected a power of two"});
    cases.push_back({"five dimensions",
                     RawGguf().header(1, 0).tensor("t", {1, 1, 1, 1, 1}, kF32, 0).bytes(),
                     StatusCode::Corrupt, "byte 33: tensor 0 ('t'): 5 dimensions (at most 4)"});
    cases.push_back(
        {"element count overflow",
         RawGguf().header(1, 0).tensor("t", {1ull << 40, 1ull << 40}, kF32, 0).bytes(),
         StatusCode::Corrupt,
         "byte 45: tensor 0 ('t'): dimension 1 = 1099511627776 overflows the element count"});
    cases.push_back({"unknown tensor type", RawGguf().header(1, 0).tensor("t", {4}, 5, 0).bytes(),
                     StatusCode::Unsupported, "byte 45: tensor 0 ('t'): unknown tensor type 5"});
    cases.push_back(
        {"row not a whole number of blocks",
         RawGguf().header(1, 0).tensor("t", {48, 2}, kQ8_0, 0).bytes(), StatusCode::Corrupt,
         "byte 53: tensor 0 ('t'): row length 48 is not a multiple of the q8_0 block size 32"});
    cases.push_back(
        {"misaligned offset", RawGguf().header(1, 0).tensor("t", {4}, kF32, 8).bytes(),
         StatusCode::Corrupt,
         "byte 49: tensor 0 ('t'): data offset 8 is not a multiple of the alignment 32"});
    cases.push_back(
        {"offset plus size overflows",
         RawGguf().header(1, 0).tensor("t", {64}, kF32, ~0ull - 31).bytes(), StatusCode::Corrupt,
         "byte 49: tensor 0 ('t'): data offset 18446744073709551584 plus size overflows"});
    cases.push_back({"data section missing",
                     RawGguf().header(1, 0).tensor("t", {4}, kF32, 0).bytes(), StatusCode::Corrupt,
                     "byte 57: file ends before its data section (at byte 64)"});
    cases.push_back(
        {"tensor data past the end",
         RawGguf().header(1, 0).tensor("t", {16}, kF32, 0).padTo(32).zeros(32).bytes(),
         StatusCode::Corrupt,
         "byte 24: tensor 't': data [0, 64) runs past the end of the data section (32 bytes)"});
    cases.push_back({"overlapping tensors",
                     RawGguf()
                         .header(2, 0)
                         .tensor("a", {16}, kF32, 0)
                         .tensor("b", {8}, kF32, 32)
                         .padTo(32)
                         .zeros(96)
                         .bytes(),
                     StatusCode::Corrupt,
                     "byte 57: tensor 'b' (data offset 32) overlaps tensor 'a' (data [0, 64))"});
    cases.push_back(
        {"duplicate tensor name",
         RawGguf().header(2, 0).tensor("a", {8}, kF32, 0).tensor("a", {8}, kF32, 32).bytes(),
         StatusCode::Corrupt, "byte 57: tensor 1 ('a'): duplicate tensor name"});
    return cases;
}

TEST(GgufMalformed, EachCaseGetsAnErrorNamingFieldAndOffset) {
    for (const Case& c : malformedCases()) {
        const Result<GgufFile> file = GgufFile::parse(c.bytes, "bad.gguf");
        ASSERT_FALSE(file.isOk()) << c.what;
        EXPECT_EQ(file.status().code(), c.code) << c.what;
        EXPECT_EQ(file.status().message(), std::string("bad.gguf: ") + c.message) << c.what;
    }
}

std::vector<std::byte> validModel() {
    GgufWriter writer;
    writer.set("general.architecture", std::string("qwen2"));
    writer.set("qwen2.block_count", std::uint32_t(2));
    writer.set("tokenizer.ggml.tokens",
               GgufArray{std::vector<std::string>{"a", "b", "<|im_end|>"}});
    writer.set("nested", GgufArray{std::vector<GgufArray>{GgufArray{std::vector<float>{1.0f}}}});
    const std::vector<float> w(64, 0.5f);
    EXPECT_TRUE(writer.addTensor("token_embd.weight", {32, 2}, w).isOk());
    EXPECT_TRUE(writer.addTensor("output_norm.weight", {32}, std::span(w).first(32)).isOk());
    return writer.serialize();
}

TEST(GgufMalformed, EveryTruncationIsRefused) {
    const std::vector<std::byte> bytes = validModel();
    ASSERT_TRUE(GgufFile::parse(bytes, "whole.gguf"));
    for (std::size_t length = 0; length < bytes.size(); ++length) {
        // A copy of exactly `length` bytes, so that ASan sees any read past it.
        const std::vector<std::byte> prefix(bytes.begin(), bytes.begin() + std::ptrdiff_t(length));
        const Result<GgufFile> file = GgufFile::parse(prefix, "cut.gguf");
        ASSERT_FALSE(file.isOk()) << "a file cut to " << length << " of " << bytes.size()
                                  << " bytes parsed";
        EXPECT_EQ(file.status().message().rfind("cut.gguf: byte ", 0), 0u)
            << file.status().message();
    }
}

TEST(GgufMalformed, RandomByteFlipsNeverCrash) {
    const std::vector<std::byte> bytes = validModel();
    std::mt19937 rng(42);
    int parsed = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        std::vector<std::byte> mutated = bytes;
        const int flips = 1 + int(rng() % 4);
        for (int f = 0; f < flips; ++f)
            mutated[rng() % mutated.size()] = std::byte(rng() & 0xff);
        const Result<GgufFile> file = GgufFile::parse(mutated, "flipped.gguf");
        if (file) {
            ++parsed;
            for (const auto& [key, value] : file->metadata())
                (void)ggufToString(value);
            for (const GgufTensor& t : file->tensors()) {
                ASSERT_LE(t.data.data() + t.data.size(), mutated.data() + mutated.size());
            }
        } else {
            EXPECT_FALSE(file.status().message().empty());
        }
    }
    EXPECT_GT(parsed, 0) << "no mutation survived: the valid file itself may be broken";
}

}  // namespace
}  // namespace iris::inference
