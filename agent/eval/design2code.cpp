#include "agent/eval/design2code.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <tuple>
#include <unordered_map>

#include "agent/eval/text_similarity.h"

namespace iris::agent::eval {
namespace {

constexpr double kMergeGain = 0.05;     // a merge must lower the mean cost by more than this
constexpr double kContextBonus = 0.1;   // weight of the neighbours' costs
constexpr int kContextWindow = 1;       // neighbours within this many rows and columns
constexpr double kMinSimilarity = 0.5;  // matched pairs below this text ratio are dropped
// Each merge attempt runs one assignment (cubic); beyond this many blocks on a side the greedy
// merge step is skipped so that evaluating a long page stays in the milliseconds.
constexpr size_t kMaxMergeBlocks = 64;

struct Block {
    std::string text;
    double x0, y0, x1, y1;  // normalised to the page, [0, 1]
    double r, g, b;
    double area() const { return std::max(0.0, x1 - x0) * std::max(0.0, y1 - y0); }
};

std::vector<Block> normalised(const PageTextBlocks& page) {
    const double w = page.pageWidth > 0 ? page.pageWidth : 1;
    const double h = page.pageHeight > 0 ? page.pageHeight : 1;
    // Blocks with identical boxes are one block (Design2Code merges them the same way).
    std::vector<Block> out;
    std::map<std::tuple<double, double, double, double>, size_t> byBox;
    std::vector<int> counts;
    for (const auto& t : page.blocks) {
        Block b{t.text,      t.x / w,     t.y / h,    (t.x + t.width) / w, (t.y + t.height) / h,
                double(t.r), double(t.g), double(t.b)};
        auto key = std::make_tuple(b.x0, b.y0, b.x1, b.y1);
        auto it = byBox.find(key);
        if (it == byBox.end()) {
            byBox.emplace(key, out.size());
            out.push_back(b);
            counts.push_back(1);
            continue;
        }
        Block& m = out[it->second];
        const double n = counts[it->second]++;
        m.text += " " + b.text;
        m.r = (m.r * n + b.r) / (n + 1);
        m.g = (m.g * n + b.g) / (n + 1);
        m.b = (m.b * n + b.b) / (n + 1);
    }
    return out;
}

Block mergedPair(const Block& a, const Block& b) {
    Block m = a;
    m.text = a.text + " " + b.text;
    m.x0 = std::min(a.x0, b.x0);
    m.y0 = std::min(a.y0, b.y0);
    m.x1 = std::max(a.x1, b.x1);
    m.y1 = std::max(a.y1, b.y1);
    m.r = (a.r + b.r) / 2;
    m.g = (a.g + b.g) / 2;
    m.b = (a.b + b.b) / 2;
    return m;
}

// Text ratios by pair: the greedy merge step asks for the same pairs many times over.
class RatioCache {
public:
    double operator()(const std::string& a, const std::string& b) {
        std::string key;
        key.reserve(a.size() + b.size() + 1);
        key.append(a).push_back('\0');
        key.append(b);
        auto it = m_cache.find(key);
        if (it != m_cache.end()) return it->second;
        const double r = sequenceMatcherRatio(a, b);
        m_cache.emplace(std::move(key), r);
        return r;
    }

private:
    std::unordered_map<std::string, double> m_cache;
};

std::vector<double> costMatrix(const std::vector<Block>& a, const std::vector<Block>& b,
                               RatioCache& ratio) {
    std::vector<double> cost(a.size() * b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        for (size_t j = 0; j < b.size(); ++j)
            cost[i * b.size() + j] = -ratio(a[i].text, b[j].text);
    }
    return cost;
}

// Pairs that already look alike get a bonus from their best-matching neighbours, so that runs
// of similar blocks are assigned in order.
std::vector<double> withContext(const std::vector<double>& cost, int rows, int cols) {
    std::vector<double> adjusted = cost;
    for (int i = 0; i < rows; ++i) {
        for (int j = 0; j < cols; ++j) {
            const double c = cost[size_t(i) * size_t(cols) + size_t(j)];
            if (c >= -kMinSimilarity) continue;
            std::vector<double> near;
            for (int di = -kContextWindow; di <= kContextWindow; ++di) {
                for (int dj = -kContextWindow; dj <= kContextWindow; ++dj) {
                    const int ii = i + di, jj = j + dj;
                    if ((di == 0 && dj == 0) || ii < 0 || jj < 0 || ii >= rows || jj >= cols)
                        continue;
                    near.push_back(cost[size_t(ii) * size_t(cols) + size_t(jj)]);
                }
            }
            std::sort(near.begin(), near.end());
            double bonus = 0;
            for (size_t k = 0; k < near.size() && k < size_t(2 * kContextWindow); ++k)
                bonus += near[k];
            adjusted[size_t(i) * size_t(cols) + size_t(j)] += kContextBonus * bonus;
        }
    }
    return adjusted;
}

struct Assignment {
    std::vector<int> match;  // per a-block: b index or -1
    double meanCost = 0;     // mean raw cost over assigned pairs
};

Assignment assign(const std::vector<Block>& a, const std::vector<Block>& b, RatioCache& ratio) {
    Assignment out;
    out.match.assign(a.size(), -1);
    if (a.empty() || b.empty()) return out;
    const int rows = int(a.size()), cols = int(b.size());
    const std::vector<double> cost = costMatrix(a, b, ratio);
    out.match = hungarianAssign(withContext(cost, rows, cols), rows, cols);
    double sum = 0;
    int n = 0;
    for (int i = 0; i < rows; ++i) {
        if (out.match[size_t(i)] < 0) continue;
        sum += cost[size_t(i) * size_t(cols) + size_t(out.match[size_t(i)])];
        ++n;
    }
    out.meanCost = n > 0 ? sum / n : 0;
    return out;
}

// Merges the adjacent pair of `side` that lowers the mean cost most (by more than kMergeGain).
bool mergeBest(std::vector<Block>& side, const std::vector<Block>& other, bool sideIsA,
               RatioCache& ratio) {
    if (side.size() < 2 || side.size() > kMaxMergeBlocks || other.size() > kMaxMergeBlocks)
        return false;
    const double current =
        sideIsA ? assign(side, other, ratio).meanCost : assign(other, side, ratio).meanCost;
    double bestGain = kMergeGain;
    size_t best = side.size();
    for (size_t i = 0; i + 1 < side.size(); ++i) {
        std::vector<Block> trial;
        trial.reserve(side.size() - 1);
        trial.insert(trial.end(), side.begin(), side.begin() + long(i));
        trial.push_back(mergedPair(side[i], side[i + 1]));
        trial.insert(trial.end(), side.begin() + long(i) + 2, side.end());
        const double c =
            sideIsA ? assign(trial, other, ratio).meanCost : assign(other, trial, ratio).meanCost;
        if (current - c > bestGain) {
            bestGain = current - c;
            best = i;
        }
    }
    if (best == side.size()) return false;
    side[best] = mergedPair(side[best], side[best + 1]);
    side.erase(side.begin() + long(best) + 1);
    return true;
}

double deg2rad(double d) {
    return d * std::numbers::pi / 180.0;
}
double rad2deg(double r) {
    return r * 180.0 / std::numbers::pi;
}

}  // namespace

std::array<double, 3> srgbToLab(int r, int g, int b) {
    auto linear = [](int c) {
        const double v = std::clamp(c, 0, 255) / 255.0;
        return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
    };
    const double R = linear(r), G = linear(g), B = linear(b);
    const double X = 0.4124564 * R + 0.3575761 * G + 0.1804375 * B;
    const double Y = 0.2126729 * R + 0.7151522 * G + 0.0721750 * B;
    const double Z = 0.0193339 * R + 0.1191920 * G + 0.9503041 * B;
    constexpr double kXn = 0.95047, kYn = 1.0, kZn = 1.08883;  // D65 white
    auto f = [](double t) {
        constexpr double d = 6.0 / 29.0;
        return t > d * d * d ? std::cbrt(t) : t / (3 * d * d) + 4.0 / 29.0;
    };
    const double fx = f(X / kXn), fy = f(Y / kYn), fz = f(Z / kZn);
    return {116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)};
}

