#pragma once
// Synthetic computer-use tasks for training and evaluating a small model (`iris models data`):
// pages built from templates (forms, toolbars, tables and lists with repeated row actions,
// dialogs, navigation bars, cards) in varied fonts, sizes, colours, themes and layouts, each with
// an instruction and the goals that reach it (click a control named by its label, its role or
// its position; type into a field; press a key). Templates come in two disjoint families: the
// training family and the held-out family, so that held-out pages use neither a seed stream nor
// a template the training data used. Seeded like page_generator.h (SplitMix64, integers only),
// so a seed gives the same tasks, byte for byte, everywhere.
//
// Every page carries a small state recorder (kStateRecorderScript's behaviour, inlined): trusted
// clicks on controls, key presses, submissions and the dialog's state are kept in hidden elements
// (#iris-last-click, #iris-last-key, #iris-submitted, #iris-dialog) that an evaluator reads with
// an XPath, and window.__irisProbe(id) reports a control's box, the focused control and the
// scroll position to the dataset writer.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/grounding/page_generator.h"

namespace iris::agent::grounding {

enum class Split { Train, HeldOut };
std::string_view splitName(Split split);  // "train", "heldout"

// What one step of a task asks for, as the dataset labels it.
enum class StepKind { ClickLabel, ClickRole, ClickPosition, Type, Scroll, Key, Done };
inline constexpr StepKind kStepKinds[] = {
    StepKind::ClickLabel, StepKind::ClickRole, StepKind::ClickPosition, StepKind::Type,
    StepKind::Scroll,     StepKind::Key,       StepKind::Done};
std::string_view stepKindName(StepKind kind);  // "click_label", ..., "done"

// One thing the task needs done, in order. Click and Type name a control by its data-iris-id;
// a Type goal clicks its field first unless the field already has the focus.
struct TaskGoal {
    enum class Act { Click, Type, Key };
    Act act = Act::Click;
    std::string target;  // data-iris-id (Click, Type)
    std::string text;    // Type: the text; Key: the key's name ("enter", "escape")
    // How the instruction names the target: ClickLabel, ClickRole or ClickPosition.
    StepKind naming = StepKind::ClickLabel;
};

struct SyntheticTask {
    std::string id;            // "train-000123"
    std::string templateName;  // "form/login"
    Split split = Split::Train;
    ScreenSize screen;
    std::string instruction;
    std::vector<TaskGoal> goals;
    // The recorder's facts when the goal is reached ("last_click" -> "c4", "last_key" ->
    // "Enter", "submitted" -> "c2", "dialog" -> "closed") and the fields' values (id -> text).
    std::map<std::string, std::string> expectedFacts;
    std::map<std::string, std::string> expectedValues;
    std::string html;  // a complete document
};

// The template names of a family, in a fixed order; the two families share no name.
const std::vector<std::string_view>& templateNames(Split split, bool moreTemplates = false);

// Where the text a task asks to type comes from. Lists: fixed word lists (about 70 strings to
// type in the training family), which a model can memorise instead of reading the instruction.
// Invented: names, words, addresses and file names made up from syllables (a stream of their
// own, so the pages are the same as with Lists), which a model can only copy.
enum class TypedText { Lists, Invented };

// How tasks are drawn beyond (split, seed, index). The defaults give the tasks of every data set
// made before these options existed, byte for byte.
struct TaskOptions {
    TypedText typed = TypedText::Lists;
    // The training family's 8 templates, or those and 3 more (form/contact, list/todo,
    // nav/tabs): more kinds of page for a model to generalise from. Held-out tasks never change.
    bool moreTemplates = false;
    // Every word of three letters or more that the page shows is replaced, on the page and in
    // the instruction alike, by a made-up one of about its length (a stream of its own, so the
    // layout is the same): labels no data set repeats, which a model can only match by reading
    // them letter by letter. Key names (Enter, Escape) stay.
    bool inventedLabels = false;
};

// Task `index` of the split: depends only on (split, seed, index, options). Screens: 1280x800
// for six tasks in ten, 1024x768 and 1920x1080 for two each. Templates cycle with the index.
SyntheticTask generateTask(Split split, std::uint64_t seed, int index, TaskOptions options = {});

// The hidden elements the recorder writes, by fact name.
inline constexpr std::string_view kFactNames[] = {"last_click", "last_key", "submitted", "dialog"};
// "//*[@id='iris-last-click']" for "last_click".
std::string factXPath(std::string_view fact);
// "//*[@data-iris-id='c3']", the control `id`.
std::string controlXPath(std::string_view id);

}  // namespace iris::agent::grounding
