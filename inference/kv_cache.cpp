#include "inference/kv_cache.h"

#include <cassert>
#include <cstring>

namespace iris::inference {

Result<KvCache> KvCache::create(const KvCacheOptions& options) {
    if (options.layers <= 0 || options.kvHeads <= 0 || options.headDim <= 0 ||
        options.blockSize <= 0 || options.blocks <= 0) {
        return Status::invalidArgument(
            "KV cache: layers, heads, head size, block size and block count must be positive");
    }
    if (options.type != kernels::TensorType::F16 && options.type != kernels::TensorType::F32) {
        return Status::invalidArgument("KV cache: element type must be f16 or f32");
    }
    if (options.indexerDim < 0 || options.indexerFirstLayer < 0 ||
        (options.indexerDim > 0 && options.indexerFirstLayer >= options.layers)) {
        return Status::invalidArgument("KV cache: bad indexer key geometry");
    }
    if (options.indexerDim > 0) {
        const int page = options.blockSize, block = options.selectionBlock;
        if (block <= 0 || (block % page != 0 && page % block != 0)) {
            return Status::invalidArgument(
                "KV cache: the block size of " + std::to_string(page) +
                " tokens does not line up with the sparse-attention selection block of " +
                std::to_string(block) + " tokens (" + options.selectionBlockKey +
                "): one must divide the other; use a KV block size that divides " +
                std::to_string(block));
        }
    }
    KvCache cache;
    cache.m_options = options;
    const std::int64_t indexLayers =
        options.indexerDim > 0 ? options.layers - options.indexerFirstLayer : 0;
    const std::int64_t bytes = options.blocks * (2 * options.layers * cache.blockBytes() +
                                                 indexLayers * cache.indexBlockBytes());
    Result<ReservedMemory> storage = ReservedMemory::reserve(bytes);
    if (!storage) {
        return Status::outOfRange("KV cache of " + std::to_string(options.blocks) + " blocks: " +
                                  storage.status().message());
    }
    cache.m_storage = std::move(*storage);
    cache.m_refCount.assign(std::size_t(options.blocks), 0);
    cache.m_name.assign(std::size_t(options.blocks), Sha256Digest{});
    cache.m_named.assign(std::size_t(options.blocks), false);
    cache.m_released.assign(std::size_t(options.blocks), 0);
    cache.m_freeList.reserve(std::size_t(options.blocks));
    for (std::int64_t b = options.blocks - 1; b >= 0; --b)
        cache.m_freeList.push_back(std::int32_t(b));
    cache.setResidency(nullptr);  // every layer in the pool
    return cache;
}

std::int64_t KvCache::elementBytes() const {
    return m_options.type == kernels::TensorType::F16 ? 2 : 4;
}

std::int64_t KvCache::blockBytes() const {
    return std::int64_t(m_options.blockSize) * m_options.kvHeads * m_options.headDim *
           elementBytes();
}

std::int64_t KvCache::indexBlockBytes() const {
    return std::int64_t(m_options.blockSize) * m_options.indexerDim * std::int64_t(sizeof(float));
}

// Indexer pools follow all the K/V pools.
std::byte* KvCache::indexBase(int layer) {
    assert(m_options.indexerDim > 0 && layer >= m_options.indexerFirstLayer &&
           layer < m_options.layers);
    const std::int64_t kvBytes =
        2 * std::int64_t(m_options.layers) * m_options.blocks * blockBytes();
    return m_storage.data() + kvBytes +
           std::int64_t(layer - m_options.indexerFirstLayer) * m_options.blocks * indexBlockBytes();
}

const float* KvCache::indexKeys(int layer) const {
    return reinterpret_cast<const float*>(const_cast<KvCache*>(this)->indexBase(layer));
}

float* KvCache::indexKeySlot(int layer, SequenceId sequence, std::int64_t position) {
    Sequence& s = m_sequences[std::size_t(sequence)];
    assert(position < s.length);
    const std::size_t index = std::size_t(position / m_options.blockSize);
    assert(m_refCount[std::size_t(s.blocks[index])] == 1 &&
           "only positions extend() made room for are written");
    const std::int64_t row = position % m_options.blockSize;
    return reinterpret_cast<float*>(indexBase(layer)) +
           (s.blocks[index] * std::int64_t(m_options.blockSize) + row) * m_options.indexerDim;
}

std::byte* KvCache::layerBase(int layer, bool value) {
    const std::int64_t layerBytes = m_options.blocks * blockBytes();
    return m_storage.data() + (2 * std::int64_t(layer) + (value ? 1 : 0)) * layerBytes;
}

void KvCache::setResidency(KvResidency* residency) {
    m_residency = residency;
    m_placement.resize(std::size_t(m_options.layers));
    for (int layer = 0; layer < m_options.layers; ++layer) {
        KvPlacement& p = m_placement[std::size_t(layer)];
        p = residency != nullptr ? residency->placement(layer) : KvPlacement{};
        if (p.keys == nullptr) p = {layerBase(layer, false), layerBase(layer, true), nullptr};
    }
}

std::byte* KvCache::part(int layer, bool value, std::int32_t block) const {
    const KvPlacement& p = m_placement[std::size_t(layer)];
    const std::int64_t page = p.slotOf != nullptr ? p.slotOf[block] : block;
    assert(page != kAbsentSlot || p.slotOf == nullptr);  // resident (tiers) or in the pool
    return (value ? p.values : p.keys) + page * blockBytes();
}

const void* KvCache::keys(int layer) const {
    return m_placement[std::size_t(layer)].keys;
}
const void* KvCache::values(int layer) const {
    return m_placement[std::size_t(layer)].values;
}
const std::int32_t* KvCache::slotTable(int layer) const {
    return m_placement[std::size_t(layer)].slotOf;
}

SequenceId KvCache::newSequence() {
    for (std::size_t i = 0; i < m_sequences.size(); ++i) {
        if (!m_sequences[i].live) {
            m_sequences[i] = Sequence{true, 0, {}};
            return SequenceId(i);
        }
    }
    m_sequences.push_back(Sequence{true, 0, {}});
    return SequenceId(m_sequences.size() - 1);
}

bool KvCache::exists(SequenceId sequence) const {
    return sequence >= 0 && std::size_t(sequence) < m_sequences.size() &&
           m_sequences[std::size_t(sequence)].live;
}

SequenceId KvCache::fork(SequenceId source, std::int64_t length) {
    assert(exists(source) && length <= this->length(source));
    const SequenceId id = newSequence();
    const Sequence& from = m_sequences[std::size_t(source)];
    Sequence& to = m_sequences[std::size_t(id)];
    const std::int64_t blocks = (length + m_options.blockSize - 1) / m_options.blockSize;
    to.blocks.assign(from.blocks.begin(), from.blocks.begin() + blocks);
    for (std::int32_t b : to.blocks)
        ++m_refCount[std::size_t(b)];
    to.length = length;
    return id;
}

void KvCache::release(SequenceId sequence) {
    if (!exists(sequence)) return;
    Sequence& s = m_sequences[std::size_t(sequence)];
    for (std::int32_t b : s.blocks)
        dropBlock(b);
    s = Sequence{};
}

std::int64_t KvCache::length(SequenceId sequence) const {
    return m_sequences[std::size_t(sequence)].length;
}

std::span<const std::int32_t> KvCache::blockTable(SequenceId sequence) const {
    return m_sequences[std::size_t(sequence)].blocks;
}

// A free block, else the cached block released longest ago (evicted: it loses its name).
std::int32_t KvCache::takeBlock() {
    std::int32_t b;
    if (!m_freeList.empty()) {
        b = m_freeList.back();
        m_freeList.pop_back();
    } else {
        assert(!m_idle.empty());
        b = m_idle.begin()->second;
        m_idle.erase(m_idle.begin());
        unname(b);
        ++m_evictions;
    }
    m_refCount[std::size_t(b)] = 1;
    if (m_residency != nullptr) m_residency->forget(b, true);
    return b;
}

void KvCache::dropBlock(std::int32_t block) {
    const auto b = std::size_t(block);
    if (--m_refCount[b] != 0) return;
    if (m_named[b]) {
        m_released[b] = ++m_clock;
        m_idle.emplace(m_released[b], block);
    } else {
        m_freeList.push_back(block);
        if (m_residency != nullptr) m_residency->forget(block, false);
    }
}

void KvCache::unname(std::int32_t block) {
    const auto b = std::size_t(block);
    if (!m_named[b]) return;
    m_byName.erase(m_name[b]);
    m_named[b] = false;
}

void KvCache::nameBlock(SequenceId sequence, std::size_t index, const Sha256Digest& name) {
    const Sequence& s = m_sequences[std::size_t(sequence)];
    assert(index < s.blocks.size() && std::int64_t(index + 1) * m_options.blockSize <= s.length &&
           "a full block");
    const std::int32_t block = s.blocks[index];
    if (m_named[std::size_t(block)] || m_byName.contains(name)) return;
    m_byName.emplace(name, block);
    m_name[std::size_t(block)] = name;
    m_named[std::size_t(block)] = true;
}

std::int32_t KvCache::findBlock(const Sha256Digest& name) const {
    const auto found = m_byName.find(name);
    return found == m_byName.end() ? -1 : found->second;
}

void KvCache::appendCached(SequenceId sequence, std::int32_t block) {
    Sequence& s = m_sequences[std::size_t(sequence)];
    assert(m_named[std::size_t(block)] &&
           s.length == std::int64_t(s.blocks.size()) * m_options.blockSize);
    if (m_refCount[std::size_t(block)]++ == 0)
        m_idle.erase({m_released[std::size_t(block)], block});
    s.blocks.push_back(block);
    s.length += m_options.blockSize;
}

Status KvCache::extend(SequenceId sequence, std::int64_t newLength) {
    assert(exists(sequence));
    Sequence& s = m_sequences[std::size_t(sequence)];
    if (newLength <= s.length) return {};
    const std::int64_t needed = (newLength + m_options.blockSize - 1) / m_options.blockSize;
    const std::int64_t missing = needed - std::int64_t(s.blocks.size());
    // The partly filled last block gets written too: if a fork shares it, it is copied first.
    const bool copyLast =
        s.length % m_options.blockSize != 0 && m_refCount[std::size_t(s.blocks.back())] > 1;
    if (missing + (copyLast ? 1 : 0) > freeBlocks()) {
        return Status::outOfRange("KV cache full: " + std::to_string(missing) + " more blocks of " +
                                  std::to_string(m_options.blockSize) + " tokens needed, " +
                                  std::to_string(freeBlocks()) + " free (raise the context size)");
    }
    if (copyLast && m_residency != nullptr)
        IRIS_RETURN_IF_ERROR(m_residency->requireWhole(s.blocks.back()));
    if (copyLast) makePrivate(s, s.blocks.size() - 1);
    // A named block written again (after a truncate into it) no longer holds what it is named.
    if (s.length % m_options.blockSize != 0) unname(s.blocks.back());
    const std::size_t firstWritten = std::size_t(s.length / m_options.blockSize);
    for (std::int64_t i = 0; i < missing; ++i)
        s.blocks.push_back(takeBlock());
    s.length = newLength;
    for (std::size_t i = firstWritten; m_residency != nullptr && i < s.blocks.size(); ++i)
        IRIS_RETURN_IF_ERROR(m_residency->writable(s.blocks[i]));
    return {};
}

void KvCache::truncate(SequenceId sequence, std::int64_t length) {
    assert(exists(sequence));
    Sequence& s = m_sequences[std::size_t(sequence)];
    if (length >= s.length) return;
    const std::size_t keep = std::size_t((length + m_options.blockSize - 1) / m_options.blockSize);
    for (std::size_t i = keep; i < s.blocks.size(); ++i)
        dropBlock(s.blocks[i]);
    s.blocks.resize(keep);
    s.length = length;
}

std::int64_t KvCache::blockPayloadBytes() const {
    const std::int64_t indexLayers =
        m_options.indexerDim > 0 ? m_options.layers - m_options.indexerFirstLayer : 0;
    return 2 * m_options.layers * blockBytes() + indexLayers * indexBlockBytes();
}

// Calls visit(pointer into the pool, bytes) for each part of `block` in payload order.
template <typename Visit>
static void forEachBlockPart(KvCache& cache, std::int32_t block, std::int64_t kvBytes,
                             std::int64_t indexBytes, Visit visit) {
    const KvCacheOptions& o = cache.options();
    for (int layer = 0; layer < o.layers; ++layer) {
        const std::int32_t* slotOf = cache.slotTable(layer);
        const std::int64_t page = slotOf != nullptr ? slotOf[block] : block;
        visit(static_cast<std::byte*>(const_cast<void*>(cache.keys(layer))) + page * kvBytes,
              kvBytes);
        visit(static_cast<std::byte*>(const_cast<void*>(cache.values(layer))) + page * kvBytes,
              kvBytes);
    }
    for (int layer = o.indexerFirstLayer; o.indexerDim > 0 && layer < o.layers; ++layer) {
        visit(reinterpret_cast<std::byte*>(const_cast<float*>(cache.indexKeys(layer))) +
                  block * indexBytes,
              indexBytes);
    }
}

void KvCache::copyBlockOut(std::int32_t block, std::span<std::byte> out) const {
    assert(std::int64_t(out.size()) == blockPayloadBytes());
    std::byte* to = out.data();
    forEachBlockPart(const_cast<KvCache&>(*this), block, blockBytes(), indexBlockBytes(),
                     [&](const std::byte* part, std::int64_t n) {
                         std::memcpy(to, part, std::size_t(n));
                         to += n;
                     });
}

void KvCache::copyBlockIn(std::int32_t block, std::span<const std::byte> in) {
    assert(std::int64_t(in.size()) == blockPayloadBytes() && m_refCount[std::size_t(block)] == 1 &&
           !m_named[std::size_t(block)]);
    const std::byte* from = in.data();
    forEachBlockPart(*this, block, blockBytes(), indexBlockBytes(),
                     [&](std::byte* part, std::int64_t n) {
                         std::memcpy(part, from, std::size_t(n));
                         from += n;
                     });
    if (m_mirror != nullptr) m_mirror->blockFilled(block);
}

void KvCache::makePrivate(Sequence& sequence, std::size_t index) {
    const std::int32_t shared = sequence.blocks[index];
    if (m_refCount[std::size_t(shared)] == 1) return;
    const std::int32_t copy = takeBlock();
    // With a mirror the data lives there (the host pool stays untouched, uncommitted).
    if (m_mirror != nullptr) m_mirror->copyBlock(shared, copy);
    for (int layer = 0; m_mirror == nullptr && layer < m_options.layers; ++layer) {
        for (bool value : {false, true}) {
            std::memcpy(part(layer, value, copy), part(layer, value, shared),
                        std::size_t(blockBytes()));
        }
        if (m_options.indexerDim > 0 && layer >= m_options.indexerFirstLayer) {
            std::byte* base = indexBase(layer);
            std::memcpy(base + copy * indexBlockBytes(), base + shared * indexBlockBytes(),
                        std::size_t(indexBlockBytes()));
        }
    }
    dropBlock(shared);
    sequence.blocks[index] = copy;
}

void* KvCache::slot(int layer, bool value, SequenceId sequence, std::int64_t position) {
    Sequence& s = m_sequences[std::size_t(sequence)];
    assert(position < s.length);
    const std::size_t index = std::size_t(position / m_options.blockSize);
    assert(m_refCount[std::size_t(s.blocks[index])] == 1 &&
           "only positions extend() made room for are written");
    const std::int64_t row = position % m_options.blockSize;
    return part(layer, value, s.blocks[index]) +
           row * m_options.kvHeads * m_options.headDim * elementBytes();
}

void* KvCache::keySlot(int layer, SequenceId sequence, std::int64_t position) {
    return slot(layer, false, sequence, position);
}

void* KvCache::valueSlot(int layer, SequenceId sequence, std::int64_t position) {
    return slot(layer, true, sequence, position);
}

}  // namespace iris::inference
