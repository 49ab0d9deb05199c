#pragma once
// The Qt application every front end that shows a browser environment runs in: `iris gui` and
// the agent subcommands (run, demo, replay, render, eval run).
#include <memory>

class QApplication;

namespace iris::app {

// A QApplication for the browser environment: prepares Chromium for deterministic rendering,
// picks the offscreen platform when there is no display, and disables Chromium's sandbox when
// running as root (it refuses to start otherwise). Call once, before any Qt object exists.
std::unique_ptr<QApplication> makeBrowserApplication(int& argc, char** argv);

}  // namespace iris::app
