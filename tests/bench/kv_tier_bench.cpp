// KV tiers on a MiniMax-M3-shaped model (docs/minimax-m3.md 1.1 attention geometry: 64 query
// heads, 4 KV heads of 128, indexer 4 x 128, selection blocks of 128 tokens, top-16, f16 K/V in
// pages of 16; small hidden size and MoE, all layers sparse): greedy decoding at a long context
// with the compute tier (the KV pool) holding 100%, 25% and 5% of the K/V, the rest in the host
// tier (and with --disk, mostly on disk); the paged rows twice, pages copied in place before
// attention and copied on the transfer thread while the model computes ("overlap"). Prints
// tokens/s, its ratio to the fully resident run, and bytes moved between tiers per decoded
// token; tokens per second of CPU time (all threads) too, with its ratio, which a busy machine
// disturbs less than wall time; with overlap, the share of pages copied before the model waited
// for them and the time it waited per token.
//
//   iris_kv_tier_bench [CONTEXT=131072] [TOKENS=16] [THREADS=2] [LAYERS=2] [--disk] [--only P]
//
// The context is not prefilled (O(n^2) in the indexer): its K/V and indexer keys are random
// data written straight into the pool or the tiers, as a restored session's would be. The
// decoded tokens' indexer picks its blocks from that data, so consecutive steps choose nearly
// independent blocks: a worst case for the tiers (a trained model repeats most of its choices).
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>

#include "base/temporary_folder.h"
#include "inference/kv_tiers.h"
#include "inference/models/model.h"
#include "kernels/fp16.h"
#include "tests/inference/models/minimax_m3_reference.h"

