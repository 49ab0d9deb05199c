// The layers of docs/architecture.md, enforced on the #include lines of the source tree:
//   base <- kernels <- inference <- agent <- agent/env <- app   (a layer includes only itself and
// below) and Qt only in agent/env/ and app/ (base, kernels, inference and the agent core build
// without it). Inside app/, the two front ends share app/session and stay apart: app/cli never
// includes app/gui nor app/gui app/cli, and app/session (like the rest of app/) neither; only
// app/main.cpp, which ties the command line to the GUI, sees both.
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

enum class Layer { Base, Kernels, Inference, Agent, Env, App, None };

const char* layerName(Layer layer) {
    switch (layer) {
        case Layer::Base:
            return "base";
        case Layer::Kernels:
            return "kernels";
        case Layer::Inference:
            return "inference";
        case Layer::Agent:
            return "agent";
        case Layer::Env:
            return "agent/env";
        case Layer::App:
            return "app";
        case Layer::None:
            break;
    }
    return "none";
}

// The layer a repository-relative path belongs to.
Layer layerOf(const std::string& path) {
    if (path.starts_with("base/")) return Layer::Base;
    if (path.starts_with("kernels/")) return Layer::Kernels;
    if (path.starts_with("inference/")) return Layer::Inference;
    if (path.starts_with("agent/env/")) return Layer::Env;
    if (path.starts_with("agent/")) return Layer::Agent;
    if (path.starts_with("app/")) return Layer::App;
    return Layer::None;
}

bool isQtHeader(const std::string& header) {
    static const std::regex qt(R"(^(Q[A-Z]\w*|Qt\w*/.*|q\w+\.h)$)");
    return std::regex_match(header, qt);
}

// Why `file` (in `from`) may not include `header` (quoted: a repository path), or nullopt.
std::optional<std::string> violation(Layer from, const std::string& header, bool quoted) {
    if (quoted) {
        const Layer to = layerOf(header);
        if (to != Layer::None && to > from) {
            return std::string(layerName(from)) + " may not include " + layerName(to) + " (" +
                   header + ")";
        }
        return std::nullopt;
    }
    if (isQtHeader(header) && from < Layer::Env) {
        return std::string(layerName(from)) + " must build without Qt (" + header + ")";
    }
    return std::nullopt;
}

// The parts of app/ for the front-end rule.
enum class AppPart { Session, Cli, Gui, Main, Other, NotApp };

AppPart appPartOf(const std::string& path) {
    if (path.starts_with("app/session/")) return AppPart::Session;
    if (path.starts_with("app/cli/")) return AppPart::Cli;
    if (path.starts_with("app/gui/")) return AppPart::Gui;
    if (path == "app/main.cpp") return AppPart::Main;
    if (path.starts_with("app/")) return AppPart::Other;
    return AppPart::NotApp;
}

// Why `file` (a repository path) may not include `header` (quoted: a repository path) because
// it would tie a front end to the other, or app/session to either; nullopt when it may.
std::optional<std::string> frontEndViolation(const std::string& file, const std::string& header) {
    const AppPart from = appPartOf(file);
    const AppPart to = appPartOf(header);
    if (to != AppPart::Cli && to != AppPart::Gui) return std::nullopt;
    // Below app/, including app/ at all is the layer rule's to refuse.
    if (from == to || from == AppPart::Main || from == AppPart::NotApp) return std::nullopt;
    const std::string target = to == AppPart::Cli ? "app/cli" : "app/gui";
    switch (from) {
        case AppPart::Cli:
        case AppPart::Gui:
            return std::string(from == AppPart::Cli ? "app/cli" : "app/gui") + " may not include " +
                   target + " (" + header + "): share through app/session instead";
        case AppPart::Session:
            return "app/session may not include " + target + " (" + header + ")";
        default:
            break;
    }
    return "only app/main.cpp may include both front ends; not " + file + " (" + header + ")";
}

