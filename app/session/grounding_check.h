#pragma once
// The grounding self-test (`iris models check`, and the GUI's "Check grounding"): renders the
// synthetic pages of agent/grounding in Iris's offscreen browser, measures each target's box in
// the rendered page, runs one real agent-loop step per page with the chosen action format and
// coordinate frame, and scores where the model clicked.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "agent/actions/action_format.h"
#include "agent/clients/model_client.h"
#include "agent/grounding/grounding_report.h"
#include "base/status.h"

class QObject;

namespace iris::app {

struct GroundingCheckOptions {
    std::uint64_t seed = 1;
    int pages = 20;
    // The screen sizes the pages cycle through; empty: defaultGroundingScreens(client).
    std::vector<agent::grounding::ScreenSize> screens;
    agent::ActionFormat format = agent::ActionFormat::ToolCalls;
    // As LoopOptions::frame: empty means the format's default.
    std::optional<agent::CoordinateFrame> frame;
    // `--coords resized`: for each page, the frame of its screen smart-resized with the
    // engine's default pixel budget (what a server running Qwen2.5-VL shows the model); wins
    // over `frame`.
    bool resizedFramePerScreen = false;
};

// The model's image budget first, when the client resizes screenshots (the image it shows for
// a 2560 x 1600 screen, a screen it sees unscaled and whole), then 1280x800, 1920x1080 and
// 1024x768.
std::vector<agent::grounding::ScreenSize> defaultGroundingScreens(const agent::ModelClient& client);

// Called after each page with its outcome and how many of `total` pages are done.
using GroundingProgress =
    std::function<void(const agent::grounding::PageOutcome& outcome, int done, int total)>;

// Runs the check. Browser pages are created and driven on `browserThread`'s thread; nullptr
// means the calling thread, which then needs the QApplication (browser_application.h). When it
// is another thread, that thread must run its event loop meanwhile (the GUI thread). `stop` is
// read between pages: the report then holds the pages that ran and says it stopped; to end a
// model call in flight, also call client.cancel(). Errors: pages that cannot be written or
// rendered, a target that cannot be measured, and a first model call that fails (a wrong
// endpoint or model should not be reported as a model that never clicks); later model errors
// are counted in the report.
Result<agent::grounding::GroundingReport> runGroundingCheck(agent::ModelClient& client,
                                                            const GroundingCheckOptions& options,
                                                            const GroundingProgress& progress = {},
                                                            const std::atomic<bool>* stop = nullptr,
                                                            QObject* browserThread = nullptr);

}  // namespace iris::app