namespace {

using namespace iris;
using namespace iris::inference;

constexpr int kPage = 16;

struct Config {
    std::int64_t context = 131072;
    int tokens = 16;
    int threads = 2;
    int layers = 2;
    bool disk = false;
    double only = 0;  // --only P: just this budget (for a profiler), no ratio
};

struct Row {
    double tokensPerSecond = 0;
    // Per second of the process's CPU time (all threads, user and system): steadier than wall
    // time on a machine other jobs share.
    double tokensPerCpuSecond = 0;
    double bytesPerToken = 0;
    double fetchedPerToken = 0;  // units (one page of one layer) brought in
    double diskReadPerToken = 0;
    double behindShare = 0;     // of the pages fetched, copied before the model waited for them
    double waitMsPerToken = 0;  // waiting for (or doing) copies before attention
    std::int64_t residentBytes = 0;
    std::int64_t hostBytes = 0;
    std::int64_t diskBytes = 0;
};

testing::M3Spec benchSpec(int layers) {
    testing::M3Spec s;
    s.vocab = 256;
    s.hidden = 256;
    s.layers = layers;
    s.leadingDense = 0;
    s.ffn = 256;
    s.expertFfn = 64;
    s.experts = 8;
    s.expertsUsed = 2;
    s.heads = 64;
    s.kvHeads = 4;
    s.indexHeads = 4;
    s.headDim = 128;
    s.ropeDims = 64;
    s.indexDim = 128;
    s.topK = 16;
    s.blockSize = 128;
    return s;
}

double cpuSeconds() {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Random data the context's K/V and indexer keys are sliced from.
struct Noise {
    std::vector<std::uint16_t> halves;
    std::vector<float> floats;
    Noise() {
        std::mt19937 rng(3);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        floats.resize(1 << 22);
        halves.resize(floats.size());
        for (std::size_t i = 0; i < floats.size(); ++i) {
            floats[i] = normal(rng);
            halves[i] = kernels::fp32ToFp16(normal(rng));
        }
    }
    std::size_t offset(std::uint64_t key, std::size_t need) const {
        key = key * 0x9E3779B97F4A7C15ull;
        return std::size_t((key >> 17) % (floats.size() - need));
    }
};

// The context's K/V (written into the cache, then with tiers moved out to the host tier) and indexer
// keys.
void fillContext(KvCache& cache, KvTiers* tiers, SequenceId seq, std::int64_t length,
                 const Noise& noise) {
    const KvCacheOptions& o = cache.options();
    const std::size_t part = std::size_t(kPage) * std::size_t(o.kvHeads * o.headDim);
    const std::size_t row = std::size_t(o.kvHeads * o.headDim);
    std::vector<std::uint16_t> unit(2 * part);
    const std::span<const std::int32_t> table = cache.blockTable(seq);
    for (std::size_t page = 0; page < table.size(); ++page) {
        for (int l = o.indexerFirstLayer; l < o.layers; ++l) {
            const std::uint64_t key = page * 64 + std::uint64_t(l);
            std::memcpy(unit.data(), noise.halves.data() + noise.offset(key, unit.size()),
                        unit.size() * 2);
            // Written row by row, as a prefill would; with tiers the unit then leaves the
            // compute tier for the host tier.
            const std::int64_t first = std::int64_t(page) * kPage,
                               end = std::min<std::int64_t>(length, first + kPage);
            for (std::int64_t p = first; p < end; ++p) {
                const std::size_t r = std::size_t(p - first) * row;
                std::memcpy(cache.keySlot(l, seq, p), unit.data() + r, row * 2);
                std::memcpy(cache.valueSlot(l, seq, p), unit.data() + part + r, row * 2);
            }
            if (tiers != nullptr) tiers->adopt(l, table[page], std::as_bytes(std::span(unit)));
            for (std::int64_t p = first; p < end; ++p) {
                std::memcpy(cache.indexKeySlot(l, seq, p),
                            noise.floats.data() + noise.offset(key * 131 + std::uint64_t(p), std::size_t(o.indexerDim)),
                            std::size_t(o.indexerDim) * 4);
            }
        }
    }
}

// Decodes cfg.tokens greedy tokens (after two unmeasured ones) at the end of a context of
// cfg.context tokens, with the compute tier at `percent` of the K/V (100: no tiers).
Result<Row> run(Model& model, const Config& cfg, double percent, bool overlap,
                const Noise& noise, const std::string& diskFolder) {
    constexpr int kWarmup = 2;
    const std::int64_t pages = cfg.context / kPage + 1;
    Result<KvCache> cache = KvCache::create(model.kvCacheOptions(pages, kPage,
                                                                 kernels::TensorType::F16));
    if (!cache) return cache.status();
    const KvCacheOptions& o = cache->options();
    const std::int64_t unitBytes = 2 * std::int64_t(kPage) * o.kvHeads * o.headDim * 2;
    const std::int64_t kvBytes = pages * (o.layers - o.indexerFirstLayer) * unitBytes;
    ThreadPool pool(cfg.threads);
    std::unique_ptr<KvTiers> tiers;
    if (percent < 100) {
        KvTierOptions t;
        t.computeBytes = std::int64_t(double(kvBytes) * percent / 100);
        t.hostBytes = cfg.disk ? kvBytes / 20 : kvBytes;
        t.diskBytes = cfg.disk ? kvBytes + (64 << 20) : 0;
        t.diskFolder = diskFolder;
        t.overlap = overlap;
        Result<std::unique_ptr<KvTiers>> attached = KvTiers::attach(*cache, t, &pool);
        if (!attached) return attached.status();
        tiers = std::move(*attached);
    }
    const SequenceId seq = cache->newSequence();
    const std::int64_t prefix = cfg.context - cfg.tokens - kWarmup;
    IRIS_RETURN_IF_ERROR(cache->extend(seq, prefix));
    fillContext(*cache, tiers.get(), seq, prefix, noise);

    std::vector<float> logits;
    std::int32_t token = 1;
    KvTierStats before;
    auto start = std::chrono::steady_clock::now();
    double cpuStart = cpuSeconds();
    for (int step = 0; step < kWarmup + cfg.tokens; ++step) {
        if (step == kWarmup) {
            if (tiers != nullptr) before = tiers->stats();
            start = std::chrono::steady_clock::now();
            cpuStart = cpuSeconds();
        }
        const std::int64_t slot = prefix + step;
        IRIS_RETURN_IF_ERROR(cache->extend(seq, slot + 1));
        const auto p = std::int32_t(slot);
        const TokenInput in{token, seq, slot, {p, p, p, 0}, true};
        logits.clear();
        IRIS_RETURN_IF_ERROR(model.forward(std::span(&in, 1), *cache, pool, logits));
        token = std::int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Row row;
    row.tokensPerSecond = cfg.tokens / seconds;
    row.tokensPerCpuSecond = cfg.tokens / (cpuSeconds() - cpuStart);
    row.residentBytes = kvBytes;
    if (tiers != nullptr) {
        const KvTierStats after = tiers->stats();
        row.bytesPerToken = double(after.bytesMoved() - before.bytesMoved()) / cfg.tokens;
        row.fetchedPerToken = double(after.fetched - before.fetched) / cfg.tokens;
        row.diskReadPerToken = double(after.diskBytesRead - before.diskBytesRead) / cfg.tokens;
        if (after.fetched > before.fetched) {
            row.behindShare = double(after.fetchedBehind - before.fetchedBehind) /
                              double(after.fetched - before.fetched);
        }
        row.waitMsPerToken = double(after.waitNanos - before.waitNanos) * 1e-6 / cfg.tokens;
        row.residentBytes = after.residentBytes;
        row.hostBytes = after.hostBytes;
        row.diskBytes = after.diskBytes;
    }
    return row;
}

}  // namespace

int main(int argc, char** argv) {
    Config cfg;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--disk") == 0) {
            cfg.disk = true;
        } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            cfg.only = std::atof(argv[++i]);
        } else {
            positional.emplace_back(argv[i]);
        }
    }
    if (positional.size() > 0) cfg.context = std::atoll(positional[0].c_str());
    if (positional.size() > 1) cfg.tokens = std::atoi(positional[1].c_str());
    if (positional.size() > 2) cfg.threads = std::atoi(positional[2].c_str());
    if (positional.size() > 3) cfg.layers = std::atoi(positional[3].c_str());

    const std::vector<std::byte> bytes = testing::makeM3Model(benchSpec(cfg.layers));
    Result<GgufFile> file = GgufFile::parse(bytes, "m3-bench.gguf");
    if (!file) return std::fprintf(stderr, "%s\n", file.status().message().c_str()), 1;
    Result<std::unique_ptr<Model>> model = createModel(*file);
    if (!model) return std::fprintf(stderr, "%s\n", model.status().message().c_str()), 1;
    Result<TemporaryFolder> folder = TemporaryFolder::create("iris-kv-tier-bench");
    if (!folder) return std::fprintf(stderr, "%s\n", folder.status().message().c_str()), 1;
    const Noise noise;

    std::printf("context %lld tokens, %d sparse layers, %d threads, %d tokens decoded%s\n",
                static_cast<long long>(cfg.context), cfg.layers, cfg.threads, cfg.tokens,
                cfg.disk ? ", host tier 5% of the K/V, the rest on disk" : "");
    std::printf("%9s %8s %12s %10s %8s %10s %8s %14s %12s %14s %8s %10s %10s %10s\n",
                "resident", "copies", "resident MB", "tokens/s", "ratio", "tok/CPU-s", "ratio",
                "moved KB/tok", "fetched/tok", "disk KB/tok", "behind", "wait ms/tok", "host MB",
                "disk MB");
    double full = 0, fullCpu = 0;
    struct Budget {
        double percent;
        bool overlap;
    };
    for (const Budget b : {Budget{100, false}, Budget{25, false}, Budget{25, true},
                           Budget{5, false}, Budget{5, true}}) {
        if (cfg.only > 0 && b.percent != cfg.only) continue;
        Result<Row> row = run(**model, cfg, b.percent, b.overlap, noise, folder->path().string());
        if (!row) return std::fprintf(stderr, "%s\n", row.status().message().c_str()), 1;
        if (b.percent == 100.0) {
            full = row->tokensPerSecond;
            fullCpu = row->tokensPerCpuSecond;
        }
        std::printf("%8.0f%% %8s %12.1f %10.2f %8.2f %10.2f %8.2f %14.1f %12.1f %14.1f %7.0f%% "
                    "%10.1f %10.1f %10.1f\n",
                    b.percent, b.percent == 100 ? "-" : b.overlap ? "overlap" : "in place",
                    double(row->residentBytes) / (1 << 20), row->tokensPerSecond,
                    row->tokensPerSecond / full, row->tokensPerCpuSecond,
                    row->tokensPerCpuSecond / fullCpu, row->bytesPerToken / 1024,
                    row->fetchedPerToken, row->diskReadPerToken / 1024, 100 * row->behindShare,
                    row->waitMsPerToken, double(row->hostBytes) / (1 << 20),
                    double(row->diskBytes) / (1 << 20));
        std::fflush(stdout);
    }
    return 0;
}