double ciede2000(const std::array<double, 3>& lab1, const std::array<double, 3>& lab2) {
    const double L1 = lab1[0], a1 = lab1[1], b1 = lab1[2];
    const double L2 = lab2[0], a2 = lab2[1], b2 = lab2[2];
    const double C1 = std::hypot(a1, b1), C2 = std::hypot(a2, b2);
    const double Cbar = (C1 + C2) / 2;
    const double Cbar7 = std::pow(Cbar, 7);
    const double G = 0.5 * (1 - std::sqrt(Cbar7 / (Cbar7 + std::pow(25.0, 7))));
    const double a1p = (1 + G) * a1, a2p = (1 + G) * a2;
    const double C1p = std::hypot(a1p, b1), C2p = std::hypot(a2p, b2);
    auto hue = [](double b, double ap) {
        if (b == 0 && ap == 0) return 0.0;
        double h = rad2deg(std::atan2(b, ap));
        return h < 0 ? h + 360 : h;
    };
    const double h1p = hue(b1, a1p), h2p = hue(b2, a2p);
    const double dLp = L2 - L1;
    const double dCp = C2p - C1p;
    double dhp = 0;
    if (C1p * C2p != 0) {
        dhp = h2p - h1p;
        if (dhp > 180) dhp -= 360;
        if (dhp < -180) dhp += 360;
    }
    const double dHp = 2 * std::sqrt(C1p * C2p) * std::sin(deg2rad(dhp / 2));
    const double Lbarp = (L1 + L2) / 2;
    const double Cbarp = (C1p + C2p) / 2;
    double hbarp = h1p + h2p;
    if (C1p * C2p != 0) {
        if (std::abs(h1p - h2p) <= 180) {
            hbarp = (h1p + h2p) / 2;
        } else if (h1p + h2p < 360) {
            hbarp = (h1p + h2p + 360) / 2;
        } else {
            hbarp = (h1p + h2p - 360) / 2;
        }
    }
    const double T = 1 - 0.17 * std::cos(deg2rad(hbarp - 30)) +
                     0.24 * std::cos(deg2rad(2 * hbarp)) + 0.32 * std::cos(deg2rad(3 * hbarp + 6)) -
                     0.20 * std::cos(deg2rad(4 * hbarp - 63));
    const double dTheta = 30 * std::exp(-std::pow((hbarp - 275) / 25, 2));
    const double Cbarp7 = std::pow(Cbarp, 7);
    const double Rc = 2 * std::sqrt(Cbarp7 / (Cbarp7 + std::pow(25.0, 7)));
    const double Lm = (Lbarp - 50) * (Lbarp - 50);
    const double Sl = 1 + 0.015 * Lm / std::sqrt(20 + Lm);
    const double Sc = 1 + 0.045 * Cbarp;
    const double Sh = 1 + 0.015 * Cbarp * T;
    const double Rt = -std::sin(deg2rad(2 * dTheta)) * Rc;
    const double l = dLp / Sl, c = dCp / Sc, h = dHp / Sh;
    return std::sqrt(l * l + c * c + h * h + Rt * c * h);
}

