// iris sessions [--db FILE]              lists the recorded sessions, newest first
// iris export SESSION --osworld DIR [--db FILE]   writes one in OSWorld's result layout
#include <cstdio>
#include <ctime>
#include <iostream>

#include "agent/recording/osworld_export.h"
#include "agent/recording/session_store.h"
#include "app/cli/agent_commands.h"
#include "app/cli/agent_session.h"
#include "app/cli/agent_setup.h"

namespace iris::app {
namespace {

constexpr OptionSpec kSessionsOptions[] = {
    {"db", "", true, "session database (default ~/.local/share/iris/sessions.db)"},
    {"help", "h", false, "show this help"},
};

constexpr OptionSpec kExportOptions[] = {
    {"osworld", "", true, "write OSWorld's layout into this folder (required)"},
    {"db", "", true, "session database (default ~/.local/share/iris/sessions.db)"},
    {"help", "h", false, "show this help"},
};

std::string localTime(std::int64_t milliseconds) {
    const std::time_t seconds = std::time_t(milliseconds / 1000);
    std::tm parts{};
    localtime_r(&seconds, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &parts);
    return text;
}

std::string shorten(const std::string& text, std::size_t width) {
    std::string line = text.substr(0, text.find('\n'));
    if (line.size() <= width) return line;
    return line.substr(0, width - 3) + "...";
}

}  // namespace

int runSessions(int argc, char** argv) {
    Result<Arguments> args = Arguments::parse(argc, argv, kSessionsOptions);
    if (!args) {
        std::cerr << "iris sessions: " << args.status().message() << '\n';
        return kExitUsage;
    }
    if (args->has("help")) {
        std::cout << "Usage: iris sessions [--db FILE]\n\n" << Arguments::usage(kSessionsOptions);
        return 0;
    }
    const std::filesystem::path db = sessionDatabasePath(*args);
    Result<agent::SessionStore> store = agent::SessionStore::open(db);
    if (!store) {
        std::cerr << "iris sessions: " << store.status().message() << '\n';
        return kExitError;
    }
    Result<std::vector<agent::SessionSummary>> sessions = store->listSessions();
    if (!sessions) {
        std::cerr << "iris sessions: " << sessions.status().message() << '\n';
        return kExitError;
    }
    if (sessions->empty()) {
        std::cout << "no sessions in " << db.string() << '\n';
        return 0;
    }
    std::printf("%6s  %-16s  %-14s  %5s  %6s  %s\n", "id", "started", "status", "steps", "score",
                "instruction");
    for (const agent::SessionSummary& s : *sessions) {
        char score[16] = "-";
        if (s.score) std::snprintf(score, sizeof score, "%.4f", *s.score);
        std::printf("%6lld  %-16s  %-14s  %5d  %6s  %s\n", static_cast<long long>(s.id),
                    localTime(s.createdAtMs).c_str(),
                    std::string(agent::sessionStatusName(s.status)).c_str(), s.stepCount, score,
                    shorten(s.instruction, 60).c_str());
    }
    return 0;
}

int runExport(int argc, char** argv) {
    Result<Arguments> args = Arguments::parse(argc, argv, kExportOptions);
    if (!args) {
        std::cerr << "iris export: " << args.status().message() << '\n';
        return kExitUsage;
    }
    if (args->has("help")) {
        std::cout << "Usage: iris export SESSION --osworld DIR [--db FILE]\n\n"
                  << Arguments::usage(kExportOptions);
        return 0;
    }
    const std::optional<std::string> dir = args->value("osworld");
    if (args->positional().size() != 1 || !dir) {
        std::cerr << "iris export: give one SESSION id and --osworld DIR\n";
        return kExitUsage;
    }
    Result<std::int64_t> id = parseSessionId(args->positional()[0]);
    if (!id) {
        std::cerr << "iris export: " << id.status().message() << '\n';
        return kExitUsage;
    }
    Result<agent::SessionStore> store = agent::SessionStore::open(sessionDatabasePath(*args));
    Result<agent::SessionRecord> session =
        store ? store->loadSession(*id) : Result<agent::SessionRecord>(store.status());
    if (!session) {
        std::cerr << "iris export: " << session.status().message() << '\n';
        return kExitError;
    }
    if (Status written = agent::exportOsworld(*session, *dir); !written.isOk()) {
        std::cerr << "iris export: " << written.message() << '\n';
        return kExitError;
    }
    std::cout << "session " << *id << " (" << session->steps.size() << " steps) written to " << *dir
              << " in OSWorld's layout\n";
    return 0;
}

}  // namespace iris::app
