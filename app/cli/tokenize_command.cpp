// iris tokenize --model F.gguf --text TEXT: the token ids, space separated.
#include <iostream>

#include "app/cli/arguments.h"
#include "app/cli/engine_commands.h"
#include "inference/gguf/gguf_file.h"
#include "inference/tokenizer/tokenizer.h"

namespace iris::app {
namespace {

constexpr OptionSpec kOptions[] = {
    {"model", "m", true, "GGUF model file (required; only its tokenizer is read)"},
    {"text", "", true, "text to tokenize (required)"},
    {"no-special", "", false, "encode <|im_start|> and the like as plain text"},
    {"pieces", "", false, "print each token's text next to its id"},
    {"help", "h", false, "show this help"},
};

}  // namespace

int runTokenize(int argc, char** argv) {
    Result<Arguments> args = Arguments::parse(argc, argv, kOptions);
    if (args && args->has("help")) {
        std::cout << "Usage: iris tokenize --model F.gguf --text TEXT [options]\n\n"
                  << Arguments::usage(kOptions);
        return 0;
    }
    Result<std::string> model = args ? args->required("model") : Result<std::string>(args.status());
    Result<std::string> text = args ? args->required("text") : Result<std::string>(args.status());
    if (!model || !text) {
        std::cerr << "iris tokenize: " << (model ? text.status() : model.status()).message()
                  << '\n';
        return 2;
    }
    Result<inference::GgufFile> file = inference::GgufFile::open(*model);
    if (!file) {
        std::cerr << "iris tokenize: " << file.status().message() << '\n';
        return 1;
    }
    Result<inference::Tokenizer> tokenizer = inference::Tokenizer::fromGguf(*file);
    if (!tokenizer) {
        std::cerr << "iris tokenize: " << tokenizer.status().message() << '\n';
        return 1;
    }
    const std::vector<std::int32_t> ids = tokenizer->encode(*text, !args->has("no-special"));
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (args->has("pieces")) {
            std::cout << ids[i] << '\t' << tokenizer->tokenText(ids[i]) << '\n';
        } else {
            std::cout << (i ? " " : "") << ids[i];
        }
    }
    if (!args->has("pieces")) std::cout << '\n';
    return 0;
}

}  // namespace iris::app
