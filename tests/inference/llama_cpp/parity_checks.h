#pragma once
// What both llama.cpp parity tests check with: the fixtures folder, the digest a sha256sum list
// records for a file, and the error measure the READMEs report.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/sha256.h"

namespace iris::inference::testing {

inline const std::filesystem::path kParityFixtures =
    std::filesystem::path(IRIS_SOURCE_ROOT) / "tests/inference/llama_cpp/fixtures";

inline std::string sha256Hex(std::span<const std::byte> bytes) {
    return toHex(
        Sha256::hash(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size())));
}

// The digest `list` (a file in fixtures/, sha256sum's format) records for the file named `name`;
// empty when it lists none.
inline std::string recordedSha256(const std::string& list, const std::string& name) {
    std::ifstream in(kParityFixtures / list);
    EXPECT_TRUE(in) << "cannot read " << (kParityFixtures / list);
    for (std::string digest, file; in >> digest >> file;) {
        if (std::filesystem::path(file).filename() == name) return digest;
    }
    return "";
}

// max |got - want| / max |want|
template <class A, class B>
double relativeError(const std::vector<A>& got, const std::vector<B>& want) {
    EXPECT_EQ(got.size(), want.size());
    if (got.size() != want.size() || want.empty()) return 1e9;
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        diff = std::max(diff, std::fabs(double(got[i]) - double(want[i])));
        ref = std::max(ref, std::fabs(double(want[i])));
    }
    return diff / ref;
}

}  // namespace iris::inference::testing
