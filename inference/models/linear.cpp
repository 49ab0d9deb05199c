#include "inference/models/linear.h"

#include <algorithm>

#include "kernels/matmul.h"

namespace iris::inference {
namespace {

constexpr std::int64_t kPackedGroup = 16;  // rows per group of kernels::packWeights' layout

}  // namespace

Linear ExpertStack::expert(std::int64_t e) const {
    const std::int64_t bytes = kernels::rowBytes(type, in) * out;
    return Linear{type, static_cast<const std::byte*>(data) + e * bytes, in, out, nullptr, nullptr};
}

void LinearRunner::pack(Linear& w) {
    const std::int64_t bytes = kernels::packedBytes(w.type, w.out, w.in);
    if (bytes == 0 || w.out % kPackedGroup != 0) return;
    // for_overwrite: packWeights writes every byte, no need to zero hundreds of MB first.
    auto& buffer = m_packed.emplace_back(
        std::make_unique_for_overwrite<std::byte[]>(static_cast<std::size_t>(bytes)));
    kernels::packWeights(w.type, w.data, w.out, w.in, buffer.get());
    w.packed = buffer.get();
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
    // All targets' output rows form one range split between the threads, in grains of 16 so
    // that packed groups stay whole and each piece of y is whole cache lines; four pieces per
    // thread, so that a thread the OS deschedules holds the others up for a quarter of its share
    // at most (ThreadPool::parallelFor).
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
    pool.parallelFor(columns, kPackedGroup, multiply, kPiecesPerThread);
}

}  // namespace iris::inference