std::vector<int> hungarianAssign(const std::vector<double>& cost, int rows, int cols) {
    std::vector<int> result(size_t(std::max(rows, 0)), -1);
    if (rows <= 0 || cols <= 0) return result;
    // The potentials method needs rows <= cols; solve the transpose otherwise.
    const bool transposed = rows > cols;
    const int n = transposed ? cols : rows;
    const int m = transposed ? rows : cols;
    auto at = [&](int i, int j) {  // 1-based, in the (n x m) orientation
        return transposed ? cost[size_t(j - 1) * size_t(cols) + size_t(i - 1)]
                          : cost[size_t(i - 1) * size_t(cols) + size_t(j - 1)];
    };
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> u(size_t(n) + 1, 0), v(size_t(m) + 1, 0);
    std::vector<int> p(size_t(m) + 1, 0), way(size_t(m) + 1, 0);
    for (int i = 1; i <= n; ++i) {
        p[0] = i;
        int j0 = 0;
        std::vector<double> minv(size_t(m) + 1, inf);
        std::vector<char> used(size_t(m) + 1, 0);
        do {
            used[size_t(j0)] = 1;
            const int i0 = p[size_t(j0)];
            double delta = inf;
            int j1 = 0;
            for (int j = 1; j <= m; ++j) {
                if (used[size_t(j)]) continue;
                const double cur = at(i0, j) - u[size_t(i0)] - v[size_t(j)];
                if (cur < minv[size_t(j)]) {
                    minv[size_t(j)] = cur;
                    way[size_t(j)] = j0;
                }
                if (minv[size_t(j)] < delta) {
                    delta = minv[size_t(j)];
                    j1 = j;
                }
            }
            for (int j = 0; j <= m; ++j) {
                if (used[size_t(j)]) {
                    u[size_t(p[size_t(j)])] += delta;
                    v[size_t(j)] -= delta;
                } else {
                    minv[size_t(j)] -= delta;
                }
            }
            j0 = j1;
        } while (p[size_t(j0)] != 0);
        do {
            const int j1 = way[size_t(j0)];
            p[size_t(j0)] = p[size_t(j1)];
            j0 = j1;
        } while (j0 != 0);
    }
    for (int j = 1; j <= m; ++j) {
        if (p[size_t(j)] == 0) continue;
        if (transposed) {
            result[size_t(j - 1)] = p[size_t(j)] - 1;
        } else {
            result[size_t(p[size_t(j)] - 1)] = j - 1;
        }
    }
    return result;
}

