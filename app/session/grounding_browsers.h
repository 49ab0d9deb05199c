#pragma once
// The offscreen browsers the grounding self-test and the training-data writer render their
// synthetic pages in: one per screen size, reused from page to page (a navigation, not a new
// browser), all living on one Qt thread.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "agent/env/browser/gui_thread_environment.h"
#include "agent/grounding/page_generator.h"
#include "base/status.h"

class QObject;

namespace iris::app {

class GroundingBrowsers {
public:
    // The browsers are made and driven on `anchor`'s thread.
    explicit GroundingBrowsers(QObject* anchor) : m_anchor(anchor) {}

    // The browser of `screen`, showing `page` (a file; every page of one browser must be in the
    // folder of its first) and settled.
    Result<agent::GuiThreadEnvironment*> show(agent::grounding::ScreenSize screen,
                                              const std::filesystem::path& page);

private:
    QObject* m_anchor;
    std::map<std::pair<int, int>, std::unique_ptr<agent::GuiThreadEnvironment>> m_browsers;
};

// Writes `text` (a page, a task file) to `path`, replacing it.
Status writeTextFile(const std::filesystem::path& path, const std::string& text);

// Runs `script` in the browser's page (BrowserEnvironment::evaluateJavaScript) on its thread.
Result<std::string> evaluateInPage(agent::GuiThreadEnvironment& browser, const std::string& script);

}  // namespace iris::app
