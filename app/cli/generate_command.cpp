// iris generate --model F.gguf [--mmproj MM.gguf --image FILE...] --prompt TEXT [-n N] [--temp T]
//               [--seed S] [--chat] [--print-ids]
// Images: without --chat each image goes where the prompt says <__media__> (or, without any
// marker, all before the prompt), wrapped in the projector's markers as llama.cpp's mtmd tools do
// (<|vision_start|> ... <|vision_end|> for Qwen2.5-VL, ]<]start of image[>[ ... ]<]end of
// image[>[ for MiniMax-M3, tokenised as text); with --chat the chat template places them.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

#include "app/cli/agent_setup.h"
#include "app/cli/arguments.h"
#include "app/cli/device_option.h"
#include "app/cli/engine_commands.h"
#include "inference/engine.h"

namespace iris::app {
namespace {

constexpr OptionSpec kOptions[] = {
    {"model", "m", true, "GGUF model file or a pulled model's name (required)"},
    {"mmproj", "", true, "the model's vision projector GGUF (needed for --image)"},
    {"image", "", true,
     "PNG or JPEG file (repeatable); goes where the prompt says <__media__>, else before it"},
    {"image-max-tokens", "", true,
     "image tokens at most per image (default: the projector's, 4096; MiniMax-M3 576)"},
    {"image-min-tokens", "", true, "image tokens at least per image (default 8)"},
    {"vision-precision", "", true,
     "vision tower products: auto (bf16 where it measures faster than f32), f32 or bf16 (default "
     "auto)"},
    {"prompt", "p", true, "prompt text (required); special tokens like <|im_start|> are parsed"},
    {"n-predict", "n", true, "tokens to generate at most (default 128)"},
    {"temp", "", true, "temperature; 0 = greedy (default 0.8)"},
    {"top-k", "", true, "keep the k most likely tokens; 0 = off (default 40)"},
    {"top-p", "", true, "nucleus sampling mass; 1 = off (default 0.95)"},
    {"min-p", "", true, "drop tokens below this share of the most likely; 0 = off (default 0.05)"},
    {"repeat-penalty", "", true, "penalty for the last 64 tokens; 1 = off (default 1.0)"},
    {"presence-penalty", "", true, "subtracted from tokens already seen (default 0)"},
    {"frequency-penalty", "", true, "subtracted per occurrence (default 0)"},
    {"seed", "s", true, "random seed (default: from the clock, printed)"},
    {"stop", "", true, "stop before this text (repeatable)"},
    {"chat", "", false, "wrap the prompt in the model's chat template as a user message"},
    {"system", "", true, "system message for --chat"},
    {"print-ids", "", false, "print the generated token ids on the last line"},
    {"threads", "t", true, "compute threads (default: all cores)"},
    kDeviceOption,
    {"ctx-size", "c", true, "context size in tokens (default 4096)"},
    {"help", "h", false, "show this help"},
};

int usageError(const std::string& message) {
    std::cerr << "iris generate: " << message << "\nRun 'iris generate --help' for the options.\n";
    return 2;
}

int failure(const Status& status) {
    std::cerr << "iris generate: " << status.message() << '\n';
    return 1;
}

std::size_t countMarkers(const std::string& text) {
    std::size_t count = 0;
    const std::string marker = inference::kImageMarker;
    for (std::size_t at = text.find(marker); at != std::string::npos;
         at = text.find(marker, at + marker.size()))
        ++count;
    return count;
}

// The raw-text layout: text chunks tokenized apart, each image as BEGIN IMAGE END where its
// marker stood (the projector's imageBegin / imageEnd, tokenized as text with special tokens).
Result<inference::GenerateRequest> rawPromptWithImages(
    const inference::Tokenizer& tokenizer, const inference::VisionConfig& vision,
    const std::string& text,
    const std::vector<std::shared_ptr<const inference::ImagePatches>>& images) {
    const std::vector<std::int32_t> start = tokenizer.encode(vision.imageBegin, true);
    const std::vector<std::int32_t> end = tokenizer.encode(vision.imageEnd, true);
    inference::GenerateRequest request;
    if (tokenizer.addBosToken() && tokenizer.bosId()) request.prompt.push_back(*tokenizer.bosId());
    const std::string marker = inference::kImageMarker;
    std::size_t from = 0, next = 0;
    auto addText = [&](std::string_view chunk) {
        const std::vector<std::int32_t> ids = tokenizer.encode(chunk, /*parseSpecial=*/true);
        request.prompt.insert(request.prompt.end(), ids.begin(), ids.end());
    };
    auto addImage = [&] {
        request.prompt.insert(request.prompt.end(), start.begin(), start.end());
        request.images.push_back({request.prompt.size(), images[next++]});
        request.prompt.insert(request.prompt.end(), end.begin(), end.end());
    };
    if (countMarkers(text) == 0) {
        while (next < images.size())
            addImage();
        addText(text);
        return request;
    }
    for (std::size_t at; (at = text.find(marker, from)) != std::string::npos;
         from = at + marker.size()) {
        addText(std::string_view(text).substr(from, at - from));
        addImage();
    }
    addText(std::string_view(text).substr(from));
    return request;
}

// What the options ask for, checked: the engine's options, the prompt, its images and the
// sampling.
struct GenerateSettings {
    std::string model;
    std::string prompt;
    std::vector<std::string> imageFiles;
    std::size_t markers = 0;  // <__media__> markers in the prompt: 0, or one per image
    inference::EngineOptions engine;
    std::int64_t maxTokens = 0;
    std::int64_t seed = 0;
    inference::SamplingParams sampling;
};

// The usage error (the first found, in the order the options are listed) when they are wrong.
Result<GenerateSettings> readSettings(const Arguments& args) {
    const Result<std::string> model = args.required("model");
    const Result<std::string> prompt = args.required("prompt");
    const Result<std::int64_t> n = args.integer("n-predict", 128);
    const Result<std::int64_t> threads =
        args.integer("threads", inference::ThreadPool::hardwareThreads());
    const Result<std::int64_t> ctx = args.integer("ctx-size", 4096);
    const Result<std::int64_t> seed =
        args.integer("seed", std::int64_t(std::random_device{}() & 0x7fffffff));
    const Result<double> temp = args.number("temp", 0.8), topP = args.number("top-p", 0.95),
                         minP = args.number("min-p", 0.05),
                         repeat = args.number("repeat-penalty", 1.0),
                         presence = args.number("presence-penalty", 0.0),
                         frequency = args.number("frequency-penalty", 0.0);
    const Result<std::int64_t> topK = args.integer("top-k", 40);
    for (const Status& s :
         {model.status(), prompt.status(), n.status(), threads.status(), ctx.status(),
          seed.status(), temp.status(), topP.status(), minP.status(), repeat.status(),
          presence.status(), frequency.status(), topK.status()}) {
        IRIS_RETURN_IF_ERROR(s);
    }
    if (*n < 0 || *threads < 1 || *ctx < 1)
        return Status::invalidArgument("-n must be >= 0, --threads and --ctx-size >= 1");
    const Result<inference::DeviceChoice> device = deviceFromArguments(args);
    IRIS_RETURN_IF_ERROR(device.status());
    GenerateSettings settings;
    settings.engine.device = *device;
    settings.imageFiles = args.values("image");
    const Result<std::int64_t> maxImageTokens = args.integer("image-max-tokens", 1 << 30),
                               minImageTokens = args.integer("image-min-tokens", 8);
    IRIS_RETURN_IF_ERROR(maxImageTokens.status());
    IRIS_RETURN_IF_ERROR(minImageTokens.status());
    if (*minImageTokens < 1 || *maxImageTokens < *minImageTokens)
        return Status::invalidArgument("--image-min-tokens must be >= 1 and <= --image-max-tokens");
    const std::optional<inference::VisionPrecision> visionPrecision =
        inference::parseVisionPrecision(args.value("vision-precision").value_or("auto"));
    if (!visionPrecision)
        return Status::invalidArgument("--vision-precision wants auto, f32 or bf16");
    Result<ModelFiles> files = resolveModelOption(*model);
    IRIS_RETURN_IF_ERROR(files.status());
    if (!settings.imageFiles.empty() && !args.has("mmproj") && files->mmproj.empty())
        return Status::invalidArgument(
            "--image needs the model's vision projector: pass --mmproj MM.gguf");
    settings.markers = countMarkers(*prompt);
    if (settings.markers != 0 && settings.markers != settings.imageFiles.size()) {
        return Status::invalidArgument(
            "the prompt has " + std::to_string(settings.markers) + " " + inference::kImageMarker +
            " markers for " + std::to_string(settings.imageFiles.size()) + " --image files");
    }

    settings.model = files->model;
    settings.prompt = *prompt;
    settings.engine.threads = int(*threads);
    settings.engine.contextSize = *ctx;
    settings.engine.visionPrecision = *visionPrecision;
    settings.engine.mmprojPath = args.value("mmproj").value_or(files->mmproj.string());
    if (files->entry) settings.engine.imageMaxPixels = files->entry->maxPixels;
    // Unset: the projector's own budget (VisionConfig::minPixels / maxPixels).
    if (args.has("image-max-tokens")) settings.engine.imageMaxPixels = *maxImageTokens * 28 * 28;
    if (args.has("image-min-tokens")) settings.engine.imageMinPixels = *minImageTokens * 28 * 28;
    settings.maxTokens = *n;
    settings.seed = *seed;
    settings.sampling = {.temperature = float(*temp),
                         .topK = int(*topK),
                         .topP = float(*topP),
                         .minP = float(*minP),
                         .repetitionPenalty = float(*repeat),
                         .presencePenalty = float(*presence),
                         .frequencyPenalty = float(*frequency),
                         .penaltyWindow = 64,
                         .seed = std::uint64_t(*seed)};
    return settings;
}

using ImageList = std::vector<std::shared_ptr<const inference::ImagePatches>>;

// Each --image decoded and resized for the vision tower, with a line on stderr about its size.
Result<ImageList> prepareImages(inference::Engine& engine, const std::vector<std::string>& files) {
    ImageList images;
    for (const std::string& file : files) {
        Result<inference::RgbImage> decoded = inference::readImageFile(file);
        IRIS_RETURN_IF_ERROR(decoded.status());
        Result<std::shared_ptr<const inference::ImagePatches>> patches =
            engine.prepareImage(*decoded);
        IRIS_RETURN_IF_ERROR(patches.status().withContext(file + ": "));
        std::cerr << "iris generate: " << file << ": " << (*patches)->originalWidth << "x"
                  << (*patches)->originalHeight << " resized to " << (*patches)->resizedWidth << "x"
                  << (*patches)->resizedHeight << ", " << (*patches)->tokenCount()
                  << " image tokens\n";
        images.push_back(*patches);
    }
    return images;
}

// --chat: the prompt as a user message (after --system) in the model's chat template, the images
// where the template puts its image placeholders.
Result<inference::GenerateRequest> chatPrompt(inference::Engine& engine, const Arguments& args,
                                              const GenerateSettings& settings,
                                              const ImageList& images) {
    const inference::Tokenizer& tokenizer = engine.tokenizer();
    std::string content = settings.prompt;
    if (settings.markers == 0) {  // images first, as llama.cpp's mtmd tools do
        std::string prefix;
        for (std::size_t i = 0; i < images.size(); ++i)
            prefix += inference::kImageMarker;
        content = prefix + content;
    }
    std::vector<inference::ChatMessage> messages;
    if (std::optional<std::string> system = args.value("system"))
        messages.push_back({"system", *system, {}});
    messages.push_back({"user", content, {}});
    Result<std::string> rendered = engine.chatTemplate().render(messages, {});
    IRIS_RETURN_IF_ERROR(rendered.status());
    std::vector<std::int32_t> ids;
    if (tokenizer.addBosToken() && tokenizer.bosId()) ids.push_back(*tokenizer.bosId());
    const std::vector<std::int32_t> body = tokenizer.encode(*rendered, /*parseSpecial=*/true);
    ids.insert(ids.end(), body.begin(), body.end());
    inference::GenerateRequest request;
    if (images.empty()) {
        request.prompt = std::move(ids);
        return request;
    }
    const std::string_view placeholder = engine.chatTemplate().imagePlaceholder();
    const std::optional<std::int32_t> pad = tokenizer.findToken(placeholder);
    if (!pad) {
        return Status::unsupported("the model's vocabulary has no " + std::string(placeholder) +
                                   " token");
    }
    return inference::Engine::splitAtPlaceholders(ids, *pad, images);
}

// The prompt's tokens and images: --chat's template, the raw text, or the raw text with images.
Result<inference::GenerateRequest> buildPrompt(inference::Engine& engine, const Arguments& args,
                                               const GenerateSettings& settings,
                                               const ImageList& images) {
    if (args.has("chat")) return chatPrompt(engine, args, settings, images);
    if (!images.empty())
        return rawPromptWithImages(engine.tokenizer(), engine.vision()->config(), settings.prompt,
                                   images);
    const inference::Tokenizer& tokenizer = engine.tokenizer();
    inference::GenerateRequest request;
    if (tokenizer.addBosToken() && tokenizer.bosId()) request.prompt.push_back(*tokenizer.bosId());
    const std::vector<std::int32_t> ids = tokenizer.encode(settings.prompt, /*parseSpecial=*/true);
    request.prompt.insert(request.prompt.end(), ids.begin(), ids.end());
    return request;
}

// Streams the answer to stdout (with --print-ids, its token ids on a last line) and the speeds
// to stderr. Returns the exit code.
int generateAndReport(inference::Engine& engine, const inference::GenerateRequest& request,
                      bool printIds, std::size_t imageCount) {
    Result<std::unique_ptr<inference::Session>> session = engine.newSession();
    if (!session) {
        std::cerr << "iris generate: " << session.status().message() << '\n';
        return 1;
    }
    Result<inference::GenerateResult> result = (*session)->generate(request);
    if (!result) {
        std::cerr << "\niris generate: " << result.status().message() << '\n';
        return 1;
    }
    std::cout << '\n';
    if (printIds) {
        for (std::size_t i = 0; i < result->tokens.size(); ++i)
            std::cout << (i ? " " : "") << result->tokens[i];
        std::cout << '\n';
    }
    const double prefillRate =
        double(result->promptTokens) / std::max(result->prefillSeconds, 1e-9);
    const double decodeRate = double(result->tokens.size()) / std::max(result->decodeSeconds, 1e-9);
    std::fprintf(stderr,
                 "iris generate: stopped on %s; prompt %lld tokens at %.1f tokens/s, generated %zu "
                 "tokens at %.1f "
                 "tokens/s\n",
                 inference::stopReasonName(result->stop),
                 static_cast<long long>(result->promptTokens), prefillRate, result->tokens.size(),
                 decodeRate);
    if (imageCount != 0) {
        std::fprintf(stderr,
                     "iris generate: %lld image tokens; vision tower ran for %d images in %.2f s\n",
                     static_cast<long long>(result->imageTokens), result->imagesEncoded,
                     result->encodeSeconds);
    }
    return 0;
}

}  // namespace

int runGenerate(int argc, char** argv) {
    Result<Arguments> args = Arguments::parse(argc, argv, kOptions);
    if (!args) return usageError(args.status().message());
    if (args->has("help")) {
        std::cout << "Usage: iris generate --model F.gguf [--mmproj MM.gguf --image FILE] "
                     "--prompt TEXT [options]\n\n"
                  << Arguments::usage(kOptions);
        return 0;
    }
    Result<GenerateSettings> settings = readSettings(*args);
    if (!settings) return usageError(settings.status().message());

    Result<std::unique_ptr<inference::Engine>> engine =
        inference::Engine::load(settings->model, settings->engine);
    if (!engine) return failure(engine.status());
    Result<ImageList> images = prepareImages(**engine, settings->imageFiles);
    if (!images) return failure(images.status());
    Result<inference::GenerateRequest> request = buildPrompt(**engine, *args, *settings, *images);
    if (!request) return failure(request.status());
    request->maxTokens = settings->maxTokens;
    request->stopStrings = args->values("stop");
    request->sampling = settings->sampling;
    request->onToken = [](std::int32_t, std::string_view piece) {
        std::cout << piece << std::flush;
        return true;
    };
    std::cerr << "iris generate: " << (*engine)->model().config().architecture << " model, "
              << request->prompt.size() << " prompt tokens";
    if (!images->empty()) std::cerr << " and " << images->size() << " images";
    std::cerr << ", seed " << settings->seed << ", " << settings->engine.threads << " threads, "
              << (*engine)->deviceName() << '\n';
    reportDevice(**engine, "iris generate", std::cerr);
    return generateAndReport(**engine, *request, args->has("print-ids"), images->size());
}

}  // namespace iris::app
