// The synthetic training tasks without a browser: the same seed gives the same bytes, the train
// and held-out families share neither templates nor pages, every task is reachable in at most
// five actions and names controls its page has, and the oracle's answers are the UI-TARS calls
// Iris's parser reads, at hand-computed points.
#include "agent/grounding/task_generator.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/actions/action_format.h"
#include "agent/grounding/task_export.h"
#include "agent/grounding/task_oracle.h"

namespace iris::agent::grounding {
namespace {

TEST(SyntheticTasks, SameSeedGivesIdenticalTasks) {
    for (Split split : {Split::Train, Split::HeldOut}) {
        for (int i = 0; i < 60; ++i) {
            const SyntheticTask a = generateTask(split, 7, i);
            const SyntheticTask b = generateTask(split, 7, i);
            EXPECT_EQ(a.html, b.html) << a.id;
            EXPECT_EQ(a.instruction, b.instruction) << a.id;
            EXPECT_EQ(a.expectedFacts, b.expectedFacts) << a.id;
            EXPECT_EQ(a.expectedValues, b.expectedValues) << a.id;
        }
    }
}

TEST(SyntheticTasks, OtherSeedsGiveOtherPages) {
    int same = 0;
    for (int i = 0; i < 40; ++i)
        same += generateTask(Split::Train, 1, i).html == generateTask(Split::Train, 2, i).html;
    EXPECT_EQ(same, 0);
}

TEST(SyntheticTasks, TrainAndHeldOutShareNoTemplateAndNoPage) {
    const std::vector<std::string_view>& train = templateNames(Split::Train);
    const std::vector<std::string_view>& heldOut = templateNames(Split::HeldOut);
    const std::set<std::string_view> trainSet(train.begin(), train.end());
    for (std::string_view name : heldOut)
        EXPECT_EQ(trainSet.count(name), 0u) << name;

    std::set<std::string> trainUsed, heldOutUsed, trainPages;
    for (int i = 0; i < 200; ++i) {
        const SyntheticTask t = generateTask(Split::Train, 3, i);
        EXPECT_EQ(trainSet.count(t.templateName), 1u) << t.id;
        trainUsed.insert(t.templateName);
        trainPages.insert(t.html);
    }
    for (int i = 0; i < 200; ++i) {
        // The same seed and index: the held-out stream is another one all the same.
        const SyntheticTask h = generateTask(Split::HeldOut, 3, i);
        EXPECT_EQ(trainSet.count(h.templateName), 0u) << h.id;
        EXPECT_EQ(trainPages.count(h.html), 0u) << h.id;
        heldOutUsed.insert(h.templateName);
    }
    EXPECT_EQ(trainUsed.size(), train.size());
    EXPECT_EQ(heldOutUsed.size(), heldOut.size());

    // More templates: the 8 and 3 more, none held out, all used; held-out tasks unchanged.
    const std::vector<std::string_view>& more = templateNames(Split::Train, true);
    ASSERT_EQ(more.size(), train.size() + 3);
    EXPECT_TRUE(std::equal(train.begin(), train.end(), more.begin()));
    std::set<std::string> moreUsed;
    for (int i = 0; i < 200; ++i) {
        const SyntheticTask t = generateTask(Split::Train, 3, i, {.moreTemplates = true});
        EXPECT_EQ(std::count(heldOut.begin(), heldOut.end(), t.templateName), 0) << t.id;
        moreUsed.insert(t.templateName);
        EXPECT_EQ(generateTask(Split::HeldOut, 3, i, {.moreTemplates = true}).html,
                  generateTask(Split::HeldOut, 3, i).html);
    }
    EXPECT_EQ(moreUsed.size(), more.size());
}

// Actions a task needs when nothing must be scrolled: a Type goal clicks its field first unless
// the field has the autofocus attribute; then finished().
int actionsNeeded(const SyntheticTask& task) {
    int actions = 1;
    for (const TaskGoal& goal : task.goals) {
        ++actions;
        if (goal.act == TaskGoal::Act::Type &&
            task.html.find("data-iris-id=\"" + goal.target + "\" type=\"text\" autofocus") ==
                std::string::npos)
            ++actions;
    }
    return actions;
}

TEST(SyntheticTasks, EveryTaskNamesItsControlsAndNeedsAtMostFiveActions) {
    std::set<std::string> screens;
    int multiStep = 0;
    for (const auto& [split, more] : {std::pair{Split::Train, false}, std::pair{Split::Train, true},
                                      std::pair{Split::HeldOut, false}}) {
        for (int i = 0; i < 300; ++i) {
            const SyntheticTask t = generateTask(split, 11, i, {.moreTemplates = more});
            ASSERT_FALSE(t.instruction.empty()) << t.id;
            ASSERT_FALSE(t.goals.empty()) << t.id;
            EXPECT_FALSE(t.expectedFacts.empty() && t.expectedValues.empty()) << t.id;
            for (const TaskGoal& goal : t.goals) {
                if (goal.act == TaskGoal::Act::Key) continue;
                EXPECT_NE(t.html.find("data-iris-id=\"" + goal.target + "\""), std::string::npos)
                    << t.id << " " << goal.target;
            }
            EXPECT_LE(actionsNeeded(t), 5) << t.id << ": " << t.instruction;
            multiStep += actionsNeeded(t) > 2;
            screens.insert(screenSizeText(t.screen));
        }
    }
    EXPECT_GT(multiStep, 100);
    EXPECT_EQ(screens, (std::set<std::string>{"1024x768", "1280x800", "1920x1080"}));
}

// Invented text changes what is typed and nothing else: the same pages, controls and goals, the
// instruction with the new text where the listed one was, texts that rarely repeat (the word
// lists give the training family's typing about 70 texts in all) and that any keyboard types.
TEST(SyntheticTasks, InventedTextChangesOnlyWhatIsTyped) {
    std::set<std::string> listed, invented;
    int changed = 0, trainChanged = 0;
    for (Split split : {Split::Train, Split::HeldOut}) {
        for (int i = 0; i < 400; ++i) {
            const SyntheticTask a = generateTask(split, 4, i);
            const SyntheticTask b = generateTask(split, 4, i, {.typed = TypedText::Invented});
            ASSERT_EQ(a.html, b.html) << a.id;
            ASSERT_EQ(a.goals.size(), b.goals.size()) << a.id;
            EXPECT_EQ(a.expectedFacts, b.expectedFacts) << a.id;
            std::string instruction = a.instruction;
            for (std::size_t g = 0; g < a.goals.size(); ++g) {
                const TaskGoal &was = a.goals[g], &now = b.goals[g];
                EXPECT_EQ(was.act, now.act) << a.id;
                EXPECT_EQ(was.target, now.target) << a.id;
                if (now.act != TaskGoal::Act::Type || was.text == now.text) continue;
                ++changed;
                if (split == Split::Train) {
                    ++trainChanged;
                    listed.insert(was.text);
                    invented.insert(now.text);
                }
                EXPECT_EQ(now.text.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 @._-"),
                          std::string::npos)
                    << now.text;
                EXPECT_EQ(b.expectedValues.at(now.target), now.text) << a.id;
                const std::size_t at = instruction.find(was.text);
                ASSERT_NE(at, std::string::npos) << a.id << ": " << a.instruction;
                instruction.replace(at, was.text.size(), now.text);
            }
            EXPECT_EQ(instruction, b.instruction) << a.id;
        }
    }
    EXPECT_GT(changed, 150);
    EXPECT_LT(listed.size(), 80u);
    EXPECT_GE(invented.size() * 100, std::size_t(trainChanged) * 95);
}

// The markup without its text: every tag and script, in order.
std::string tagsOf(const std::string& html) {
    std::string tags;
    for (std::size_t i = html.find('<'); i != std::string::npos; i = html.find('<', i + 1)) {
        const bool script = html.compare(i, 7, "<script") == 0;
        const std::size_t end = script ? html.find("</script>", i) : html.find('>', i);
        tags += html.substr(i, end - i + 1);
        if (script) i = end;
    }
    return tags;
}

// The strings an instruction quotes ("Click 'Save' on the 'Files' card" -> Save, Files).
std::vector<std::string> quotedIn(const std::string& instruction) {
    std::vector<std::string> out;
    for (std::size_t open = instruction.find(" '"); open != std::string::npos;
         open = instruction.find(" '", open + 1)) {
        const std::size_t close = instruction.find("'", open + 2);
        if (close == std::string::npos) break;
        out.push_back(instruction.substr(open + 2, close - open - 2));
        open = close;
    }
    return out;
}

// Invented labels change the words and nothing else: the same markup, controls, goals and facts;
// the page's words replaced (consistently: a label the instruction quotes is still on the page,
// now in its new spelling), typed text that the page shows replaced alike, key names kept.
TEST(SyntheticTasks, InventedLabelsChangeOnlyTheWords) {
    int pages = 0, relabelled = 0, quotedOnPage = 0;
    std::set<std::string> labels;
    for (Split split : {Split::Train, Split::HeldOut}) {
        for (int i = 0; i < 300; ++i) {
            const SyntheticTask a = generateTask(split, 4, i, {.moreTemplates = true});
            const SyntheticTask b =
                generateTask(split, 4, i, {.moreTemplates = true, .inventedLabels = true});
            ASSERT_EQ(tagsOf(a.html), tagsOf(b.html)) << a.id;
            ASSERT_EQ(a.goals.size(), b.goals.size()) << a.id;
            EXPECT_EQ(a.expectedFacts, b.expectedFacts) << a.id;
            for (std::size_t g = 0; g < a.goals.size(); ++g) {
                EXPECT_EQ(a.goals[g].act, b.goals[g].act) << a.id;
                EXPECT_EQ(a.goals[g].target, b.goals[g].target) << a.id;
                if (b.goals[g].act == TaskGoal::Act::Key) {
                    EXPECT_EQ(a.goals[g].text, b.goals[g].text);
                }
                if (b.goals[g].act == TaskGoal::Act::Type) {
                    EXPECT_EQ(b.expectedValues.at(b.goals[g].target), b.goals[g].text) << a.id;
                }
            }
            ++pages;
            relabelled += a.html != b.html;
            for (const char* key : {"Enter", "Escape"})
                EXPECT_EQ(a.instruction.find(key) != std::string::npos,
                          b.instruction.find(key) != std::string::npos)
                    << a.instruction << " / " << b.instruction;
            const std::vector<std::string> was = quotedIn(a.instruction),
                                           now = quotedIn(b.instruction);
            ASSERT_EQ(was.size(), now.size()) << a.instruction << " / " << b.instruction;
            for (std::size_t q = 0; q < was.size(); ++q) {
                if (a.html.find(">" + was[q] + "<") == std::string::npos) continue;
                EXPECT_NE(b.html.find(">" + now[q] + "<"), std::string::npos)
                    << b.id << ": '" << now[q] << "' (was '" << was[q] << "') not on the page";
                if (was[q].size() >= 3) {
                    EXPECT_NE(was[q], now[q]) << a.id;
                }
                ++quotedOnPage;
                labels.insert(now[q]);
            }
        }
    }
    EXPECT_EQ(relabelled, pages);
    EXPECT_GT(quotedOnPage, 150);
    // Labels that repeat rarely: the word lists give the training family a few dozen.
    EXPECT_GT(labels.size() * 10, std::size_t(quotedOnPage) * 8);
}

TEST(TaskOracle, ClicksTheBoxCentreInTheResizedImage) {
    SyntheticTask task;
    task.id = "t";
    task.goals = {{TaskGoal::Act::Click, "c4", {}, StepKind::ClickPosition}};
    ControlProbe probe{Rect{100, 200, 50, 20}, "", 1280, 800};
    // Centre (125, 210) in a 1280x800 screen shown as 1288x812: 125 * 1288 / 1280 = 125.78,
    // 210 * 812 / 800 = 213.15.
    const AnswerFrame frame{{1280, 800}, {1288, 812}};
    Result<PlannedStep> step = planStep(task, 0, probe, frame);
    ASSERT_TRUE(step.isOk()) << step.status().message();
    EXPECT_EQ(step->answer, "click(start_box='(126,213)')");
    EXPECT_EQ(step->kind, StepKind::ClickPosition);
    EXPECT_TRUE(step->finishesGoal);

    // Iris's parser maps it back inside the box.
    ParseOptions options;
    options.screenWidth = 1280;
    options.screenHeight = 800;
    options.frame = {CoordinateFrame::Kind::ResizedImage, 1288, 812};
    ChatResponse response;
    response.text = step->answer;
    const ParsedStep parsed = parseModelOutput(ActionFormat::UiTars, response, options);
    ASSERT_EQ(parsed.actions.size(), 1u);
    const auto* click = std::get_if<Click>(&parsed.actions[0]);
    ASSERT_NE(click, nullptr);
    ASSERT_TRUE(click->at.has_value());
    EXPECT_TRUE(isInside(*probe.box, {click->at->x, click->at->y}));
}

TEST(TaskOracle, ScrollsToAControlBelowTheFoldThenTypesOnceItHasTheFocus) {
    SyntheticTask task;
    task.id = "t";
    task.goals = {{TaskGoal::Act::Type, "c2", "hello 'you'", StepKind::ClickRole},
                  {TaskGoal::Act::Key, {}, "enter", StepKind::Key}};
    const AnswerFrame frame{{1280, 800}, {1280, 800}};
    Result<PlannedStep> scroll = planStep(task, 0, {Rect{10, 900, 100, 30}, "", 1280, 800}, frame);
    ASSERT_TRUE(scroll.isOk());
    EXPECT_EQ(scroll->answer, "scroll(start_box='(640,400)', direction='down')");
    EXPECT_EQ(scroll->kind, StepKind::Scroll);
    EXPECT_FALSE(scroll->finishesGoal);
    Result<PlannedStep> up = planStep(task, 0, {Rect{10, -40, 100, 30}, "", 1280, 800}, frame);
    EXPECT_EQ(up->answer, "scroll(start_box='(640,400)', direction='up')");
    Result<PlannedStep> click = planStep(task, 0, {Rect{10, 100, 100, 30}, "c1", 1280, 800}, frame);
    EXPECT_EQ(click->answer, "click(start_box='(60,115)')");
    EXPECT_FALSE(click->finishesGoal);
    Result<PlannedStep> type = planStep(task, 0, {Rect{10, 100, 100, 30}, "c2", 1280, 800}, frame);
    EXPECT_EQ(type->answer, "type(content='hello \\'you\\'')");
    EXPECT_EQ(type->kind, StepKind::Type);
    EXPECT_TRUE(type->finishesGoal);
    EXPECT_EQ(planStep(task, 1, {}, frame)->answer, "hotkey(key='enter')");
    Result<PlannedStep> done = planStep(task, 2, {}, frame);
    EXPECT_EQ(done->answer, "finished()");
    EXPECT_TRUE(done->done);

    // Every answer is one action to Iris's parser; the typed text keeps its quotes.
    ParseOptions options;
    options.screenWidth = 1280;
    options.screenHeight = 800;
    options.frame = {CoordinateFrame::Kind::ResizedImage, 1280, 800};
    for (const PlannedStep& s : {*scroll, *click, *type, *planStep(task, 1, {}, frame), *done}) {
        ChatResponse response;
        response.text = s.answer;
        const ParsedStep parsed = parseModelOutput(ActionFormat::UiTars, response, options);
        EXPECT_TRUE(parsed.errors.empty()) << s.answer;
        EXPECT_EQ(parsed.actions.size(), 1u) << s.answer;
    }
    ChatResponse typed;
    typed.text = type->answer;
    const ParsedStep typedStep = parseModelOutput(ActionFormat::UiTars, typed, options);
    ASSERT_EQ(typedStep.actions.size(), 1u);
    const auto* text = std::get_if<TypeText>(&typedStep.actions[0]);
    ASSERT_NE(text, nullptr);
    EXPECT_EQ(text->text, "hello 'you'");
}

TEST(TaskOracle, RefusesAMissingControl) {
    SyntheticTask task;
    task.id = "t";
    task.goals = {{TaskGoal::Act::Click, "c9", {}, StepKind::ClickLabel}};
    EXPECT_FALSE(
        planStep(task, 0, {std::nullopt, "", 1280, 800}, {{1280, 800}, {1280, 800}}).isOk());
}

TEST(TaskExport, EvaluatorReadsFactsAndValuesWithExistingGetters) {
    SyntheticTask task;
    task.id = "heldout-000001";
    task.expectedFacts = {{"last_click", "c5"}};
    task.expectedValues = {{"c2", "Ada"}};
    const nlohmann::json e = taskEvaluator(task);
    EXPECT_EQ(e["conj"], "and");
    EXPECT_EQ(e["func"], nlohmann::json({"check_direct_json_object", "check_direct_json_object"}));
    EXPECT_EQ(e["result"][0]["xpathObject"]["//*[@id='iris-last-click']"], "last_click");
    EXPECT_EQ(e["result"][1]["inputObject"]["//*[@data-iris-id='c2']"], "c2");
    EXPECT_EQ(e["expected"][0]["rules"]["expected"]["last_click"], "c5");
    EXPECT_EQ(e["expected"][1]["rules"]["expected"]["c2"], "Ada");

    task.expectedValues.clear();
    EXPECT_EQ(taskEvaluator(task)["func"], "check_direct_json_object");
}

}  // namespace
}  // namespace iris::agent::grounding
