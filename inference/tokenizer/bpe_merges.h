#pragma once
// The merge step of byte-level BPE, over token ids: a word starts as one symbol per byte and the
// adjacent pair with the lowest merge rank is merged (the leftmost among equal ranks) until no
// adjacent pair has a merge. This is the order Hugging Face tokenizers and llama.cpp apply; it
// gives the same result as GPT-2's "merge every occurrence of the best pair" loop. A priority queue
// keyed by (rank, position) makes a word of n bytes cost O(n log n).

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace iris::inference {

inline constexpr std::int32_t kNoToken = -1;

// Working memory of BpeMerges::apply, reused across words to avoid allocating per word.
struct BpeScratch {
    struct Candidate {
        std::int32_t rank;
        std::uint32_t left;  // position of the left symbol; the right one is next[left]
        std::int32_t leftId;
        std::int32_t rightId;
        std::int32_t result;
    };
    std::vector<std::int32_t> next;
    std::vector<std::int32_t> prev;
    std::vector<Candidate> heap;
};

class BpeMerges {
public:
    // Registers `left` + `right` -> `result` with priority `rank` (lower merges first). A pair
    // already registered keeps its first rank, as llama.cpp does; add() then returns false.
    bool add(std::int32_t left, std::int32_t right, std::int32_t result, std::int32_t rank);

    std::size_t size() const { return m_merges.size(); }

    // Merges `symbols` (token ids, one per byte of a word) in place. kNoToken symbols (bytes the
    // vocabulary lacks) take part in no merge and stay where they are.
    void apply(std::vector<std::int32_t>& symbols, BpeScratch& scratch) const;

private:
    struct Merge {
        std::int32_t rank;
        std::int32_t result;
    };

    static std::uint64_t key(std::int32_t left, std::int32_t right) {
        return (std::uint64_t(std::uint32_t(left)) << 32) | std::uint32_t(right);
    }
    const Merge* find(std::int32_t left, std::int32_t right) const;

    std::unordered_map<std::uint64_t, Merge> m_merges;
};

}  // namespace iris::inference
