#pragma once
// The string similarities OSWorld and Design2Code score with, on Unicode code points of UTF-8 text
// (as Python compares str): difflib.SequenceMatcher(None, a, b).ratio() with its autojunk rule,
// and rapidfuzz.fuzz.ratio / 100 (normalised Indel similarity).
#include <string>
#include <string_view>
#include <vector>

namespace iris::agent::eval {

// difflib.SequenceMatcher(None, a, b).ratio(): 2 M / (|a| + |b|), M the matched elements of
// difflib's longest-match recursion (autojunk on for sequences of 200+ elements); 1 when both
// empty.
double sequenceMatcherRatio(std::string_view a, std::string_view b);
// The same over lists of lines (difflib on lists of str, as diff_text_file does).
double sequenceMatcherRatio(const std::vector<std::string>& a, const std::vector<std::string>& b);

// rapidfuzz.fuzz.ratio(a, b) / 100 = 2 LCS / (|a| + |b|); 1 when both are empty.
double fuzzRatio(std::string_view a, std::string_view b);

}  // namespace iris::agent::eval
