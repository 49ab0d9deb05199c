#include "inference/tokenizer/bpe_merges.h"

#include <algorithm>

namespace iris::inference {

namespace {

// Heap order for std::push_heap/pop_heap (a max-heap): the lowest rank, then the leftmost
// position, comes out first.
bool popsLater(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
}

constexpr std::int32_t kMergedAway = -2;  // a symbol absorbed into its left neighbour

}  // namespace

bool BpeMerges::add(std::int32_t left, std::int32_t right, std::int32_t result, std::int32_t rank) {
    return m_merges.try_emplace(key(left, right), Merge{rank, result}).second;
}

const BpeMerges::Merge* BpeMerges::find(std::int32_t left, std::int32_t right) const {
    if (left < 0 || right < 0) return nullptr;
    const auto it = m_merges.find(key(left, right));
    return it == m_merges.end() ? nullptr : &it->second;
}

void BpeMerges::apply(std::vector<std::int32_t>& symbols, BpeScratch& scratch) const {
    const auto count = static_cast<std::int32_t>(symbols.size());
    if (count < 2) return;

    std::vector<std::int32_t>& next = scratch.next;
    std::vector<std::int32_t>& prev = scratch.prev;
    std::vector<BpeScratch::Candidate>& heap = scratch.heap;
    next.resize(symbols.size());
    prev.resize(symbols.size());
    heap.clear();
    for (std::int32_t i = 0; i < count; ++i) {
        next[std::size_t(i)] = i + 1 < count ? i + 1 : -1;
        prev[std::size_t(i)] = i - 1;
    }

    const auto consider = [&](std::int32_t left) {
        if (left < 0) return;
        const std::int32_t right = next[std::size_t(left)];
        if (right < 0) return;
        const std::int32_t leftId = symbols[std::size_t(left)];
        const std::int32_t rightId = symbols[std::size_t(right)];
        if (const Merge* merge = find(leftId, rightId)) {
            heap.push_back({merge->rank, std::uint32_t(left), leftId, rightId, merge->result});
            std::push_heap(heap.begin(), heap.end(), popsLater);
        }
    };
    for (std::int32_t i = 0; i + 1 < count; ++i)
        consider(i);

    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), popsLater);
        const BpeScratch::Candidate best = heap.back();
        heap.pop_back();

        // A candidate is stale when either side has merged since it was queued: the ids no
        // longer match (ids only ever change by merging, into a longer token).
        const auto left = std::int32_t(best.left);
        const std::int32_t right = next[best.left];
        if (symbols[best.left] != best.leftId || right < 0 ||
            symbols[std::size_t(right)] != best.rightId) {
            continue;
        }
        symbols[best.left] = best.result;
        symbols[std::size_t(right)] = kMergedAway;
        next[best.left] = next[std::size_t(right)];
        if (next[best.left] >= 0) prev[std::size_t(next[best.left])] = left;
        consider(prev[best.left]);
        consider(left);
    }

    std::erase(symbols, kMergedAway);
}

}  // namespace iris::inference
