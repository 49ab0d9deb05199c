#pragma once
// Line diffs in GNU `diff -u` form, for revision records and for prompts that show the model what
// changed. Lines keep their terminator, so a missing final newline is a change of its own and is
// marked "\ No newline at end of file" as diff(1) does; the output applies with patch(1).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace iris::agent {

enum class LineOp { Keep, Delete, Insert };

struct LineEdit {
    LineOp op = LineOp::Keep;
    std::size_t oldLine = 0;  // 0-based index into the old lines (Keep, Delete)
    std::size_t newLine = 0;  // 0-based index into the new lines (Keep, Insert)
};

// Splits after every '\n'; a final line without one is kept as is. "" has no lines. The views
// point into `text`, which must outlive them.
std::vector<std::string_view> splitLines(std::string_view text);

// A shortest edit script (Myers 1986) from `oldLines` to `newLines`, deletions before insertions
// within each changed block. Past kMaxEditDistance differing lines the middle that is still
// unmatched is replaced wholesale: still a correct script, no longer a shortest one, and it keeps
// memory bounded (the search stores O(D^2) integers).
inline constexpr std::size_t kMaxEditDistance = 2000;
std::vector<LineEdit> diffLines(const std::vector<std::string_view>& oldLines,
                                const std::vector<std::string_view>& newLines);

// The unified diff of `before` → `after` with `context` lines around each change, headed by
// "--- <oldLabel>" and "+++ <newLabel>" (no timestamps). Empty when the texts are equal.
std::string unifiedDiff(std::string_view before, std::string_view after, std::string_view oldLabel,
                        std::string_view newLabel, int context = 3);

}  // namespace iris::agent
