#include "agent/workspace/line_diff.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace iris::agent {
namespace {

// Interns lines as integers so that the search compares ints, not strings.
std::vector<int> internLines(const std::vector<std::string_view>& lines,
                             std::unordered_map<std::string_view, int>& ids) {
    std::vector<int> out;
    out.reserve(lines.size());
    for (std::string_view line : lines) {
        auto [it, inserted] = ids.try_emplace(line, static_cast<int>(ids.size()));
        out.push_back(it->second);
    }
    return out;
}

// Myers' greedy forward search over a[0, n) and b[0, m) with the V array of every round kept for
// the backtrack. Returns false when the distance exceeds kMaxEditDistance.
bool myers(const int* a, int n, const int* b, int m, std::vector<LineEdit>& reversed,
           std::size_t aBase, std::size_t bBase) {
    const int maxD = static_cast<int>(std::min<std::size_t>(
        static_cast<std::size_t>(n) + static_cast<std::size_t>(m), kMaxEditDistance));
    const int offset = maxD + 1;
    std::vector<int> v(static_cast<std::size_t>(2 * maxD + 3), 0);
    auto at = [&](std::vector<int>& vec, int k) -> int& {
        return vec[static_cast<std::size_t>(k + offset)];
    };
    std::vector<std::vector<int>> trace;  // trace[d][k + d]: furthest x on diagonal k after round d
    int finalD = -1;
    for (int d = 0; d <= maxD && finalD < 0; ++d) {
        for (int k = -d; k <= d; k += 2) {
            int x = (k == -d || (k != d && at(v, k - 1) < at(v, k + 1))) ? at(v, k + 1)
                                                                         : at(v, k - 1) + 1;
            int y = x - k;
            while (x < n && y < m && a[x] == b[y]) {
                ++x;
                ++y;
            }
            at(v, k) = x;
            if (x >= n && y >= m) {
                finalD = d;
                break;
            }
        }
        trace.emplace_back(v.begin() + (offset - d), v.begin() + (offset + d + 1));
    }
    if (finalD < 0) return false;

    auto push = [&](LineOp op, int x, int y) {
        reversed.push_back(
            {op, aBase + static_cast<std::size_t>(x), bBase + static_cast<std::size_t>(y)});
    };
    int x = n;
    int y = m;
    for (int d = finalD; d > 0; --d) {
        const std::vector<int>& prev = trace[static_cast<std::size_t>(d - 1)];
        auto prevAt = [&](int k) { return prev[static_cast<std::size_t>(k + d - 1)]; };
        const int k = x - y;
        const int prevK = (k == -d || (k != d && prevAt(k - 1) < prevAt(k + 1))) ? k + 1 : k - 1;
        const int prevX = prevAt(prevK);
        const int prevY = prevX - prevK;
        while (x > prevX && y > prevY) {
            --x;
            --y;
            push(LineOp::Keep, x, y);
        }
        if (x == prevX) {
            --y;
            push(LineOp::Insert, x, y);
        } else {
            --x;
            push(LineOp::Delete, x, y);
        }
    }
    while (x > 0 && y > 0) {
        --x;
        --y;
        push(LineOp::Keep, x, y);
    }
    return true;
}

// Within each run of changes, deletions first: the order diff(1) prints and people expect.
void orderChangeRuns(std::vector<LineEdit>& edits) {
    std::size_t i = 0;
    while (i < edits.size()) {
        if (edits[i].op == LineOp::Keep) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < edits.size() && edits[j].op != LineOp::Keep)
            ++j;
        std::stable_partition(edits.begin() + static_cast<std::ptrdiff_t>(i),
                              edits.begin() + static_cast<std::ptrdiff_t>(j),
                              [](const LineEdit& e) { return e.op == LineOp::Delete; });
        i = j;
    }
}

// "l,n" with diff(1)'s conventions: ",1" is left out and an empty range names the line before it.
std::string hunkRange(std::size_t start, std::size_t count) {
    if (count == 0) return std::to_string(start) + ",0";
    if (count == 1) return std::to_string(start + 1);
    return std::to_string(start + 1) + "," + std::to_string(count);
}

void appendLine(std::string& out, char marker, std::string_view line) {
    out += marker;
    out += line;
    if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

}  // namespace

std::vector<std::string_view> splitLines(std::string_view text) {
    std::vector<std::string_view> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        end = end == std::string_view::npos ? text.size() : end + 1;
        lines.push_back(text.substr(start, end - start));
        start = end;
    }
    return lines;
}

