// iris_vision_bench: time of the vision tower on one screenshot-sized image. Not a Google
// Benchmark: one encode of a 1280x800 screenshot is about 7.5 TFLOP (tens of seconds on a laptop
// CPU), so the program runs it --repeat times and prints each.
//
//   iris_make_mmproj --out /tmp/qwen25vl-3b-mmproj-f16.gguf
//   iris_vision_bench --mmproj /tmp/qwen25vl-3b-mmproj-f16.gguf --threads 2 [--precision f32]
//
// The default image is what smart resize makes of 1280x800 pixels: 1288x812, 92x58 patches, 5336
// patches, 1334 merged tokens. FLOPs count the matrix products (linear layers, patch embedding,
// merger, and both attention products per window), 2 per multiply-add.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <sys/resource.h>

#include "inference/gguf/gguf_file.h"
#include "inference/thread_pool.h"
#include "inference/vision/vision_model.h"

namespace {

using iris::inference::ImagePatches;
using iris::inference::VisionConfig;

[[noreturn]] void usage(const std::string& problem) {
    std::cerr << "iris_vision_bench: " << problem
              << "\nusage: iris_vision_bench --mmproj FILE [--threads N] [--width PX] "
                 "[--height PX] [--repeat N] [--precision auto|f32|bf16]\n(width and height: the "
                 "resized image, multiples of 28; default 1288 x 812; precision: as the engine's "
                 "default, auto)\n";
    std::exit(2);
}

// CPU seconds this process has used (all threads): on a shared machine wall time alone says
// little, so the program also reports the work per CPU second.
double cpuSeconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

double countFlops(const VisionConfig& c, const ImagePatches& image) {
    const double S = double(image.patchCount()), C = double(c.width), F = double(c.ffnSize);
    double flops = 2.0 * S * double(image.patchValues()) * C;  // patch embedding
    const double linear = 2.0 * S * C * (4.0 * C + 3.0 * F);   // q, k, v, out; gate, up, down
    // Attention: q k^T and p v, each 2 n^2 headDim per head, over the window spans.
    const long unitsH = image.gridH / 2, unitsW = image.gridW / 2;
    const long side = c.windowSize / (c.patchSize * c.mergeSize);
    double windowed = 0.0;
    for (long y = 0; y < unitsH; y += side) {
        for (long x = 0; x < unitsW; x += side) {
            const double n = 4.0 * double(std::min(side, unitsH - y) * std::min(side, unitsW - x));
            windowed += 4.0 * n * n * C;
        }
    }
    const double full = 4.0 * S * S * C;
    for (long b = 0; b < c.blocks; ++b)
        flops += linear + ((b + 1) % c.fullAttentionPeriod == 0 ? full : windowed);
    const double tokens = S / 4.0;
    flops +=
        2.0 * tokens * (4.0 * C) * (4.0 * C) + 2.0 * tokens * (4.0 * C) * double(c.projectionDim);
    return flops;
}

}  // namespace

int main(int argc, char** argv) {
    std::string mmproj;
    long threads = 2, width = 1288, height = 812, repeat = 1;
    iris::inference::VisionPrecision precision = iris::inference::VisionPrecision::Auto;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) usage("missing value after " + arg);
        const std::string value = argv[++i];
        const auto number = [&]() {
            char* end = nullptr;
            const long n = std::strtol(value.c_str(), &end, 10);
            if (end == value.c_str() || *end != '\0' || n <= 0) usage(arg + " wants a number > 0");
            return n;
        };
        if (arg == "--mmproj")
            mmproj = value;
        else if (arg == "--threads")
            threads = number();
        else if (arg == "--width")
            width = number();
        else if (arg == "--height")
            height = number();
        else if (arg == "--repeat")
            repeat = number();
        else if (arg == "--precision") {
            const auto parsed = iris::inference::parseVisionPrecision(value);
            if (!parsed) usage("--precision wants auto, f32 or bf16");
            precision = *parsed;
        } else
            usage("unknown option " + arg);
    }
    if (mmproj.empty()) usage("--mmproj is required");
    if (width % 28 != 0 || height % 28 != 0) usage("--width and --height must be multiples of 28");

    auto file = iris::inference::GgufFile::open(mmproj);
    if (!file) {
        std::cerr << file.status().message() << '\n';
        return 1;
    }
    auto tower = iris::inference::VisionModel::load(*file);
    if (!tower) {
        std::cerr << tower.status().message() << '\n';
        return 1;
    }
    const VisionConfig& c = (*tower)->config();
    const iris::kernels::GemmPrecision gemmPrecision =
        iris::inference::resolveVisionPrecision(precision);
    (*tower)->setPrecision(gemmPrecision);

    ImagePatches image;
    image.originalWidth = image.resizedWidth = int(width);
    image.originalHeight = image.resizedHeight = int(height);
    image.gridW = int(width / 14);
    image.gridH = int(height / 14);
    image.values.resize(static_cast<std::size_t>(image.patchCount() * image.patchValues()));
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> pixel(-1.8f, 2.1f);
    for (float& v : image.values)
        v = pixel(rng);

    const double flops = countFlops(c, image);
    std::cout << mmproj << ": " << c.blocks << " blocks, width " << c.width << ", " << c.heads
              << " heads, ffn " << c.ffnSize << ", projection " << c.projectionDim << "\nimage "
              << width << "x" << height << ": " << image.gridW << "x" << image.gridH << " patches ("
              << image.patchCount() << "), " << image.tokenCount() << " tokens, "
              << std::setprecision(4) << flops * 1e-12 << " TFLOP per encode, " << threads
              << " threads, "
              << (gemmPrecision == iris::kernels::GemmPrecision::Bf16
                      ? (iris::kernels::gemmBf16OnAmx() ? "bf16 products (AMX tiles)"
                                                        : "bf16 products (no AMX)")
                      : "f32 products")
              << "\n";

    iris::inference::ThreadPool pool(static_cast<int>(threads));
    std::vector<float> embeddings;
    for (long r = 0; r < repeat; ++r) {
        const auto start = std::chrono::steady_clock::now();
        const double cpuStart = cpuSeconds();
        const iris::Status status = (*tower)->encode(image, pool, embeddings);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double cpu = cpuSeconds() - cpuStart;
        if (!status.isOk()) {
            std::cerr << status.message() << '\n';
            return 1;
        }
        std::cout << std::fixed << std::setprecision(2) << "encode " << r + 1 << ": " << seconds
                  << " s, " << image.tokenCount() << " tokens, " << std::setprecision(1)
                  << flops / seconds * 1e-9 << " GFLOP/s, " << std::setprecision(3)
                  << double(image.tokenCount()) / seconds << " tokens/s; cpu "
                  << std::setprecision(2) << cpu << " s (" << std::setprecision(0)
                  << 100.0 * cpu / (seconds * double(threads)) << "% of " << threads
                  << " threads), " << std::setprecision(1) << flops / cpu * 1e-9
                  << " GFLOP per cpu second\n"
                  << std::defaultfloat;
    }
    return 0;
}
