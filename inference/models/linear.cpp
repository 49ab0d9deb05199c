#include "inference/models/linear.h"

#include <algorithm>

#include "kernels/matmul.h"

namespace iris::inference {
namespace {

constexpr std::int64_t kPackedGroup = 16;  // rows per group of kernels::packWeights' layout
constexpr std::int64_t kHugePage = std::int64_t(2) << 20;
constexpr std::int64_t kChunk = 16 * kHugePage;  // shared by the matrices smaller than it

std::int64_t roundUp(std::int64_t bytes, std::int64_t unit) {
    return (bytes + unit - 1) / unit * unit;
}

}  // namespace

Linear ExpertStack::expert(std::int64_t e) const {
    const std::int64_t bytes = kernels::rowBytes(type, in) * out;
    return Linear{type, static_cast<const std::byte*>(data) + e * bytes, in, out, nullptr, nullptr};
}

void LinearRunner::pack(Linear& w) {
    const std::int64_t bytes = kernels::packedBytes(w.type, w.out, w.in);
    if (bytes == 0 || w.out % kPackedGroup != 0) return;
    // Without the address space the file's layout serves (slower, same results).
    std::byte* space = packingSpace(bytes);
    if (space == nullptr) return;
    kernels::packWeights(w.type, w.data, w.out, w.in, space);
    w.packed = space;
}

std::byte* LinearRunner::packingSpace(std::int64_t bytes) {
    bytes = roundUp(bytes, 64);
    if (bytes <= m_chunkSize - m_chunkUsed) {
        std::byte* space = m_packed.back().data() + m_chunkUsed;
        m_chunkUsed += bytes;
        return space;
    }
    // A new shared chunk, or a buffer of its own for a matrix larger than one: whole huge pages
    // either way (pages come on first touch, as packWeights writes them).
    const bool own = bytes > kChunk;
    Result<ReservedMemory> memory = ReservedMemory::reserve(
        own ? roundUp(bytes, kHugePage) : kChunk, ReservedMemory::Pages::Huge);
    if (!memory) return nullptr;
    m_packed.push_back(std::move(*memory));
    m_chunkSize = own ? 0 : kChunk;
    m_chunkUsed = own ? 0 : bytes;
    return m_packed.back().data();
}

void LinearRunner::run(std::initializer_list<Target> targets, const float* x, std::int64_t rows,
                       ThreadPool& pool) {
    if (rows == 0) return;
    const std::int64_t in = targets.begin()->weights->in;
    const std::byte* ready[3] = {};
    std::int64_t columns = 0;
    for (const Target& target : targets) {
        columns += target.weights->out;
        const kernels::TensorType type = target.weights->type;
        const auto format = std::size_t(kernels::activationFormat(type));
        if (ready[format] != nullptr) continue;
        const std::int64_t rowBytes = kernels::preparedRowBytes(type, in);
        std::vector<std::byte>& buffer = m_prepared[format];
        if (std::int64_t(buffer.size()) < rowBytes * rows)
            buffer.resize(std::size_t(rowBytes * rows));
        std::byte* base = buffer.data();
        pool.parallelFor(rows, 1, [&](std::int64_t begin, std::int64_t end) {
            kernels::prepareActivations(type, x + begin * in, in, end - begin, in,
                                        base + begin * rowBytes);
        });
        ready[format] = base;
    }
    // All targets' output rows form one range split between the threads, in grains of two
    // packed groups: groups stay whole, in the pairs a prefill chunk's kernel takes at a time (a
    // piece with an odd number ends with a group alone, about 1.3x slower per row), and each
    // piece of y is whole cache lines. Four pieces per thread, so that a thread the OS
    // deschedules holds the others up for a quarter of its share at most
    // (ThreadPool::parallelFor).
    constexpr int kPiecesPerThread = 4;
    const auto multiply = [&](std::int64_t begin, std::int64_t end) {
        std::int64_t first = 0;
        for (const Target& target : targets) {
            const Linear& w = *target.weights;
            const std::int64_t from = std::max<std::int64_t>(begin - first, 0);
            const std::int64_t to = std::min(end - first, w.out);
            first += w.out;
            if (from >= to) continue;
            const std::byte* xq = ready[std::size_t(kernels::activationFormat(w.type))];
            // A range that starts inside a packed group (after a target whose size is not a
            // multiple of 16) takes the file's layout.
            if (w.packed != nullptr && from % kPackedGroup == 0) {
                kernels::matmulPacked(w.type, w.packed, w.in, xq, rows, target.y, w.out, from, to);
            } else {
                kernels::matmul(w.type, w.data, w.in, xq, rows, target.y, w.out, from, to);
            }
            if (w.bias == nullptr) continue;
            for (std::int64_t r = 0; r < rows; ++r) {
                for (std::int64_t n = from; n < to; ++n)
                    target.y[r * w.out + n] += w.bias[n];
            }
        }
    };
    pool.parallelFor(columns, 2 * kPackedGroup, multiply, kPiecesPerThread);
}

}  // namespace iris::inference
