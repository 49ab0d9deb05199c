#include "app/cli/eval/eval_context.h"

#include <QProcess>
#include <QProcessEnvironment>
#include <QStringList>

#include "agent/clients/http_download.h"
#include "agent/env/browser/browser_environment.h"
#include "agent/eval/page_blocks.h"

namespace iris::app::eval {
namespace {

namespace ev = agent::eval;

QStringList argumentsOf(const ev::CommandSpec& command, QString& program) {
    QStringList arguments;
    if (command.shell) {
        program = QStringLiteral("/bin/sh");
        std::string text = command.text;
        if (text.empty()) {
            for (const std::string& word : command.argv)
                text += (text.empty() ? "" : " ") + word;
        }
        arguments << QStringLiteral("-c") << QString::fromStdString(text);
        return arguments;
    }
    if (command.argv.empty()) return arguments;
    program = QString::fromStdString(command.argv.front());
    for (std::size_t i = 1; i < command.argv.size(); ++i)
        arguments << QString::fromStdString(command.argv[i]);
    return arguments;
}

// A string as a JavaScript string literal (JSON's escaping, plus the two line separators JSON
// allows raw but older JavaScript does not).
std::string jsString(const std::string& text) {
    std::string literal = nlohmann::json(text).dump();
    std::string out;
    for (std::size_t i = 0; i < literal.size(); ++i) {
        if (literal.compare(i, 3, "\xE2\x80\xA8") == 0) {
            out += "\\u2028";
            i += 2;
        } else if (literal.compare(i, 3, "\xE2\x80\xA9") == 0) {
            out += "\\u2029";
            i += 2;
        } else {
            out += literal[i];
        }
    }
    return out;
}

Result<ev::PageTextBlocks> blocksFromScriptValue(const std::string& jsonText) {
    nlohmann::json value;
    try {
        value = nlohmann::json::parse(jsonText);
        // The script's value is the JSON text of the blocks (page_blocks.h).
        if (value.is_string()) value = nlohmann::json::parse(value.get<std::string>());
    } catch (const nlohmann::json::exception& e) {
        return Status::ioError(std::string("page text blocks: the script returned no JSON: ") +
                               e.what());
    }
    return ev::pageTextBlocksFromJson(value);
}

}  // namespace

Result<ev::CommandOutput> runProcess(const ev::CommandSpec& command,
                                     const DesktopProcesses& desktop, double timeoutS) {
    IRIS_RETURN_IF_ERROR(checkToolFits(command, desktop));
    QString program;
    const QStringList arguments = argumentsOf(command, program);
    if (program.isEmpty()) return Status::invalidArgument("an empty command");
    QProcess process;
    process.setProcessEnvironment(processEnvironment(desktop));
    process.start(program, arguments);
    if (!process.waitForStarted(10000))
        return Status::ioError("cannot start " + program.toStdString() + ": " +
                               process.errorString().toStdString());
    process.closeWriteChannel();
    if (!process.waitForFinished(int(timeoutS * 1000))) {
        process.kill();
        process.waitForFinished(2000);
        return Status::ioError(program.toStdString() + ": still running after " +
                               std::to_string(int(timeoutS)) + " s");
    }
    ev::CommandOutput output;
    output.out = process.readAllStandardOutput().toStdString();
    output.err = process.readAllStandardError().toStdString();
    output.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    return output;
}

Status startProcess(const ev::CommandSpec& command, const DesktopProcesses& desktop) {
    IRIS_RETURN_IF_ERROR(checkToolFits(command, desktop));
    QString program;
    const QStringList arguments = argumentsOf(command, program);
    if (program.isEmpty()) return Status::invalidArgument("an empty command");
    QProcess process;
    process.setProcessEnvironment(processEnvironment(desktop));
    process.setProgram(program);
    process.setArguments(arguments);
    if (!process.startDetached()) return Status::ioError("cannot start " + program.toStdString());
    return Status::ok();
}

EnvironmentContext::EnvironmentContext(ContextSetup setup, agent::Environment& environment,
                                       agent::GuiThreadEnvironment* browser, GuiRunner gui)
    : m_setup(std::move(setup)),
      m_environment(environment),
      m_browser(browser),
      m_gui(std::move(gui)) {}

Status EnvironmentContext::download(const std::string& url, const std::filesystem::path& dest) {
    if (!m_setup.allowNetwork) return EvaluationContext::download(url, dest);  // refuses
    return agent::downloadFile(url, dest);
}

Result<ev::CommandOutput> EnvironmentContext::runCommand(const ev::CommandSpec& command) {
    if (!m_setup.allowCommands)
        return Status::unsupported(
            "commands run only with --allow-commands in an isolated (private desktop) "
            "environment");
    return runProcess(command, m_setup.desktop, 120);
}

Result<nlohmann::json> EnvironmentContext::evaluateInPage(const std::string& script) {
    if (!m_browser) return Status::unsupported("this task's environment has no browser");
    Result<std::string> text = Status::internal("the script did not run");
    IRIS_RETURN_IF_ERROR(m_browser->runOnGuiThread([&] {
        text =
            static_cast<agent::BrowserEnvironment&>(m_browser->inner()).evaluateJavaScript(script);
    }));
    IRIS_RETURN_IF_ERROR(text.status());
    try {
        return nlohmann::json::parse(*text);
    } catch (const nlohmann::json::exception& e) {
        return Status::ioError(std::string("the page's script returned no JSON: ") + e.what());
    }
}

Result<ev::TabInfo> EnvironmentContext::activeTab() {
    if (!m_browser) return Status::unsupported("this task's environment has no browser");
    ev::TabInfo tab;
    IRIS_RETURN_IF_ERROR(m_browser->runOnGuiThread([&] {
        auto& browser = static_cast<agent::BrowserEnvironment&>(m_browser->inner());
        tab.url = browser.url();
        tab.title = browser.title();
    }));
    return tab;
}

Result<std::vector<ev::TabInfo>> EnvironmentContext::openTabs() {
    Result<ev::TabInfo> active = activeTab();
    IRIS_RETURN_IF_ERROR(active.status());
    std::vector<ev::TabInfo> tabs = m_tabs;
    if (tabs.empty()) {
        tabs.push_back(*active);
    } else {
        tabs.back() = *active;  // the last opened tab is the page the agent worked in
    }
    return tabs;
}

Result<std::string> EnvironmentContext::activePageHtml() {
    Result<nlohmann::json> value = evaluateInPage("document.documentElement.outerHTML");
    IRIS_RETURN_IF_ERROR(value.status());
    if (!value->is_string()) return Status::ioError("the page has no document element");
    return value->get<std::string>();
}

Result<std::vector<std::string>> EnvironmentContext::queryActivePage(ev::QueryLanguage language,
                                                                     const std::string& expression,
                                                                     ev::QueryValue what) {
    const std::string read =
        what == ev::QueryValue::InputValue
            ? "(n.value === undefined || n.value === null ? '' : String(n.value))"
            : "(n.textContent || '')";
    std::string script;
    if (language == ev::QueryLanguage::Css) {
        script = "(() => { const out = []; for (const n of document.querySelectorAll(" +
                 jsString(expression) + ")) out.push(" + read + "); return out; })()";
    } else {
        script = "(() => { const r = document.evaluate(" + jsString(expression) +
                 ", document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null); const out = "
                 "[]; for (let i = 0; i < r.snapshotLength; ++i) { const n = r.snapshotItem(i); "
                 "out.push(" +
                 read + "); } return out; })()";
    }
    Result<nlohmann::json> value = evaluateInPage(script);
    IRIS_RETURN_IF_ERROR(value.status().withContext("query '" + expression + "': "));
    std::vector<std::string> texts;
    if (!value->is_array()) return Status::ioError("query '" + expression + "': no list came back");
    for (const nlohmann::json& item : *value)
        texts.push_back(item.is_string() ? item.get<std::string>() : item.dump());
    return texts;
}

Result<cv::Mat> EnvironmentContext::screenshot(const std::string& url) {
    if (url.empty()) {
        Result<agent::Observation> observation = m_environment.observe();
        IRIS_RETURN_IF_ERROR(observation.status());
        return observation->screenshot;
    }
    if (!m_browser && !m_gui) return Status::unsupported("no browser to render " + url);
    Result<cv::Mat> image = Status::internal("the page was not rendered");
    IRIS_RETURN_IF_ERROR(
        onSeparatePage(url, [&](agent::BrowserEnvironment&, const agent::Observation& settled) {
            image = settled.screenshot;
            return Status::ok();
        }));
    return image;
}

Result<ev::PageTextBlocks> EnvironmentContext::pageTextBlocks(const std::string& url) {
    const std::string script(ev::kPageTextBlocksScript);
    if (url.empty()) {
        if (!m_browser) return Status::unsupported("this task's environment has no browser");
        Result<std::string> text = Status::internal("the script did not run");
        IRIS_RETURN_IF_ERROR(m_browser->runOnGuiThread([&] {
            text = static_cast<agent::BrowserEnvironment&>(m_browser->inner())
                       .evaluateJavaScript(script);
        }));
        IRIS_RETURN_IF_ERROR(text.status());
        return blocksFromScriptValue(*text);
    }
    if (!m_gui) return Status::unsupported("no browser to render " + url);
    Result<ev::PageTextBlocks> blocks = Status::internal("the page was not rendered");
    IRIS_RETURN_IF_ERROR(onSeparatePage(url, [&](agent::BrowserEnvironment& page,
                                                 const agent::Observation&) {
        Result<std::string> text = page.evaluateJavaScript(script);
        blocks = text ? blocksFromScriptValue(*text) : Result<ev::PageTextBlocks>(text.status());
        return Status::ok();
    }));
    return blocks;
}

Result<nlohmann::json> EnvironmentContext::evaluateScript(const std::string& url,
                                                         const std::string& script) {
    if (url.empty()) return evaluateInPage(script);
    if (!m_gui) return Status::unsupported("no browser to render " + url);
    Result<nlohmann::json> value = Status::internal("the page was not rendered");
    IRIS_RETURN_IF_ERROR(onSeparatePage(url, [&](agent::BrowserEnvironment& page,
                                                 const agent::Observation&) {
        Result<std::string> text = page.evaluateJavaScript(script);
        if (!text) {
            value = text.status();
            return Status::ok();
        }
        try {
            value = nlohmann::json::parse(*text);
        } catch (const nlohmann::json::exception& e) {
            value = Status::ioError(url + ": the script returned no JSON: " + e.what());
        }
        return Status::ok();
    }));
    return value;
}

Status EnvironmentContext::onSeparatePage(
    const std::string& url,
    const std::function<Status(agent::BrowserEnvironment&, const agent::Observation&)>& use) {
    Status result = Status::internal("the page was not rendered");
    IRIS_RETURN_IF_ERROR(m_gui([&] {
        agent::BrowserOptions options;
        options.startUrl = url;
        options.viewportWidth = m_setup.viewportWidth;
        options.viewportHeight = m_setup.viewportHeight;
        Result<std::unique_ptr<agent::BrowserEnvironment>> page =
            agent::BrowserEnvironment::create(options);
        if (!page) {
            result = page.status();
            return;
        }
        if (Status reset = (*page)->reset(); !reset.isOk()) {
            result = reset;
            return;
        }
        Result<agent::Observation> settled = (*page)->observe();  // loaded, fonts, two frames
        result = settled ? use(**page, *settled) : settled.status();
    }));
    return result;
}

}  // namespace iris::app::eval
