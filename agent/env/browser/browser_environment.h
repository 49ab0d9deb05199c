#pragma once
// A web page as the agent's world: Qt WebEngine rendering offscreen into a view sized exactly to
// the viewport (one observation pixel = one CSS pixel), driven by synthesized Qt input events so
// pages see real mousedown/keydown/wheel events rather than scripted ones.
//
// Threading: every member must be called on the Qt thread that created the environment (the GUI
// thread); blocking calls spin a local QEventLoop with a timeout. Other threads use
// GuiThreadEnvironment (agent/env/browser/gui_thread_environment.h).
#include <cstddef>
#include <memory>
#include <string>

#include <opencv2/core/mat.hpp>

#include "agent/environment.h"
#include "base/status.h"

class QWidget;

namespace iris::agent {

struct BrowserOptions {
    // An http(s) or file URL, or a local path: a folder means its index.html.
    std::string startUrl;
    int viewportWidth = 1280;
    int viewportHeight = 800;
    // Longest wait for a load, a settled frame or a script before the call reports an error.
    int settleTimeoutMs = 15000;
    // observe() returns the whole document (up to kMaxFullPageHeight) instead of the viewport.
    bool fullPageScreenshots = false;
};

class BrowserEnvironment final : public Environment {
public:
    static constexpr int kMaxViewportSide = 8192;
    static constexpr int kMaxFullPageHeight = 16384;
    static constexpr std::size_t kMaxTextChars = 20000;

    // Call before the QApplication exists: Chromium flags for deterministic rendering (appended
    // to QTWEBENGINE_CHROMIUM_FLAGS), software Qt Quick compositing unless QT_QUICK_BACKEND is
    // set, and the shared OpenGL contexts Qt WebEngine requires.
    static void prepareProcess();

    // Validates the options (viewport, timeout, start URL or path) and builds the view; the start
    // page is loaded by reset(). Needs a QApplication on the calling thread.
    static Result<std::unique_ptr<BrowserEnvironment>> create(BrowserOptions options);

    ~BrowserEnvironment() override;
    BrowserEnvironment(const BrowserEnvironment&) = delete;
    BrowserEnvironment& operator=(const BrowserEnvironment&) = delete;

    // A fresh off-the-record profile (no cookies, storage or cache from before) on the start URL.
    Status reset() override;
    // Waits for the load, fonts and two animation frames, then a frame that two grabs agree on.
    Result<Observation> observe() override;
    // Mouse actions take viewport pixels (outside the viewport: InvalidArgument). Key names are
    // pyautogui's; Shift upper-cases letters but knows no keyboard layout ("shift"+"1" types
    // "1"); text outside the Basic Multilingual Plane is committed as input-method text. Navigate
    // resolves relative paths in the start folder ("/a.html" is the folder's) or against the
    // start URL. File actions are Unsupported.
    ActionResult execute(const Action& action) override;
    std::string describe() const override;

    // The whole document: the view is resized to the document height (capped at
    // kMaxFullPageHeight) for the capture and restored afterwards, scroll position included.
    // Layouts that depend on the viewport height (vh units) are laid out at that height.
    Result<cv::Mat> fullPageScreenshot();

    // Runs `script` in the page's main world as a global-scope program and returns the value of
    // its last expression as JSON text ("null" for undefined). A thrown exception is an error
    // carrying its message. Pages whose Content-Security-Policy forbids eval cannot be scripted.
    Result<std::string> evaluateJavaScript(const std::string& script);

    std::string url() const;
    std::string title() const;

    // Reloads the current page bypassing the cache (after the page's files were edited on disk)
    // and waits for it to settle.
    Status reload() override;

    // The view, for showing the page in a GUI. The environment owns it and keeps it fixed at the
    // viewport size. It carries Qt::WA_DontShowOnScreen: clear that after embedding it.
    QWidget* view();

private:
    struct Impl;
    explicit BrowserEnvironment(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

}  // namespace iris::agent
