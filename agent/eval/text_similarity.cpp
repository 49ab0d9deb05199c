#include "agent/eval/text_similarity.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "base/utf8.h"

namespace iris::agent::eval {
namespace {

// difflib.SequenceMatcher with isjunk=None and autojunk=True, over any sequence of hashable
// elements. Only the matched-element count is needed for ratio().
template <class Seq>
class SequenceMatcher {
public:
    using Elem = typename Seq::value_type;

    SequenceMatcher(const Seq& a, const Seq& b) : m_a(a), m_b(b) {
        for (size_t j = 0; j < b.size(); ++j)
            m_b2j[b[j]].push_back(j);
        // autojunk: in a b of 200+ elements, elements making up more than 1% + 1 are "popular" and
        // never start a match (they can still extend one, as in difflib).
        const size_t n = b.size();
        if (n >= 200) {
            const size_t ntest = n / 100 + 1;
            for (auto it = m_b2j.begin(); it != m_b2j.end();) {
                if (it->second.size() > ntest) {
                    it = m_b2j.erase(it);
                } else {
                    ++it;
                }
            }
        }
    }

    size_t matchedElements() const {
        size_t matches = 0;
        std::vector<std::tuple<size_t, size_t, size_t, size_t>> queue{
            {0, m_a.size(), 0, m_b.size()}};
        while (!queue.empty()) {
            auto [alo, ahi, blo, bhi] = queue.back();
            queue.pop_back();
            auto [i, j, k] = longestMatch(alo, ahi, blo, bhi);
            if (k == 0) continue;
            matches += k;
            if (alo < i && blo < j) queue.emplace_back(alo, i, blo, j);
            if (i + k < ahi && j + k < bhi) queue.emplace_back(i + k, ahi, j + k, bhi);
        }
        return matches;
    }

private:
    std::tuple<size_t, size_t, size_t> longestMatch(size_t alo, size_t ahi, size_t blo,
                                                    size_t bhi) const {
        size_t besti = alo, bestj = blo, bestsize = 0;
        std::unordered_map<size_t, size_t> j2len, newj2len;
        static const std::vector<size_t> kNothing;
        for (size_t i = alo; i < ahi; ++i) {
            newj2len.clear();
            auto found = m_b2j.find(m_a[i]);
            const auto& js = found == m_b2j.end() ? kNothing : found->second;
            for (size_t j : js) {
                if (j < blo) continue;
                if (j >= bhi) break;
                size_t prev = 0;
                if (j > 0) {
                    auto p = j2len.find(j - 1);
                    if (p != j2len.end()) prev = p->second;
                }
                const size_t k = prev + 1;
                newj2len[j] = k;
                if (k > bestsize) {
                    besti = i + 1 - k;
                    bestj = j + 1 - k;
                    bestsize = k;
                }
            }
            std::swap(j2len, newj2len);
        }
        // Extend over equal elements on both ends (popular ones included; there is no junk).
        while (besti > alo && bestj > blo && m_a[besti - 1] == m_b[bestj - 1]) {
            --besti;
            --bestj;
            ++bestsize;
        }
        while (besti + bestsize < ahi && bestj + bestsize < bhi &&
               m_a[besti + bestsize] == m_b[bestj + bestsize]) {
            ++bestsize;
        }
        return {besti, bestj, bestsize};
    }

    const Seq& m_a;
    const Seq& m_b;
    std::unordered_map<Elem, std::vector<size_t>> m_b2j;
};

template <class Seq>
double ratioOf(const Seq& a, const Seq& b) {
    const size_t total = a.size() + b.size();
    if (total == 0) return 1.0;
    const size_t m = SequenceMatcher<Seq>(a, b).matchedElements();
    return 2.0 * static_cast<double>(m) / static_cast<double>(total);
}

}  // namespace


double sequenceMatcherRatio(std::string_view a, std::string_view b) {
    return ratioOf(utf8::decodeLossy(a), utf8::decodeLossy(b));
}

double sequenceMatcherRatio(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    return ratioOf(a, b);
}

double fuzzRatio(std::string_view a, std::string_view b) {
    const std::u32string x = utf8::decodeLossy(a), y = utf8::decodeLossy(b);
    const size_t total = x.size() + y.size();
    if (total == 0) return 1.0;
    // Longest common subsequence, two rows.
    std::vector<size_t> prev(y.size() + 1, 0), cur(y.size() + 1, 0);
    for (size_t i = 1; i <= x.size(); ++i) {
        for (size_t j = 1; j <= y.size(); ++j) {
            cur[j] = x[i - 1] == y[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
        }
        std::swap(prev, cur);
    }
    return 2.0 * static_cast<double>(prev[y.size()]) / static_cast<double>(total);
}

}  // namespace iris::agent::eval
