// iris bench --model F.gguf [-p 512] [-n 128] [--threads N] [--json]
// iris bench --mmproj MM.gguf --image FILE [--repeat R] [--threads N] [--json]
// With --mmproj: the vision tower's encode time for one image (best of R runs after a warm-up),
// the image tokens it produces and the arithmetic rate, from a FLOP count of the tower's matrix
// products and attention for that image's grid.
// Prefill speed (a p-token prompt), decode speed (n tokens generated from an empty context, as
// llama-bench's pp and tg tests), and this machine's memory read bandwidth measured in the same
// run: decoding one token reads every weight once, so bytes-per-token x tokens/s over the bandwidth
// says how close decoding runs to the hardware's limit.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "app/cli/arguments.h"
#include "app/cli/device_option.h"
#include "app/cli/engine_commands.h"
#include "base/clock.h"
#include "base/reserved_memory.h"
#include "inference/engine.h"
#include "inference/vision/image_preprocess.h"
#include "inference/vision/vision_model.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm.h"

namespace iris::app {
namespace {

constexpr OptionSpec kOptions[] = {
    {"model", "m", true, "GGUF model file (this or --mmproj is required)"},
    {"mmproj", "", true, "vision projector GGUF: benchmark its tower on --image"},
    {"image", "", true, "PNG or JPEG file for the vision benchmark"},
    {"repeat", "r", true, "vision benchmark: timed encodes after one warm-up (default 3)"},
    {"image-max-tokens", "", true, "image tokens at most (default 4096)"},
    {"vision-precision", "", true,
     "vision tower products: auto (bf16 where it measures faster than f32), f32 or bf16 (default "
     "auto)"},
    {"prompt-tokens", "p", true, "prompt length for the prefill measurement (default 512)"},
    {"n-gen", "n", true, "tokens to decode (default 128)"},
    {"threads", "t", true, "compute threads (default: all cores)"},
    kDeviceOption,
    {"json", "", false, "print one JSON object instead of text"},
    {"help", "h", false, "show this help"},
};

// Streaming read bandwidth over a buffer far larger than the caches, split across the pool's
// threads, best of three passes. GB/s (10^9 bytes). On huge pages, as the packed weights are
// (LinearRunner::pack): with 4 KiB pages this read 25-30% less here than decode itself did.
// 0 when the buffer cannot be had.
double measureReadBandwidth(inference::ThreadPool& pool) {
    constexpr std::size_t kFloats = std::size_t(64) << 20;  // 256 MiB, 8x the largest L3 here
    Result<ReservedMemory> memory = ReservedMemory::reserve(
        std::int64_t(kFloats * sizeof(float)), ReservedMemory::Pages::Huge);
    if (!memory) return 0;
    auto* buffer = reinterpret_cast<float*>(memory->data());
    pool.parallelFor(std::int64_t(kFloats), 1 << 16, [&](std::int64_t begin, std::int64_t end) {
        std::fill(buffer + begin, buffer + end, 1.0f);  // fault the pages in
    });
    double best = 0;
    for (int pass = 0; pass < 3; ++pass) {
        std::vector<float> sums(std::size_t(pool.threads()) * 16, 0.0f);
        const auto start = Clock::now();
        pool.parallelFor(std::int64_t(kFloats), 1 << 16, [&](std::int64_t begin, std::int64_t end) {
            float acc[16] = {};  // independent accumulators: the loads, not the adds, set the pace
            for (std::int64_t i = begin; i + 16 <= end; i += 16) {
                for (int j = 0; j < 16; ++j)
                    acc[j] += buffer[std::size_t(i + j)];
            }
            const std::size_t slot =
                std::size_t(begin / std::max<std::int64_t>(1, end - begin)) % std::size_t(16);
            sums[slot] += acc[0] + acc[15];
        });
        const double elapsed = secondsSince(start);
        best = std::max(best, double(kFloats * sizeof(float)) / elapsed / 1e9);
        if (sums[0] == -1.0f) std::puts("");  // keeps the sums alive
    }
    return best;
}

// Bytes of weights one decode step reads: every tensor, except that an untied embedding table
// contributes only the one row looked up.
double decodeBytesPerToken(const inference::GgufFile& file, std::int64_t hidden) {
    double bytes = 0;
    const bool tied = file.findTensor("output.weight") == nullptr;
    for (const inference::GgufTensor& t : file.tensors()) {
        if (t.name == "token_embd.weight" && !tied) {
            bytes += double(kernels::rowBytes(t.type, hidden));
        } else {
            bytes += double(t.bytes);
        }
    }
    return bytes;
}

// Multiply-adds x 2 of one encode of a gridH x gridW-patch image by a Qwen2.5-VL tower: patch
// embedding, per block Q/K/V/O and the gated MLP, attention within windows (window layers) or
// over all patches (full layers), then the merger's two matrices.
double visionFlops(const inference::VisionConfig& c, const inference::ImagePatches& image) {
    const double N = double(image.patchCount()), C = double(c.width), I = double(c.ffnSize);
    const double merged = double(image.tokenCount());
    double flops = 2 * N * double(image.patchValues()) * C;
    // Patches per window: windows of (window / patch / merge)^2 merged tokens, partial at edges.
    const std::int64_t side =
        std::max<std::int64_t>(1, c.windowSize / std::max(1, c.patchSize * c.mergeSize));
    const std::int64_t gh = image.gridH / image.mergeSize, gw = image.gridW / image.mergeSize;
    double windowPairs = 0;  // sum over windows of patches^2
    for (std::int64_t y = 0; y < gh; y += side) {
        for (std::int64_t x = 0; x < gw; x += side) {
            const double patches = double(std::min(side, gh - y) * std::min(side, gw - x)) *
                                   double(image.mergeSize * image.mergeSize);
            windowPairs += patches * patches;
        }
    }
    for (std::int64_t b = 0; b < c.blocks; ++b) {
        const bool full = c.fullAttentionPeriod > 0 && (b + 1) % c.fullAttentionPeriod == 0;
        flops += 2 * N * C * C * 4 + 2 * N * C * I * 3;
        flops += 2 * 2 * (full ? N * N : windowPairs) * C;
    }
    const double M = double(image.mergeSize * image.mergeSize) * C;
    flops += 2 * merged * M * M + 2 * merged * M * double(c.projectionDim);
    return flops;
}

int benchFailure(const std::string& message) {
    std::cerr << "iris bench: " << message << '\n';
    return 1;
}

// What the vision benchmark measured, and on what.
struct VisionReport {
    std::string mmproj;
    std::string image;
    int threads = 0;
    const char* products = "";
    double preprocessSeconds = 0;
    double encodeSeconds = 0;  // best of `repeat`
    std::int64_t repeat = 0;
    double flops = 0;
};

void printVisionReport(const VisionReport& r, const inference::VisionConfig& config,
                       const inference::ImagePatches& patches, bool json) {
    const double gflops = r.flops / r.encodeSeconds / 1e9;
    if (json) {
        const nlohmann::ordered_json report = {
            {"mmproj", r.mmproj},
            {"projector", config.projectorName},
            {"image", r.image},
            {"threads", r.threads},
            {"cpu_kernels", std::string(kernels::cpuIsaName(kernels::activeIsa()))},
            {"products", r.products},
            {"image_width", patches.originalWidth},
            {"image_height", patches.originalHeight},
            {"resized_width", patches.resizedWidth},
            {"resized_height", patches.resizedHeight},
            {"patches", patches.patchCount()},
            {"image_tokens", patches.tokenCount()},
            {"preprocess_s", r.preprocessSeconds},
            {"encode_s", r.encodeSeconds},
            {"gflop", r.flops / 1e9},
            {"gflop_per_s", gflops},
        };
        std::cout << report.dump() << '\n';
        return;
    }
    std::printf("mmproj: %s (%s), %d threads, %s kernels, %s products\n", r.mmproj.c_str(),
                config.projectorName.c_str(), r.threads,
                std::string(kernels::cpuIsaName(kernels::activeIsa())).c_str(), r.products);
    std::printf(
        "image: %dx%d resized to %dx%d: %lld patches, %lld image tokens (%.3f s "
        "preprocessing)\n",
        patches.originalWidth, patches.originalHeight, patches.resizedWidth, patches.resizedHeight,
        static_cast<long long>(patches.patchCount()), static_cast<long long>(patches.tokenCount()),
        r.preprocessSeconds);
    std::printf("encode: %.3f s (best of %lld) = %.1f GFLOP/s (%.1f GFLOP per image)\n",
                r.encodeSeconds, static_cast<long long>(r.repeat), gflops, r.flops / 1e9);
}

// The image read and cut into patches for `config`'s tower, at most `maxTokens` image tokens;
// `seconds` gets the time preprocessing took.
Result<inference::ImagePatches> preprocessForTower(const std::string& path,
                                                   const inference::VisionConfig& config,
                                                   std::int64_t maxTokens, double& seconds) {
    Result<inference::RgbImage> image = inference::readImageFile(path);
    IRIS_RETURN_IF_ERROR(image.status());
    inference::ImagePreprocessOptions pre;
    pre.patchSize = config.patchSize;
    pre.mergeSize = config.mergeSize;
    pre.mean = config.imageMean;
    pre.std = config.imageStd;
    pre.maxPixels = maxTokens * std::int64_t(config.patchSize * config.mergeSize) *
                    (config.patchSize * config.mergeSize);
    const auto start = Clock::now();
    Result<inference::ImagePatches> patches = inference::preprocessImage(*image, pre);
    seconds = secondsSince(start);
    IRIS_RETURN_IF_ERROR(patches.status().withContext(path + ": "));
    return patches;
}

// The fastest of `repeat` encodes, after one that warms up.
Result<double> bestEncodeSeconds(inference::VisionModel& tower,
                                 const inference::ImagePatches& patches, int threads,
                                 std::int64_t repeat) {
    inference::ThreadPool pool(threads);
    std::vector<float> embeddings;
    double best = 1e300;
    for (std::int64_t run = 0; run <= repeat; ++run) {  // run 0 warms up
        const auto start = Clock::now();
        IRIS_RETURN_IF_ERROR(tower.encode(patches, pool, embeddings));
        if (run > 0) best = std::min(best, secondsSince(start));
    }
    return best;
}

int runVisionBench(const Arguments& args, const std::string& mmproj, int threads) {
    const std::optional<std::string> imagePath = args.value("image");
    if (!imagePath) {
        std::cerr << "iris bench: --mmproj needs --image FILE\n";
        return 2;
    }
    const Result<std::int64_t> repeat = args.integer("repeat", 3),
                               maxTokens = args.integer("image-max-tokens", 4096);
    if (!repeat || !maxTokens || *repeat < 1 || *maxTokens < 8) {
        std::cerr << "iris bench: --repeat must be >= 1 and --image-max-tokens >= 8\n";
        return 2;
    }
    Result<inference::GgufFile> file = inference::GgufFile::open(mmproj);
    if (!file) return benchFailure(file.status().message());
    Result<std::unique_ptr<inference::VisionModel>> tower = inference::VisionModel::load(*file);
    if (!tower) return benchFailure(tower.status().message());
    const std::optional<inference::VisionPrecision> precision =
        inference::parseVisionPrecision(args.value("vision-precision").value_or("auto"));
    if (!precision) {
        std::cerr << "iris bench: --vision-precision wants auto, f32 or bf16\n";
        return 2;
    }
    const kernels::GemmPrecision products = inference::resolveVisionPrecision(*precision);
    (*tower)->setPrecision(products);
    VisionReport report{mmproj, *imagePath, threads, "f32", 0, 0, *repeat, 0};
    if (products == kernels::GemmPrecision::Bf16)
        report.products = kernels::gemmBf16OnAmx() ? "bf16 (AMX tiles)" : "bf16";
    const inference::VisionConfig& config = (*tower)->config();
    Result<inference::ImagePatches> patches =
        preprocessForTower(*imagePath, config, *maxTokens, report.preprocessSeconds);
    if (!patches) return benchFailure(patches.status().message());
    Result<double> best = bestEncodeSeconds(**tower, *patches, threads, *repeat);
    if (!best) return benchFailure(best.status().message());
    report.encodeSeconds = *best;
    report.flops = visionFlops(config, *patches);
    printVisionReport(report, config, *patches, args.has("json"));
    return 0;
}

// What the text benchmark measured, and on what.
struct TextReport {
    std::string model;
    int threads = 0;
    std::int64_t promptTokens = 0;
    std::int64_t decodeTokens = 0;
    double prefillSeconds = 0;
    double decodeSeconds = 0;
    double bandwidth = 0;  // GB/s, this machine's memory read bandwidth, measured in the same run
    std::int64_t hugePageBytes = -1;  // the process's after decoding (packed weights); -1: unknown
};

// A prompt of `tokens` random tokens, in chunks of the engine's prefill size, logits for the last
// one. Returns its seconds.
Result<double> timePrefill(inference::Engine& engine, std::int64_t tokens, std::int64_t chunk,
                           std::mt19937& rng) {
    inference::KvCache& cache = engine.cache();
    std::uniform_int_distribution<std::int32_t> anyToken(
        0, std::int32_t(engine.model().config().vocabSize - 1));
    const inference::SequenceId seq = cache.newSequence();
    std::vector<float> logits;
    const auto start = Clock::now();
    std::vector<inference::TokenInput> batch;
    for (std::int64_t begin = 0; begin < tokens; begin += chunk) {
        const std::int64_t end = std::min(tokens, begin + chunk);
        IRIS_RETURN_IF_ERROR(cache.extend(seq, end));
        batch.clear();
        for (std::int64_t i = begin; i < end; ++i) {
            const auto pos = std::int32_t(i);
            batch.push_back({anyToken(rng), seq, i, {pos, pos, pos, 0}, i + 1 == tokens});
        }
        logits.clear();
        IRIS_RETURN_IF_ERROR(engine.mutableModel().forward(batch, cache, engine.pool(), logits));
    }
    const double seconds = secondsSince(start);
    cache.release(seq);
    return seconds;
}

// `tokens` greedy steps from a fresh sequence, one token per forward pass (as llama-bench's tg
// test: its numbers are comparable). Returns their seconds.
Result<double> timeDecode(inference::Engine& engine, std::int64_t tokens, std::mt19937& rng) {
    inference::KvCache& cache = engine.cache();
    std::uniform_int_distribution<std::int32_t> anyToken(
        0, std::int32_t(engine.model().config().vocabSize - 1));
    const inference::SequenceId seq = cache.newSequence();
    std::vector<float> logits;
    std::int32_t next = anyToken(rng);
    const auto start = Clock::now();
    for (std::int64_t i = 0; i < tokens; ++i) {
        IRIS_RETURN_IF_ERROR(cache.extend(seq, i + 1));
        const auto pos = std::int32_t(i);
        const inference::TokenInput in{next, seq, i, {pos, pos, pos, 0}, true};
        logits.clear();
        IRIS_RETURN_IF_ERROR(engine.mutableModel().forward({&in, 1}, cache, engine.pool(), logits));
        next = std::int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    return secondsSince(start);
}

// The speeds, with the read bandwidth as the bound for decoding.
void printTextReport(const TextReport& r, const inference::Engine& engine, bool json) {
    const inference::ModelConfig& config = engine.model().config();
    const double bandwidth = r.bandwidth;
    const double prefillRate = double(r.promptTokens) / r.prefillSeconds;
    const double decodeRate = double(r.decodeTokens) / r.decodeSeconds;
    const double bytesPerToken = decodeBytesPerToken(engine.file(), config.hiddenSize);
    const double fraction = bytesPerToken * decodeRate / (bandwidth * 1e9);
    // The measured bandwidth is the host's: a bound for the CPU engine only.
    const bool onCpu = engine.deviceName() == "cpu";
    const bool bounded = onCpu && bandwidth > 0;
    if (json) {
        const nlohmann::ordered_json report = {
            {"model", r.model},
            {"architecture", config.architecture},
            {"threads", r.threads},
            {"cpu_kernels", std::string(kernels::cpuIsaName(kernels::activeIsa()))},
            {"device", engine.deviceName()},
            {"prefill_tokens", r.promptTokens},
            {"prefill_tokens_per_s", prefillRate},
            {"decode_tokens", r.decodeTokens},
            {"decode_tokens_per_s", decodeRate},
            {"decode_bytes_per_token", bytesPerToken},
            {"bandwidth_gb_per_s", bandwidth},
            {"decode_bandwidth_fraction",
             bounded ? nlohmann::ordered_json(fraction) : nlohmann::ordered_json(nullptr)},
            {"huge_pages_mb", r.hugePageBytes < 0 ? nlohmann::ordered_json(nullptr)
                                                  : nlohmann::ordered_json(r.hugePageBytes >> 20)},
        };
        std::cout << report.dump() << '\n';
        return;
    }
    std::printf("model: %s (%s), %d threads, %s kernels, device %s\n", r.model.c_str(),
                config.architecture.c_str(), r.threads,
                std::string(kernels::cpuIsaName(kernels::activeIsa())).c_str(),
                engine.deviceName().c_str());
    std::printf("prefill: %lld tokens in %.2f s = %.1f tokens/s\n",
                static_cast<long long>(r.promptTokens), r.prefillSeconds, prefillRate);
    std::printf("decode:  %lld tokens in %.2f s = %.1f tokens/s\n",
                static_cast<long long>(r.decodeTokens), r.decodeSeconds, decodeRate);
    if (!onCpu) {
        std::printf(
            "decode against the GPU's memory bandwidth: iris_cuda_bench measures it "
            "(scripts/gpu-check.sh bench)\n");
        return;
    }
    if (!bounded) {
        std::printf("memory read bandwidth: not measured (no 256 MiB buffer to be had)\n");
        return;
    }
    std::printf(
        "memory read bandwidth (same run): %.1f GB/s; a decode step reads %.1f MB of weights\n",
        bandwidth, bytesPerToken / 1e6);
    std::printf("decode reaches %.0f%% of the bandwidth bound (%.1f tokens/s)\n", 100 * fraction,
                bandwidth * 1e9 / bytesPerToken);
    // Decode was about 15% slower without them (transparent_hugepage=never) on an AMD Zen 5.
    if (r.hugePageBytes >= 0) {
        std::printf("on transparent huge pages: %lld MiB (the packed weights ask for them)\n",
                    static_cast<long long>(r.hugePageBytes >> 20));
    }
}

// --model: prefill and decode speed of the text model.
int runTextBench(const Arguments& args) {
    const Result<std::string> model = args.required("model");
    const Result<std::int64_t> p = args.integer("prompt-tokens", 512),
                               n = args.integer("n-gen", 128),
                               threads = args.integer("threads",
                                                      inference::ThreadPool::hardwareThreads());
    for (const Status& s : {model.status(), p.status(), n.status(), threads.status()}) {
        if (!s.isOk()) {
            std::cerr << "iris bench: " << s.message() << '\n';
            return 2;
        }
    }
    if (*p < 1 || *n < 1 || *threads < 1) {
        std::cerr << "iris bench: -p, -n and --threads must be at least 1\n";
        return 2;
    }
    const Result<inference::DeviceChoice> device = deviceFromArguments(args);
    if (!device) {
        std::cerr << "iris bench: " << device.status().message() << '\n';
        return 2;
    }
    inference::EngineOptions options;
    options.device = *device;
    options.threads = int(*threads);
    options.contextSize = *p + *n + 1;
    Result<std::unique_ptr<inference::Engine>> loaded = inference::Engine::load(*model, options);
    if (!loaded) return benchFailure(loaded.status().message());
    inference::Engine& engine = **loaded;
    reportDevice(engine, "iris bench", std::cerr);
    std::mt19937 rng(1);  // the prompt's tokens, then the first decoded one: the same every run
    const Result<double> prefill = timePrefill(engine, *p, options.prefillChunk, rng);
    if (!prefill) return benchFailure(prefill.status().message());
    const Result<double> decode = timeDecode(engine, *n, rng);
    if (!decode) return benchFailure(decode.status().message());
    const std::int64_t hugePages = hugePageBytesInUse();  // before the bandwidth buffer comes
    const TextReport report{*model,   options.threads, *p, *n, *prefill,
                            *decode, measureReadBandwidth(engine.pool()), hugePages};
    printTextReport(report, engine, args.has("json"));
    return 0;
}

}  // namespace

int runBench(int argc, char** argv) {
    Result<Arguments> args = Arguments::parse(argc, argv, kOptions);
    if (args && args->has("help")) {
        std::cout << "Usage: iris bench --model F.gguf [options]\n"
                     "       iris bench --mmproj MM.gguf --image FILE [options]\n\n"
                  << Arguments::usage(kOptions);
        return 0;
    }
    if (!args) {
        std::cerr << "iris bench: " << args.status().message() << '\n';
        return 2;
    }
    if (std::optional<std::string> mmproj = args->value("mmproj"); mmproj && !args->has("model")) {
        const Result<std::int64_t> visionThreads =
            args->integer("threads", inference::ThreadPool::hardwareThreads());
        if (!visionThreads || *visionThreads < 1) {
            std::cerr << "iris bench: --threads must be at least 1\n";
            return 2;
        }
        return runVisionBench(*args, *mmproj, int(*visionThreads));
    }
    if (args->has("mmproj")) {
        std::cerr
            << "iris bench: give --model (text) or --mmproj with --image (vision), not both\n";
        return 2;
    }
    return runTextBench(*args);
}

}  // namespace iris::app
