#include "base/reserved_memory.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

namespace iris {
namespace {

// This process's resident memory, from /proc/self/statm (pages).
std::int64_t residentBytes() {
    std::ifstream statm("/proc/self/statm");
    std::int64_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * sysconf(_SC_PAGESIZE);
}

TEST(ReservedMemory, FourGibibytesCostMemoryOnlyWhereWritten) {
    constexpr std::int64_t kBytes = std::int64_t(4) << 30;
    const std::int64_t before = residentBytes();
    Result<ReservedMemory> memory = ReservedMemory::reserve(kBytes);
    ASSERT_TRUE(memory) << memory.status().message();
    ASSERT_EQ(memory->size(), kBytes);
    std::byte* data = memory->data();
    // Every 64 MiB, one byte written: 64 pages.
    for (std::int64_t at = 0; at < kBytes; at += std::int64_t(64) << 20)
        data[at] = std::byte{7};
    data[kBytes - 1] = std::byte{9};
    const std::int64_t grown = residentBytes() - before;
    EXPECT_LT(grown, std::int64_t(64) << 20) << "resident memory grew by " << grown << " bytes";
    EXPECT_EQ(data[0], std::byte{7});
    EXPECT_EQ(data[1], std::byte{0});  // zero until written
    EXPECT_EQ(data[(std::int64_t(64) << 20) + 1], std::byte{0});
    EXPECT_EQ(data[kBytes - 1], std::byte{9});
}

TEST(ReservedMemory, MovesOwnershipAndAnEmptyReservationHasNoData) {
    Result<ReservedMemory> memory = ReservedMemory::reserve(1 << 20);
    ASSERT_TRUE(memory);
    std::byte* data = memory->data();
    data[5] = std::byte{3};
    ReservedMemory moved = std::move(*memory);
    EXPECT_EQ(moved.data(), data);
    EXPECT_EQ(moved.size(), 1 << 20);
    EXPECT_EQ(memory->data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from state
    EXPECT_EQ(moved.data()[5], std::byte{3});
    Result<ReservedMemory> empty = ReservedMemory::reserve(0);
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->data(), nullptr);
    EXPECT_EQ(empty->size(), 0);
}

TEST(ReservedMemory, AnImpossibleSizeIsRefusedNamingIt) {
    Result<ReservedMemory> memory = ReservedMemory::reserve(std::int64_t(1) << 62);
    ASSERT_FALSE(memory);
    EXPECT_EQ(memory.status().code(), StatusCode::OutOfRange);
    EXPECT_NE(memory.status().message().find("4611686018427387904 bytes"), std::string::npos)
        << memory.status().message();
}

}  // namespace
}  // namespace iris
