// iris generate --model F.gguf --prompt TEXT [-n N] [--temp T] [--seed S] [--chat] [--print-ids]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

#include "app/cli/arguments.h"
#include "app/cli/engine_commands.h"
#include "inference/engine.h"

namespace iris::app {
namespace {

constexpr OptionSpec kOptions[] = {
    {"model", "m", true, "GGUF model file (required)"},
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
    {"ctx-size", "c", true, "context size in tokens (default 4096)"},
    {"help", "h", false, "show this help"},
};

int usageError(const std::string& message) {
    std::cerr << "iris generate: " << message << "\nRun 'iris generate --help' for the options.\n";
    return 2;
}

}  // namespace

int runGenerate(int argc, char** argv) {
    Result<Arguments> args = Arguments::parse(argc, argv, kOptions);
    if (!args) return usageError(args.status().message());
    if (args->has("help")) {
        std::cout << "Usage: iris generate --model F.gguf --prompt TEXT [options]\n\n"
                  << Arguments::usage(kOptions);
        return 0;
    }
    const Result<std::string> model = args->required("model");
    const Result<std::string> prompt = args->required("prompt");
    const Result<std::int64_t> n = args->integer("n-predict", 128);
    const Result<std::int64_t> threads =
        args->integer("threads", inference::ThreadPool::hardwareThreads());
    const Result<std::int64_t> ctx = args->integer("ctx-size", 4096);
    const Result<std::int64_t> seed =
        args->integer("seed", std::int64_t(std::random_device{}() & 0x7fffffff));
    const Result<double> temp = args->number("temp", 0.8), topP = args->number("top-p", 0.95),
                         minP = args->number("min-p", 0.05),
                         repeat = args->number("repeat-penalty", 1.0),
                         presence = args->number("presence-penalty", 0.0),
                         frequency = args->number("frequency-penalty", 0.0);
    const Result<std::int64_t> topK = args->integer("top-k", 40);
    for (const Status& s :
         {model.status(), prompt.status(), n.status(), threads.status(), ctx.status(),
          seed.status(), temp.status(), topP.status(), minP.status(), repeat.status(),
          presence.status(), frequency.status(), topK.status()}) {
        if (!s.isOk()) return usageError(s.message());
    }
    if (*n < 0 || *threads < 1 || *ctx < 1)
        return usageError("-n must be >= 0, --threads and --ctx-size >= 1");

    inference::EngineOptions options;
    options.threads = int(*threads);
    options.contextSize = *ctx;
    Result<std::unique_ptr<inference::Engine>> engine = inference::Engine::load(*model, options);
    if (!engine) {
        std::cerr << "iris generate: " << engine.status().message() << '\n';
        return 1;
    }
    const inference::Tokenizer& tokenizer = (*engine)->tokenizer();

    std::string text = *prompt;
    if (args->has("chat")) {
        std::vector<inference::ChatMessage> messages;
        if (std::optional<std::string> system = args->value("system"))
            messages.push_back({"system", *system, {}});
        messages.push_back({"user", *prompt, {}});
        Result<std::string> rendered = (*engine)->chatTemplate().render(messages, {});
        if (!rendered) {
            std::cerr << "iris generate: " << rendered.status().message() << '\n';
            return 1;
        }
        text = *rendered;
    }
    inference::GenerateRequest request;
    if (tokenizer.addBosToken() && tokenizer.bosId()) request.prompt.push_back(*tokenizer.bosId());
    const std::vector<std::int32_t> ids = tokenizer.encode(text, /*parseSpecial=*/true);
    request.prompt.insert(request.prompt.end(), ids.begin(), ids.end());
    request.maxTokens = *n;
    request.stopStrings = args->values("stop");
    request.sampling = {.temperature = float(*temp),
                        .topK = int(*topK),
                        .topP = float(*topP),
                        .minP = float(*minP),
                        .repetitionPenalty = float(*repeat),
                        .presencePenalty = float(*presence),
                        .frequencyPenalty = float(*frequency),
                        .penaltyWindow = 64,
                        .seed = std::uint64_t(*seed)};
    request.onToken = [](std::int32_t, std::string_view piece) {
        std::cout << piece << std::flush;
        return true;
    };
    std::cerr << "iris generate: " << (*engine)->model().config().architecture << " model, "
              << request.prompt.size() << " prompt tokens, seed " << *seed << ", "
              << options.threads << " threads\n";

    Result<std::unique_ptr<inference::Session>> session = (*engine)->newSession();
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
    if (args->has("print-ids")) {
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
    return 0;
}

}  // namespace iris::app
