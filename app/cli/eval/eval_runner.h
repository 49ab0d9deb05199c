#pragma once
// `iris eval run`: every task of a folder in a fresh environment, the agent loop, OSWorld's
// evaluator, the result layout and resume (eval_results.h). docs/osworld.md §1-3, §6.
//
// Threads: the caller's thread must own the QApplication; runEvaluation() runs its event loop
// while N worker threads run the tasks. Browser environments are created and driven on the
// caller's thread (through agent::GuiThreadEnvironment), so N of them share one process and
// stay independent (each has its own view and off-the-record profile); desktop environments
// (their own private Xvfb each) run on the workers. Each worker opens its own SessionStore.
//
// Browser tabs: a BrowserEnvironment shows one page. chrome_open_tabs records its URLs as the
// tab list and loads the last one (the active tab, as in Chrome after opening them in order);
// chrome_close_tabs removes matching entries and, when the active one went, loads the last
// remaining tab. open_tabs_info returns the list with the active entry showing the page's
// current URL and title (the agent may have navigated in it).
#include <filesystem>
#include <iosfwd>
#include <string>

#include "app/cli/interrupt_watcher.h"
#include "app/session/model_choice.h"

namespace iris::app::eval {

enum class AnswerSource {
    Model,           // `model` answers every task, each with its own client
    Demonstrations,  // each task's "iris.demonstration" replayed through agent::ReplayClient
    Idle,            // a diagnostic agent that answers without any action (scores 0)
};

struct EvalRunOptions {
    std::filesystem::path tasks;  // a task file or a folder (agent::eval::loadTaskDir)
    std::filesystem::path out;    // results folder; a second run with the same folder resumes
    AnswerSource answers = AnswerSource::Model;
    // AnswerSource::Model. Each task gets its own client (makeModelClient), so N tasks ask the
    // model at once: a local model is loaded once and serves them all from one scheduler whose
    // pool holds a context per task running at once (the run sets model.parallel to that).
    ModelChoice model;
    std::string modelName;                   // the result-layout folder name
    std::string actionFormat = "pyautogui";  // when neither the task nor its demonstration say
    int maxSteps = 0;                        // 0: the task's iris.max_steps, else 15
    int screenshotsInHistory = 0;            // 0: the agent's default (agent::LoopOptions)
    double sleepAfterActionS = 0;
    double taskTimeoutS = 0;  // 0: none
    // A task whose agent does the same actions on an unchanged screen this many times in a row
    // is stopped, flagged "runaway_loop" and scored 0 (agent/runaway_detector.h); 0: never.
    int loopLimit = 5;
    int parallel = 1;
    int repeat = 1;  // runs of every task, each in a fresh environment (eval_results.h: layout)
    bool allowCommands = false;
    bool allowNetwork = false;
    // Desktop tasks run on a private headless sway (--env desktop:private-wayland) instead of a
    // private Xvfb; their commands get that compositor's WAYLAND_DISPLAY (desktop_processes.h).
    bool waylandDesktop = false;
    std::string shard;  // "K/N": run only shard K of N of the tasks (shards.h); empty: all
};

// Exit status: 0 when the run itself worked (whatever the scores), 3 when it could not run
// (unreadable folder, results folder not writable, a model that does not load) or was
// interrupted.
int runEvaluation(const EvalRunOptions& options, std::ostream& out, std::ostream& err,
                  InterruptWatcher* interrupts);

// `iris eval validate`: one line per task (runnable or what stops it; desktop tasks on the private
// Xvfb, or sway with `waylandDesktop`); returns 0 when every file could be read, 1 when some were
// malformed.
int validateTasks(const std::filesystem::path& tasks, bool allowCommands, bool allowNetwork,
                  bool waylandDesktop, std::ostream& out);

}  // namespace iris::app::eval