TEST(Layering, RulesKeepTheCommandLineAndTheGuiApart) {
    struct Case {
        std::string file;
        std::string header;
        bool allowed;
    };
    const std::vector<Case> cases = {
        {"app/cli/command_line.cpp", "app/gui/gui_main.h", false},
        {"app/cli/eval/eval_command.cpp", "app/gui/settings.h", false},
        {"app/gui/main_window.h", "app/cli/agent_session.h", false},
        {"app/gui/settings.cpp", "app/cli/agent_setup.h", false},
        {"app/session/session_plan.cpp", "app/cli/agent_session.h", false},
        {"app/session/model_choice.h", "app/gui/settings.h", false},
        {"app/version.cpp", "app/cli/command_line.h", false},
        {"app/cli/run_command.cpp", "app/cli/agent_setup.h", true},
        {"app/cli/eval/eval_command.cpp", "app/cli/eval/eval_runner.h", true},
        {"app/gui/main_window.cpp", "app/gui/agent_panel.h", true},
        {"app/cli/run_command.cpp", "app/session/session_plan.h", true},
        {"app/gui/main_window.h", "app/session/demo_project.h", true},
        {"app/session/demo_project.h", "app/session/session_plan.h", true},
        {"app/gui/main_window.cpp", "app/version.h", true},
        {"app/cli/agent_session.h", "agent/agent_loop.h", true},
        {"app/main.cpp", "app/cli/command_line.h", true},
        {"app/main.cpp", "app/gui/gui_main.h", true},
    };
    for (const Case& c : cases) {
        EXPECT_EQ(!frontEndViolation(c.file, c.header).has_value(), c.allowed)
            << c.file << " includes " << c.header;
    }
}

TEST(Layering, RulesCatchUpwardIncludesAndQtBelowTheEnvironment) {
    struct Case {
        Layer from;
        std::string header;
        bool quoted;
        bool allowed;
    };
    const std::vector<Case> cases = {
        {Layer::Base, "base/status.h", true, true},
        {Layer::Base, "kernels/fp16.h", true, false},
        {Layer::Base, "inference/engine.h", true, false},
        {Layer::Base, "QString", false, false},
        {Layer::Kernels, "base/status.h", true, true},
        {Layer::App, "base/utf8.h", true, true},
        {Layer::Kernels, "kernels/rms_norm.h", true, true},
        {Layer::Kernels, "inference/gguf.h", true, false},
        {Layer::Inference, "kernels/rms_norm.h", true, true},
        {Layer::Inference, "agent/loop.h", true, false},
        {Layer::Agent, "inference/engine.h", true, true},
        {Layer::Agent, "agent/env/browser.h", true, false},
        {Layer::Env, "agent/environment.h", true, true},
        {Layer::Env, "app/gui/main_window.h", true, false},
        {Layer::App, "agent/env/browser.h", true, true},
        {Layer::Inference, "QString", false, false},
        {Layer::Kernels, "QtCore/qglobal.h", false, false},
        {Layer::Agent, "QImage", false, false},
        {Layer::Env, "QWebEngineView", false, true},
        {Layer::Inference, "vector", false, true},
        {Layer::Agent, "opencv2/core.hpp", false, true},
    };
    for (const Case& c : cases) {
        EXPECT_EQ(!violation(c.from, c.header, c.quoted).has_value(), c.allowed)
            << layerName(c.from) << " includes " << c.header;
    }
}

TEST(Layering, SourceTreeFollowsTheRules) {
    const fs::path root = IRIS_SOURCE_ROOT;
    static const std::regex include(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
    int files = 0;
    std::vector<std::string> problems;
    for (const char* top : {"base", "kernels", "inference", "agent", "app"}) {
        for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
            const std::string ext = entry.path().extension().string();
            if (!entry.is_regular_file() ||
                (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh" && ext != ".in")) {
                continue;
            }
            const std::string path = fs::relative(entry.path(), root).generic_string();
            const Layer from = layerOf(path);
            ++files;
            std::ifstream in(entry.path());
            std::string line;
            for (int number = 1; std::getline(in, line); ++number) {
                std::smatch m;
                if (!std::regex_search(line, m, include)) continue;
                const bool quoted = m[1].str() == "\"";
                if (auto why = violation(from, m[2].str(), quoted)) {
                    problems.push_back(path + ":" + std::to_string(number) + ": " + *why);
                }
                if (auto why = quoted ? frontEndViolation(path, m[2].str()) : std::nullopt) {
                    problems.push_back(path + ":" + std::to_string(number) + ": " + *why);
                }
            }
        }
    }
    EXPECT_GT(files, 5) << "scanned too few files; is IRIS_SOURCE_ROOT right?";
    for (const std::string& p : problems)
        ADD_FAILURE() << p;
}

}  // namespace
