#pragma once

namespace iris::app {

// Runs the desktop GUI until its main window closes; returns the exit code.
// Needs a Qt platform: a display, or QT_QPA_PLATFORM=offscreen.
int runGui(int argc, char** argv);

}  // namespace iris::app
