#include "app/session/grounding_browsers.h"

#include <fstream>
#include <functional>

#include <QMetaObject>
#include <QObject>
#include <QThread>

#include "agent/env/browser/browser_environment.h"

namespace iris::app {
namespace {

Status onThreadOf(QObject* anchor, const std::function<void()>& work) {
    if (QThread::currentThread() == anchor->thread()) {
        work();
        return Status::ok();
    }
    if (!QMetaObject::invokeMethod(anchor, work, Qt::BlockingQueuedConnection))
        return Status::cancelled("could not reach the browser's Qt thread");
    return Status::ok();
}

}  // namespace

Result<agent::GuiThreadEnvironment*> GroundingBrowsers::show(agent::grounding::ScreenSize screen,
                                                             const std::filesystem::path& page) {
    const std::pair key(screen.width, screen.height);
    auto found = m_browsers.find(key);
    if (found == m_browsers.end()) {
        Result<std::unique_ptr<agent::BrowserEnvironment>> made =
            Status::internal("the browser was not made");
        IRIS_RETURN_IF_ERROR(onThreadOf(m_anchor, [&] {
            agent::BrowserOptions options;
            options.startUrl = page.string();
            options.viewportWidth = screen.width;
            options.viewportHeight = screen.height;
            made = agent::BrowserEnvironment::create(options);
        }));
        IRIS_RETURN_IF_ERROR(made.status());
        auto browser = std::make_unique<agent::GuiThreadEnvironment>(std::move(*made), m_anchor);
        IRIS_RETURN_IF_ERROR(browser->reset());
        found = m_browsers.emplace(key, std::move(browser)).first;
    } else {
        // Relative to the start page's folder, where every page is.
        const agent::ActionResult loaded =
            found->second->execute(agent::Navigate{page.filename().string()});
        IRIS_RETURN_IF_ERROR(loaded.status);
    }
    IRIS_RETURN_IF_ERROR(found->second->observe().status());
    return found->second.get();
}

Status writeTextFile(const std::filesystem::path& path, const std::string& text) {
    std::ofstream file(path, std::ios::binary);
    file << text;
    file.close();
    if (!file) return Status::ioError(path.string() + ": cannot write");
    return Status::ok();
}

Result<std::string> evaluateInPage(agent::GuiThreadEnvironment& browser,
                                   const std::string& script) {
    Result<std::string> text = Status::internal("the script did not run");
    IRIS_RETURN_IF_ERROR(browser.runOnGuiThread([&] {
        text = static_cast<agent::BrowserEnvironment&>(browser.inner()).evaluateJavaScript(script);
    }));
    return text;
}

}  // namespace iris::app
