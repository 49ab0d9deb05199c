#include "base/reserved_memory.h"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>

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

// The mapping (from /proc/self/maps) that holds `address`: its first and one-past-last byte.
std::pair<std::uintptr_t, std::uintptr_t> mappingAround(const void* address) {
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
        const std::size_t dash = line.find('-'), space = line.find(' ');
        const std::uintptr_t begin = std::stoull(line.substr(0, dash), nullptr, 16);
        const std::uintptr_t end = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
        if (begin <= at && at < end) return {begin, end};
    }
    return {0, 0};
}

// A huge-page buffer starts on a 2 MiB boundary, whatever its size, reads zeros and keeps what
// is written up to its last byte, and the range marked for huge pages (a mapping of its own in
// /proc/self/maps) is exactly its pages. Whether the kernel grants huge pages is its setting
// (/sys/kernel/mm/transparent_hugepage/enabled); where it does, written 2 MiB pages are huge.
TEST(ReservedMemory, HugePagesStartOnA2MiBBoundary) {
    constexpr std::int64_t kHuge = std::int64_t(2) << 20;
    const auto page = std::int64_t(sysconf(_SC_PAGESIZE));
    std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string setting;
    std::getline(mode, setting);
    for (std::int64_t bytes : {std::int64_t(1), kHuge - 1, 3 * kHuge + 4096 + 5}) {
        Result<ReservedMemory> memory = ReservedMemory::reserve(bytes, ReservedMemory::Pages::Huge);
        ASSERT_TRUE(memory) << memory.status().message();
        ASSERT_EQ(memory->size(), bytes);
        const auto start = reinterpret_cast<std::uintptr_t>(memory->data());
        EXPECT_EQ(start % kHuge, 0u) << bytes;
        EXPECT_EQ(memory->data()[bytes - 1], std::byte{0});
        memory->data()[0] = std::byte{1};
        memory->data()[bytes - 1] = std::byte{2};
        EXPECT_EQ(memory->data()[bytes - 1], std::byte{2});
        // Marked for huge pages, the mapping merges with no neighbour (kernels with THP built in).
        if (!setting.empty()) {
            const auto [begin, end] = mappingAround(memory->data());
            EXPECT_EQ(begin, start) << bytes;
            EXPECT_EQ(end, start + std::uintptr_t((bytes + page - 1) / page * page)) << bytes;
        }
    }
    if (setting.find("[never]") != std::string::npos || setting.empty())
        GTEST_SKIP() << "transparent huge pages are off here: " << setting;
    const std::int64_t before = hugePageBytesInUse();
    ASSERT_GE(before, 0);
    Result<ReservedMemory> memory =
        ReservedMemory::reserve(4 * kHuge, ReservedMemory::Pages::Huge);
    ASSERT_TRUE(memory);
    for (std::int64_t at = 0; at < 4 * kHuge; at += 4096)
        memory->data()[at] = std::byte{1};
    // A hint: the kernel may lack a free 2 MiB page at that moment, so at least one of four.
    EXPECT_GE(hugePageBytesInUse() - before, kHuge) << "with transparent huge pages " << setting;
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
