#pragma once
// The synthetic training and evaluation data of agent/grounding/task_generator.h
// (`iris models data`): every task is played in Iris's offscreen browser, one step at a time: the
// page is rendered, the oracle (task_oracle.h) gives the correct answer from what the page shows,
// the answer goes through Iris's UI-TARS parser and is carried out with real input, and the next
// step is rendered from the resulting page. A task whose page does not reach the goal's recorded
// state is an error, so every example written is one a correct agent could have produced.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "agent/grounding/task_oracle.h"
#include "app/session/grounding_browsers.h"
#include "base/status.h"

class QObject;

namespace iris::app {

struct GroundingDataOptions {
    agent::grounding::Split split = agent::grounding::Split::Train;
    std::uint64_t seed = 1;
    int count = 100;     // tasks
    int firstIndex = 0;  // tasks firstIndex .. firstIndex + count - 1 of the split
    // Pixel budget of the image the model sees: screenshots are smart-resized
    // (inference::smartResize, factor 28) with it, and answers are in that image's pixels.
    std::int64_t maxPixels = 4096 * 28 * 28;
    // How the tasks are drawn (task_generator.h): the text to type from the word lists or
    // invented, the training family's 8 templates or 11.
    agent::grounding::TaskOptions tasks;
    std::filesystem::path out;
    // OSWorld task files (examples/synthetic-grounding/, demonstrations/, projects/) with answers
    // in screen pixels, instead of examples.jsonl and images/.
    bool osworld = false;
    // A task the oracle cannot finish in this many steps is an error. A long list's last rows
    // on a 768-pixel screen in a large look lie up to 2800 pixels down: seven scrolls of 300.
    int maxSteps = 16;
    // Each example line also gets "messages": the chat request Iris's agent loop sends at that
    // step (agent/prompt_builder.h, UI-TARS format, the loop's default screenshot window), images
    // named by their files, so that a model can be trained on exactly what it will be shown.
    bool messages = false;
};

struct GroundingDataSummary {
    int tasks = 0;
    int steps = 0;
    std::map<std::string, int> stepsPerKind;  // by stepKindName
    double seconds = 0;
};

// Called after each task with how many of `total` are done and the steps so far.
using GroundingDataProgress = std::function<void(int done, int total, int steps)>;

// Writes the data set into options.out (created; existing files of the same names are
// replaced). Examples: out/examples.jsonl (one line per step), out/images/<id>.png (the
// screenshot already resized to the model's input size), out/dataset.json (generator version,
// options, templates, counts per kind). The browsers live on the calling thread, which needs the
// QApplication (browser_application.h). `stop` is read between tasks.
Result<GroundingDataSummary> writeGroundingData(const GroundingDataOptions& options,
                                                const GroundingDataProgress& progress = {},
                                                const std::atomic<bool>* stop = nullptr);

// Joins data sets written in parts (each by writeGroundingData with the same options but its
// own firstIndex, count and out, in task order) into options.out: examples.jsonl concatenated in
// order, images (or task files) moved, dataset.json with the summed counts: the files one run
// over the whole range writes. The parts' folders are removed.
Result<GroundingDataSummary> joinGroundingDataParts(
    const GroundingDataOptions& options, const std::vector<std::filesystem::path>& parts);

// One played step: the screenshot it was planned on (screen pixels, BGR), the answer, and the
// browser showing the page before the answer is carried out.
struct PlayedStep {
    int index = 0;
    std::string control;  // the data-iris-id the answer is about (empty: a key or finished())
    const cv::Mat* screenshot = nullptr;
    const agent::grounding::PlannedStep* planned = nullptr;
    agent::GuiThreadEnvironment* browser = nullptr;
};

// Plays `task` in `browsers` (its page written into `folder`): at each step observes, probes the
// goal's control, plans the answer in `frame`, calls `onStep`, parses the answer with Iris's
// UI-TARS parser and carries it out; ends after finished(). Checks that every click lands inside
// the measured box and that the page's recorded facts and field values are the expected ones
// at the end. Returns the answers.
Result<std::vector<std::string>> playSyntheticTask(
    GroundingBrowsers& browsers, const std::filesystem::path& folder,
    const agent::grounding::SyntheticTask& task, agent::grounding::AnswerFrame frame, int maxSteps,
    const std::function<Status(const PlayedStep&)>& onStep = {});

// The image size the model sees for `screen` under the pixel budget `maxPixels`.
Result<agent::grounding::ScreenSize> modelImageSize(agent::grounding::ScreenSize screen,
                                                    std::int64_t maxPixels);

// Bumped whenever the generator, the oracle or the record format changes what is written.
inline constexpr int kGroundingDataVersion = 2;

}  // namespace iris::app
