#pragma once
// CRC-32C (Castagnoli, the iSCSI/ext4 checksum: reflected polynomial 0x82F63B78), incremental.
// Checks that a block of saved KV reads back as it was written (inference/kv_disk_store.h).
// x86-64 CPUs with SSE4.2 compute it with the crc32 instruction (several GB/s, so checking a
// block costs little next to reading it); others, and crc32cPortable, use a table.

#include <cstddef>
#include <cstdint>
#include <span>

namespace iris {

// The checksum of `bytes` continuing from `crc` (0 to start): crc32c(b, crc32c(a)) equals the
// checksum of a followed by b.
std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t crc = 0);
// The same with the table only (the reference the hardware path is tested against).
std::uint32_t crc32cPortable(std::span<const std::byte> bytes, std::uint32_t crc = 0);

}  // namespace iris
