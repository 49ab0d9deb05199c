#include "inference/models/rope_tables.h"

#include <cmath>

#include "inference/models/model_parts.h"
#include "kernels/rope.h"

namespace iris::inference {

void RopeTables::build(std::span<const TokenInput> batch, const ModelConfig& config) {
    m_dims = config.ropeDims;
    m_tokens = std::int64_t(batch.size());
    const int pairs = m_dims / 2;
    m_cos.resize(batch.size() * std::size_t(pairs));
    m_sin.resize(batch.size() * std::size_t(pairs));
    for (std::size_t t = 0; t < batch.size(); ++t) {
        int section = 0, sectionEnd = config.ropeSections[0];
        for (int i = 0; i < pairs; ++i) {
            int component = 0;
            if (config.multimodalRope) {
                while (i >= sectionEnd && section < 3)
                    sectionEnd += config.ropeSections[std::size_t(++section)];
                component = section;
            }
            const double angle = double(batch[t].position[std::size_t(component)]) *
                                 std::pow(double(config.ropeBase), -2.0 * i / double(m_dims));
            m_cos[t * std::size_t(pairs) + std::size_t(i)] = float(std::cos(angle));
            m_sin[t * std::size_t(pairs) + std::size_t(i)] = float(std::sin(angle));
        }
    }
}

void RopeTables::apply(float* x, int heads, int headDim, std::int64_t begin,
                       std::int64_t end) const {
    const std::int64_t pairs = m_dims / 2, stride = std::int64_t(heads) * headDim;
    for (std::int64_t t = begin; t < end; ++t) {
        kernels::ropeNeox(x + t * stride, heads, headDim, m_dims, m_cos.data() + t * pairs,
                          m_sin.data() + t * pairs);
    }
}

void RopeTables::apply(float* x, int heads, int headDim, ThreadPool& pool) const {
    parallelItems(
        pool, m_tokens, std::int64_t(heads) * headDim,
        [&](std::int64_t begin, std::int64_t end) { apply(x, heads, headDim, begin, end); });
}

}  // namespace iris::inference
