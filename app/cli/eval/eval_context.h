#pragma once
// agent::eval::EvaluationContext over Iris's real environments: the files of the task's work
// folder, the browser page (URL, tabs, HTML, queries, text blocks, screenshots) or the private
// desktop (screenshots, commands when the run allows them).
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "agent/env/browser/browser_environment.h"
#include "agent/env/browser/gui_thread_environment.h"
#include "agent/environment.h"
#include "agent/eval/evaluator.h"
#include "app/cli/eval/desktop_processes.h"

namespace iris::app::eval {

// Runs work on the Qt GUI thread and waits for it (directly when already there).
using GuiRunner = std::function<Status(const std::function<void()>&)>;

struct ContextSetup {
    agent::eval::Variables variables;
    std::filesystem::path runTempDir;
    std::filesystem::path cacheDir;
    std::filesystem::path taskDir;
    int viewportWidth = 1280;
    int viewportHeight = 800;
    bool allowCommands = false;  // and the environment is isolated (a private desktop)
    bool allowNetwork = false;   // http(s) gold files (cloud_file)
    DesktopProcesses desktop;    // how commands reach the private desktop
};

class EnvironmentContext final : public agent::eval::EvaluationContext {
public:
    // `browser` is the GuiThreadEnvironment around a BrowserEnvironment, or null (desktop);
    // `environment` is what observe() is called on. Both outlive the context.
    EnvironmentContext(ContextSetup setup, agent::Environment& environment,
                       agent::GuiThreadEnvironment* browser, GuiRunner gui);

    // The tab list chrome_open_tabs/chrome_close_tabs keep (eval_runner.h explains the mapping).
    std::vector<agent::eval::TabInfo>& tabs() { return m_tabs; }
    void setLastActionWasFail(bool fail) { m_lastFail = fail; }

    const agent::eval::Variables& variables() const override { return m_setup.variables; }
    std::filesystem::path runTempDir() const override { return m_setup.runTempDir; }
    std::filesystem::path cacheDir() const override { return m_setup.cacheDir; }
    std::filesystem::path taskDir() const override { return m_setup.taskDir; }
    bool lastActionWasFail() const override { return m_lastFail; }

    Result<agent::eval::CommandOutput> runCommand(const agent::eval::CommandSpec& command) override;
    Status download(const std::string& url, const std::filesystem::path& dest) override;

    Result<agent::eval::TabInfo> activeTab() override;
    Result<std::vector<agent::eval::TabInfo>> openTabs() override;
    Result<std::string> activePageHtml() override;
    Result<std::vector<std::string>> queryActivePage(agent::eval::QueryLanguage language,
                                                     const std::string& expression,
                                                     agent::eval::QueryValue what) override;
    Result<cv::Mat> screenshot(const std::string& url) override;
    Result<agent::eval::PageTextBlocks> pageTextBlocks(const std::string& url) override;

    // The JSON value of `script` in the active page (`url` empty) or in `url` rendered in a page
    // of its own: what the reward-hacking check reads (hygiene.h).
    Result<nlohmann::json> evaluateScript(const std::string& url, const std::string& script);

private:
    // The JSON value of `script` in the active page.
    Result<nlohmann::json> evaluateInPage(const std::string& script);
    // Renders `url` in a page of its own (the task's viewport), on the GUI thread, and calls
    // `use` with it once it has settled: what getters of another page than the active one read.
    Status onSeparatePage(
        const std::string& url,
        const std::function<Status(agent::BrowserEnvironment&, const agent::Observation&)>& use);

    ContextSetup m_setup;
    agent::Environment& m_environment;
    agent::GuiThreadEnvironment* m_browser;
    GuiRunner m_gui;
    std::vector<agent::eval::TabInfo> m_tabs;
    bool m_lastFail = false;
};

// Runs a command (argv, or a string through /bin/sh -c when `shell`) and waits up to
// `timeoutS` seconds, on `desktop` (desktop_processes.h); an X11-only tool on Wayland is refused.
Result<agent::eval::CommandOutput> runProcess(const agent::eval::CommandSpec& command,
                                              const DesktopProcesses& desktop, double timeoutS);
// Starts a command without waiting.
Status startProcess(const agent::eval::CommandSpec& command, const DesktopProcesses& desktop);

}  // namespace iris::app::eval