std::vector<LineEdit> diffLines(const std::vector<std::string_view>& oldLines,
                                const std::vector<std::string_view>& newLines) {
    std::unordered_map<std::string_view, int> ids;
    const std::vector<int> a = internLines(oldLines, ids);
    const std::vector<int> b = internLines(newLines, ids);

    std::size_t prefix = 0;
    while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix])
        ++prefix;
    std::size_t suffix = 0;
    while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
           a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) {
        ++suffix;
    }
    const std::size_t n = a.size() - prefix - suffix;
    const std::size_t m = b.size() - prefix - suffix;

    std::vector<LineEdit> edits;
    edits.reserve(a.size() + m);
    for (std::size_t i = 0; i < prefix; ++i)
        edits.push_back({LineOp::Keep, i, i});

    std::vector<LineEdit> middle;
    if (!myers(a.data() + prefix, static_cast<int>(n), b.data() + prefix, static_cast<int>(m),
               middle, prefix, prefix)) {
        middle.clear();
        for (std::size_t i = m; i-- > 0;)
            middle.push_back({LineOp::Insert, prefix + n, prefix + i});
        for (std::size_t i = n; i-- > 0;)
            middle.push_back({LineOp::Delete, prefix + i, prefix});
    }
    edits.insert(edits.end(), middle.rbegin(), middle.rend());

    for (std::size_t i = 0; i < suffix; ++i) {
        edits.push_back({LineOp::Keep, prefix + n + i, prefix + m + i});
    }
    orderChangeRuns(edits);
    return edits;
}

std::string unifiedDiff(std::string_view before, std::string_view after, std::string_view oldLabel,
                        std::string_view newLabel, int context) {
    if (before == after) return {};
    const std::vector<std::string_view> oldLines = splitLines(before);
    const std::vector<std::string_view> newLines = splitLines(after);
    const std::vector<LineEdit> edits = diffLines(oldLines, newLines);
    const std::size_t ctx = static_cast<std::size_t>(std::max(context, 0));

    std::string out;
    out.append("--- ").append(oldLabel).append("\n+++ ").append(newLabel).append("\n");

    // Old/new line counts consumed before each edit, to number the hunks.
    std::vector<std::size_t> oldPos(edits.size() + 1, 0);
    std::vector<std::size_t> newPos(edits.size() + 1, 0);
    for (std::size_t i = 0; i < edits.size(); ++i) {
        oldPos[i + 1] = oldPos[i] + (edits[i].op != LineOp::Insert ? 1 : 0);
        newPos[i + 1] = newPos[i] + (edits[i].op != LineOp::Delete ? 1 : 0);
    }

    std::size_t i = 0;
    while (i < edits.size()) {
        while (i < edits.size() && edits[i].op == LineOp::Keep)
            ++i;
        if (i == edits.size()) break;
        // Extend the hunk over changes whose gap of unchanged lines is at most 2 * context.
        const std::size_t first = i;
        std::size_t last = i;  // last change in the hunk
        std::size_t j = i;
        while (j < edits.size()) {
            if (edits[j].op != LineOp::Keep) {
                last = j;
                ++j;
                continue;
            }
            std::size_t gapEnd = j;
            while (gapEnd < edits.size() && edits[gapEnd].op == LineOp::Keep)
                ++gapEnd;
            if (gapEnd == edits.size() || gapEnd - j > 2 * ctx) break;
            j = gapEnd;
        }
        const std::size_t begin = first >= ctx ? first - ctx : 0;
        const std::size_t end = std::min(edits.size(), last + 1 + ctx);

        out.append("@@ -")
            .append(hunkRange(oldPos[begin], oldPos[end] - oldPos[begin]))
            .append(" +")
            .append(hunkRange(newPos[begin], newPos[end] - newPos[begin]))
            .append(" @@\n");
        for (std::size_t e = begin; e < end; ++e) {
            const LineEdit& edit = edits[e];
            switch (edit.op) {
                case LineOp::Keep:
                    appendLine(out, ' ', oldLines[edit.oldLine]);
                    break;
                case LineOp::Delete:
                    appendLine(out, '-', oldLines[edit.oldLine]);
                    break;
                case LineOp::Insert:
                    appendLine(out, '+', newLines[edit.newLine]);
                    break;
            }
        }
        i = end;
    }
    return out;
}

}  // namespace iris::agent