Design2CodeScores design2codeScores(const PageTextBlocks& candidate,
                                    const PageTextBlocks& reference) {
    std::vector<Block> a = normalised(candidate);
    std::vector<Block> b = normalised(reference);
    RatioCache ratio;
    for (bool changed = true; changed;) {
        const bool mergedA = mergeBest(a, b, true, ratio);
        const bool mergedB = mergeBest(b, a, false, ratio);
        changed = mergedA || mergedB;
    }
    const Assignment assignment = assign(a, b, ratio);

    Design2CodeScores s;
    std::vector<char> bMatched(b.size(), 0);
    double matchedArea = 0, text = 0, position = 0, color = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const int j = assignment.match[i];
        if (j < 0) continue;
        const Block& p = a[i];
        const Block& q = b[size_t(j)];
        const double r = ratio(p.text, q.text);
        if (r < kMinSimilarity) continue;
        bMatched[size_t(j)] = 1;
        ++s.matched;
        matchedArea += p.area() + q.area();
        text += r;
        const double dx = std::abs((p.x0 + p.x1) / 2 - (q.x0 + q.x1) / 2);
        const double dy = std::abs((p.y0 + p.y1) / 2 - (q.y0 + q.y1) / 2);
        position += 1 - std::max(dx, dy);
        const double de = ciede2000(
            srgbToLab(int(std::lround(p.r)), int(std::lround(p.g)), int(std::lround(p.b))),
            srgbToLab(int(std::lround(q.r)), int(std::lround(q.g)), int(std::lround(q.b))));
        color += std::max(0.0, 1 - de / 100);
    }
    double unmatchedArea = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const int j = assignment.match[i];
        const bool kept = j >= 0 && bMatched[size_t(j)];
        if (!kept) {
            unmatchedArea += a[i].area();
            ++s.unmatchedCandidate;
        }
    }
    for (size_t j = 0; j < b.size(); ++j) {
        if (!bMatched[j]) {
            unmatchedArea += b[j].area();
            ++s.unmatchedReference;
        }
    }
    if (s.matched == 0) return s;
    const double n = s.matched;
    const double total = matchedArea + unmatchedArea;
    s.block = total > 0 ? matchedArea / total : 0;
    s.text = text / n;
    s.position = position / n;
    s.color = color / n;
    s.overall = (s.block + s.text + s.position + s.color) / 4;
    return s;
}

}  // namespace iris::agent::eval
