// The KV disk tier on a real model: a prompt computed once (its blocks saved), then, in a new
// engine and scheduler on the same folder ("after a restart"), the same prompt read back from
// disk. Prints the prefill rate, the read rate, and both times to the first token.
//
//   iris_kv_disk_bench MODEL.gguf [PROMPT_TOKENS=2048] [THREADS=all]
//
// The folder is a fresh temporary one; its files are in the page cache when read back (the
// common case right after they were written); drop caches by hand to measure a cold disk.
#include <cstdio>
#include <cstdlib>
#include <random>

#include "base/clock.h"
#include "base/temporary_folder.h"
#include "inference/scheduler.h"

namespace {

using namespace iris;
using namespace iris::inference;

struct Pass {
    double seconds = 0;  // submit to the first token
    SchedulerStats stats;
};

Result<Pass> runOnce(const char* model, const EngineOptions& options,
                     const KvDiskStoreOptions& disk, const GenerateRequest& request) {
    Result<std::unique_ptr<Engine>> engine = Engine::load(model, options);
    if (!engine) return engine.status();
    SchedulerOptions scheduling;
    scheduling.kvDisk = disk;
    Result<std::unique_ptr<Scheduler>> scheduler = Scheduler::start(std::move(*engine), scheduling);
    if (!scheduler) return scheduler.status();
    const auto start = Clock::now();
    Result<GenerateResult> result = (*scheduler)->generate(request);
    if (!result) return result.status();
    return Pass{secondsSince(start), (*scheduler)->stats()};
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s MODEL.gguf [PROMPT_TOKENS] [THREADS]\n", argv[0]);
        return 2;
    }
    const long tokens = argc > 2 ? std::atol(argv[2]) : 2048;
    EngineOptions options;
    if (argc > 3) options.threads = std::atoi(argv[3]);
    options.contextSize = tokens + 16;
    Result<TemporaryFolder> folder = TemporaryFolder::create("iris_kv_disk_bench");
    if (!folder) {
        std::fprintf(stderr, "%s\n", folder.status().message().c_str());
        return 1;
    }
    KvDiskStoreOptions disk;
    disk.folder = folder->path();
    disk.budgetBytes = std::int64_t(64) << 30;
    disk.alwaysRead = true;  // measure the read path even where recomputing would win
    GenerateRequest request;
    std::mt19937 rng(1);
    for (long i = 0; i < tokens; ++i)
        request.prompt.push_back(std::int32_t(rng() % 1000 + 1000));
    request.maxTokens = 1;
    request.sampling.temperature = 0;
    Result<Pass> computed = runOnce(argv[1], options, disk, request);
    Result<Pass> restored = computed ? runOnce(argv[1], options, disk, request) : computed;
    if (!restored) {
        std::fprintf(stderr, "%s\n", restored.status().message().c_str());
        return 1;
    }
    const KvDiskStats& w = computed->stats.disk;
    const KvDiskStats& r = restored->stats.disk;
    std::printf("prompt %ld tokens, %d threads\n", tokens, options.threads);
    std::printf(
        "computed: %.3f s to the first token, prefill %.0f tokens/s, %lld blocks "
        "written (%.1f MB)\n",
        computed->seconds, w.computeTokensPerSecond, static_cast<long long>(w.writes),
        double(w.bytesWritten) / 1e6);
    std::printf(
        "restored: %.3f s to the first token, %lld tokens read back at %.0f MB/s "
        "(%.0f tokens/s), %lld recomputed\n",
        restored->seconds, static_cast<long long>(r.hitTokens), r.readBytesPerSecond / 1e6,
        r.bytesRead > 0 ? r.readBytesPerSecond * double(r.hitTokens) / double(r.bytesRead) : 0.0,
        static_cast<long long>(restored->stats.forwardTokens));
    return 0;
}
