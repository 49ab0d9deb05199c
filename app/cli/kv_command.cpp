// iris kv du | gc: the KV disk tier's folder (inference/kv_disk_store.h, defaultKvDirectory())
// on the command line: what is saved, per model and KV format, and trimming or clearing it.
#include <array>
#include <chrono>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/arguments.h"
#include "app/cli/command_line.h"
#include "app/cli/engine_commands.h"
#include "app/session/data_paths.h"
#include "base/strings.h"
#include "inference/kv_disk_store.h"

namespace iris::app {
namespace {
namespace fs = std::filesystem;

constexpr int kOk = 0, kFailed = 1, kUsage = 2;

constexpr OptionSpec kDirOption{"dir", "", true,
                                "the folder (default $IRIS_KV_DIR, else $XDG_CACHE_HOME/iris/kv, "
                                "else ~/.cache/iris/kv)"};
constexpr OptionSpec kHelpOption{"help", "h", false, "show this help"};

std::string utcText(fs::file_time_type time) {
    const std::time_t t =
        std::chrono::system_clock::to_time_t(std::chrono::file_clock::to_sys(time));
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
    return text;
}

// Parses argv against `specs` (plus --dir and --help); the exit code in `exit` when done.
std::optional<Arguments> parse(std::string_view command, int argc, char** argv,
                               std::vector<OptionSpec> specs, int& exit) {
    specs.push_back(kDirOption);
    specs.push_back(kHelpOption);
    Result<Arguments> args = Arguments::parse(argc, argv, specs);
    if (!args || !args->positional().empty()) {
        std::cerr << "iris kv " << command << ": "
                  << (args ? "unexpected argument '" + args->positional().front() + "'"
                           : args.status().message())
                  << "\nRun 'iris kv " << command << " --help' for the options.\n";
        exit = kUsage;
        return std::nullopt;
    }
    if (args->has("help")) {
        std::cout << "Usage: iris kv " << command << " [OPTIONS]\n\n" << Arguments::usage(specs);
        exit = kOk;
        return std::nullopt;
    }
    return std::move(*args);
}

fs::path folderOf(const Arguments& args) {
    return args.value("dir").value_or(defaultKvDirectory().string());
}

int runDu(int argc, char** argv) {
    int exit = kOk;
    std::optional<Arguments> args = parse("du", argc, argv, {}, exit);
    if (!args) return exit;
    const fs::path folder = folderOf(*args);
    Result<std::vector<inference::KvDiskGroup>> groups = inference::KvDiskStore::survey(folder);
    if (!groups) {
        std::cerr << "iris kv du: " << groups.status().message() << '\n';
        return kFailed;
    }
    std::int64_t blocks = 0, bytes = 0;
    for (const inference::KvDiskGroup& g : *groups) {
        std::cout << g.key << "  " << g.model << "\n  " << g.blocks << " blocks, "
                  << humanBytes(std::uint64_t(g.bytes));
        if (g.blocks > 0)
            std::cout << ", last used " << utcText(g.oldest) << " to " << utcText(g.newest);
        std::cout << '\n';
        blocks += g.blocks;
        bytes += g.bytes;
    }
    std::cout << folder.string() << ": " << blocks << " blocks, "
              << humanBytes(std::uint64_t(bytes)) << " in " << groups->size()
              << (groups->size() == 1 ? " format\n" : " formats\n");
    return kOk;
}

int runGc(int argc, char** argv) {
    int exit = kOk;
    std::optional<Arguments> args =
        parse("gc", argc, argv,
              {{"max-gb", "", true, "keep the most recently used blocks up to N GiB"},
               {"all", "", false, "remove every saved block"}},
              exit);
    if (!args) return exit;
    if (args->has("all") == args->has("max-gb")) {
        std::cerr << "iris kv gc: give either --max-gb N or --all\n";
        return kUsage;
    }
    std::int64_t keep = 0;
    if (!args->has("all")) {
        const Result<double> gb = args->number("max-gb", 0);
        if (!gb || !(*gb >= 0) || *gb > 1e6) {
            std::cerr << "iris kv gc: "
                      << (gb ? "--max-gb must be 0 to 1000000" : gb.status().message()) << '\n';
            return kUsage;
        }
        keep = std::int64_t(*gb * double(std::int64_t(1) << 30));
    }
    const fs::path folder = folderOf(*args);
    Result<std::int64_t> removed = inference::KvDiskStore::trim(folder, keep);
    if (!removed) {
        std::cerr << "iris kv gc: " << removed.status().message() << '\n';
        return kFailed;
    }
    std::cout << folder.string() << ": removed " << humanBytes(std::uint64_t(*removed)) << '\n';
    return kOk;
}

}  // namespace

int runKv(int argc, char** argv) {
    static constexpr std::array kKvSubcommands = {
        Subcommand{"du", "blocks and bytes per model and KV format, oldest and newest use", runDu},
        Subcommand{"gc", "remove the least recently used blocks down to --max-gb N, or --all",
                   runGc},
    };
    const std::string help =
        "Usage: iris kv du|gc [OPTIONS]\n\n"
        "The KV disk tier (--kv-disk-gb of run, eval, replay and serve): saved KV blocks, one\n"
        "file per block of 16 tokens, shared by every session whose prompt has that prefix.\n\n"
        "Subcommands:\n" +
        subcommandLines(kKvSubcommands, 4) +
        "\nRun 'iris kv SUBCOMMAND --help' for a subcommand's options.\n";
    if (argc >= 2 && isHelpArgument(argv[1])) {
        std::cout << help;
        return kOk;
    }
    if (std::optional<int> status = runNamedSubcommand(kKvSubcommands, argc, argv)) return *status;
    if (argc >= 2) std::cerr << "iris kv: unknown subcommand '" << argv[1] << "'\n";
    std::cerr << help;
    return kUsage;
}

}  // namespace iris::app
