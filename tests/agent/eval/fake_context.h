#pragma once
// An EvaluationContext over canned data: a project folder on disk, a browser state, a command
// table. Tests set the fields they need.
#include <filesystem>
#include <map>

#include "agent/eval/evaluator.h"

namespace iris::agent::eval {

class FakeContext : public EvaluationContext {
public:
    explicit FakeContext(const std::filesystem::path& root) : m_root(root) {
        std::filesystem::create_directories(root / "project");
        std::filesystem::create_directories(root / "tmp" / "cache");
        std::filesystem::create_directories(root / "task");
        vars = {{"PROJECT_DIR", (root / "project").string()},
                {"PROJECT_URL", "file://" + (root / "project").string()},
                {"TASK_DIR", (root / "task").string()},
                {"SCREEN_WIDTH", "1280"},
                {"SCREEN_HEIGHT", "800"}};
    }

    const Variables& variables() const override { return vars; }
    std::filesystem::path runTempDir() const override { return m_root / "tmp"; }
    std::filesystem::path cacheDir() const override { return m_root / "tmp" / "cache"; }
    std::filesystem::path taskDir() const override { return m_root / "task"; }
    bool lastActionWasFail() const override { return lastFail; }

    Result<CommandOutput> runCommand(const CommandSpec& command) override {
        if (!allowCommands) return EvaluationContext::runCommand(command);
        const std::string key = command.isString       ? command.text
                                : command.argv.empty() ? ""
                                                       : command.argv[0];
        auto it = commands.find(key);
        if (it == commands.end()) return Status::ioError("no such command " + key);
        return it->second;
    }

    Result<TabInfo> activeTab() override {
        if (tabs.empty()) return Status::unsupported("no browser");
        return tabs[activeIndex];
    }
    Result<std::vector<TabInfo>> openTabs() override { return tabs; }
    Result<std::string> activePageHtml() override { return html; }
    Result<std::vector<std::string>> queryActivePage(QueryLanguage language,
                                                     const std::string& expression,
                                                     QueryValue what) override {
        const std::string key = std::string(language == QueryLanguage::Css ? "css:" : "xpath:") +
                                (what == QueryValue::InputValue ? "value:" : "") + expression;
        auto it = queries.find(key);
        return it == queries.end() ? std::vector<std::string>{} : it->second;
    }
    Result<cv::Mat> screenshot(const std::string& url) override {
        auto it = screenshots.find(url);
        if (it == screenshots.end()) return Status::ioError("no screenshot of '" + url + "'");
        return it->second;
    }
    Result<PageTextBlocks> pageTextBlocks(const std::string& url) override {
        auto it = blocks.find(url);
        if (it == blocks.end()) return Status::ioError("no blocks of '" + url + "'");
        return it->second;
    }

    Variables vars;
    bool lastFail = false;
    bool allowCommands = false;
    std::map<std::string, CommandOutput> commands;
    std::vector<TabInfo> tabs;
    size_t activeIndex = 0;
    std::string html;
    std::map<std::string, std::vector<std::string>> queries;  // "css:.price" -> texts
    std::map<std::string, cv::Mat> screenshots;               // "" = the active page
    std::map<std::string, PageTextBlocks> blocks;

private:
    std::filesystem::path m_root;
};

}  // namespace iris::agent::eval
