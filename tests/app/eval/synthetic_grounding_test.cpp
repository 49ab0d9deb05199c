// The synthetic grounding tasks (agent/grounding/task_generator.h) in the real offscreen browser:
// every click the writer answers lands inside the box the browser reports for its target, a
// multi-step task played through real input reaches its goal state, the writer's examples.jsonl
// is the same bytes twice, and the OSWorld evaluator of an exported task scores 1 after the
// oracle's answers and 0 when another control is clicked instead.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <QObject>

#include "agent/actions/action_format.h"
#include "agent/eval/task.h"
#include "agent/grounding/task_export.h"
#include "app/cli/eval/eval_context.h"
#include "app/session/grounding_data.h"
#include "base/temporary_folder.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;
namespace gr = agent::grounding;

// The control's box, measured here with the page's own getBoundingClientRect.
gr::Rect measure(agent::GuiThreadEnvironment& browser, const std::string& id) {
    Result<std::string> text = evaluateInPage(
        browser,
        "(() => { const r = document.querySelector('[data-iris-id=\"" + id +
            "\"]').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()");
    EXPECT_TRUE(text.isOk()) << text.status().message();
    const nlohmann::json box = nlohmann::json::parse(text.isOk() ? *text : "[0,0,0,0]");
    return {box[0].get<double>(), box[1].get<double>(), box[2].get<double>(), box[3].get<double>()};
}

std::string readFile(const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

class SyntheticGroundingTest : public ::testing::Test {
protected:
    void SetUp() override {
        Result<TemporaryFolder> folder = TemporaryFolder::create("iris-synthetic-test");
        ASSERT_TRUE(folder.isOk());
        m_folder.emplace(std::move(*folder));
    }
    fs::path folder() const { return m_folder->path(); }
    // Plays `task` with its oracle's answers (in screen pixels): the answers, and in `browser` the
    // page the task ended on.
    Result<std::vector<std::string>> play(const gr::SyntheticTask& task,
                                          agent::GuiThreadEnvironment*& browser) {
        return playSyntheticTask(m_browsers, folder(), task, {task.screen, task.screen}, 8,
                                 [&](const PlayedStep& step) -> Status {
                                     browser = step.browser;
                                     return Status::ok();
                                 });
    }

    QObject m_anchor;
    GroundingBrowsers m_browsers{&m_anchor};
    std::optional<TemporaryFolder> m_folder;
};

TEST_F(SyntheticGroundingTest, EveryClickLandsInsideTheBoxTheBrowserReports) {
    int clicks = 0;
    for (gr::Split split : {gr::Split::Train, gr::Split::HeldOut}) {
        for (int i = 0; i < 14; ++i) {
            const gr::SyntheticTask task = gr::generateTask(split, 5, i);
            Result<gr::ScreenSize> image = modelImageSize(task.screen, 1003520);  // 1280 tokens
            ASSERT_TRUE(image.isOk());
            const gr::AnswerFrame frame{task.screen, *image};
            Result<std::vector<std::string>> answers = playSyntheticTask(
                m_browsers, folder(), task, frame, 8, [&](const PlayedStep& step) -> Status {
                    if (!step.planned->answer.starts_with("click(")) return Status::ok();
                    const gr::Rect box = measure(*step.browser, step.control);
                    agent::ParseOptions options;
                    options.screenWidth = task.screen.width;
                    options.screenHeight = task.screen.height;
                    options.frame = {agent::CoordinateFrame::Kind::ResizedImage, image->width,
                                     image->height};
                    agent::ChatResponse response;
                    response.text = step.planned->answer;
                    const agent::ParsedStep parsed =
                        agent::parseModelOutput(agent::ActionFormat::UiTars, response, options);
                    EXPECT_EQ(parsed.actions.size(), 1u) << step.planned->answer;
                    const auto* click = std::get_if<agent::Click>(&parsed.actions.at(0));
                    EXPECT_TRUE(click && click->at) << step.planned->answer;
                    if (click && click->at) {
                        EXPECT_TRUE(gr::isInside(box, {click->at->x, click->at->y}))
                            << task.id << " " << step.planned->answer << " box " << box.left << ","
                            << box.top << " " << box.width << "x" << box.height;
                    }
                    ++clicks;
                    return Status::ok();
                });
            ASSERT_TRUE(answers.isOk()) << answers.status().message();
        }
    }
    EXPECT_GT(clicks, 28);
}

// The recorder's fact `name` and a field's value, read with scripts of the test's own.
std::string fact(agent::GuiThreadEnvironment& browser, const std::string& name) {
    Result<std::string> text =
        evaluateInPage(browser, "document.getElementById('iris-" + name + "').textContent");
    return text.isOk() ? nlohmann::json::parse(*text).get<std::string>() : "?";
}
std::string value(agent::GuiThreadEnvironment& browser, const std::string& id) {
    Result<std::string> text =
        evaluateInPage(browser, "document.querySelector('[data-iris-id=\"" + id + "\"]').value");
    return text.isOk() ? nlohmann::json::parse(*text).get<std::string>() : "?";
}

// The first task of `split` (seed 9) whose instruction starts with `prefix`, and its index.
std::pair<gr::SyntheticTask, int> firstTask(gr::Split split, const std::string& prefix,
                                            gr::TaskOptions options = {}) {
    for (int i = 0;; ++i) {
        gr::SyntheticTask task = gr::generateTask(split, 9, i, options);
        if (task.instruction.starts_with(prefix)) return {std::move(task), i};
    }
}

TEST_F(SyntheticGroundingTest, AMultiStepSignInReachesItsGoalThroughRealInput) {
    const gr::SyntheticTask task = firstTask(gr::Split::Train, "Sign in as ").first;
    ASSERT_EQ(task.goals.size(), 3u);
    agent::GuiThreadEnvironment* browser = nullptr;
    Result<std::vector<std::string>> answers = play(task, browser);
    ASSERT_TRUE(answers.isOk()) << answers.status().message();
    // type (the first field has the focus), click, type, click "Sign in", finished.
    ASSERT_EQ(answers->size(), 5u);
    EXPECT_TRUE((*answers)[0].starts_with("type(content="));
    EXPECT_TRUE((*answers)[1].starts_with("click("));
    EXPECT_TRUE((*answers)[2].starts_with("type(content="));
    EXPECT_TRUE((*answers)[3].starts_with("click("));
    EXPECT_EQ((*answers)[4], "finished()");
    ASSERT_NE(browser, nullptr);
    const gr::TaskGoal& user = task.goals[0];
    const gr::TaskGoal& password = task.goals[1];
    EXPECT_EQ(value(*browser, user.target), user.text);
    EXPECT_EQ(value(*browser, password.target), password.text);
    EXPECT_EQ(fact(*browser, "last-click"), task.goals[2].target);
    EXPECT_NE(task.instruction.find(user.text), std::string::npos);
}

// Invented text to type (iris models data --invented-text) reaches the fields through real
// input exactly as written, in both families: a sign-in (name and secret) and a sign-up.
TEST_F(SyntheticGroundingTest, InventedTextIsTypedAsWritten) {
    for (const auto& [split, prefix] : {std::pair{gr::Split::Train, "Sign in as "},
                                        std::pair{gr::Split::HeldOut, "Sign up as "}}) {
        const auto [task, index] = firstTask(split, prefix, {.typed = gr::TypedText::Invented});
        ASSERT_NE(task.instruction, gr::generateTask(split, 9, index).instruction);
        agent::GuiThreadEnvironment* browser = nullptr;
        Result<std::vector<std::string>> answers = play(task, browser);
        ASSERT_TRUE(answers.isOk()) << answers.status().message();
        ASSERT_NE(browser, nullptr);
        int typed = 0;
        for (const gr::TaskGoal& goal : task.goals) {
            if (goal.act != gr::TaskGoal::Act::Type) continue;
            EXPECT_EQ(value(*browser, goal.target), goal.text) << task.instruction;
            EXPECT_NE(task.instruction.find(goal.text), std::string::npos);
            ++typed;
        }
        EXPECT_EQ(typed, 2) << task.instruction;
    }
}

// The 3 more training templates (iris models data --more-templates: form/contact, list/todo,
// nav/tabs) reach their goals through real input: every click inside its box, the expected
// facts and field values at the end (playSyntheticTask checks both).
TEST_F(SyntheticGroundingTest, MoreTemplatesReachTheirGoals) {
    std::set<std::string> templates;
    for (int i = 0; i < 66; ++i) {
        if (i % 11 < 8) continue;  // the 8 templates of every data set, played above
        const gr::SyntheticTask task = gr::generateTask(
            gr::Split::Train, 6, i, {.typed = gr::TypedText::Invented, .moreTemplates = true});
        agent::GuiThreadEnvironment* browser = nullptr;
        Result<std::vector<std::string>> answers = play(task, browser);
        ASSERT_TRUE(answers.isOk())
            << task.id << " (" << task.instruction << "): " << answers.status().message();
        templates.insert(task.templateName);
    }
    EXPECT_EQ(templates, (std::set<std::string>{"form/contact", "list/todo", "nav/tabs"}));
}

// Invented labels (iris models data --invented-labels) keep every template playable: the oracle
// finds each control by its id on the relabelled page and the goals are reached through real
// input, one task of each of the 11 training templates.
TEST_F(SyntheticGroundingTest, InventedLabelsReachTheirGoals) {
    std::set<std::string> templates;
    for (int i = 0; i < 11; ++i) {
        const gr::SyntheticTask task = gr::generateTask(
            gr::Split::Train, 6, i,
            {.typed = gr::TypedText::Invented, .moreTemplates = true, .inventedLabels = true});
        ASSERT_NE(task.html,
                  gr::generateTask(gr::Split::Train, 6, i,
                                   {.typed = gr::TypedText::Invented, .moreTemplates = true})
                      .html);
        agent::GuiThreadEnvironment* browser = nullptr;
        Result<std::vector<std::string>> answers = play(task, browser);
        ASSERT_TRUE(answers.isOk())
            << task.id << " (" << task.instruction << "): " << answers.status().message();
        templates.insert(task.templateName);
    }
    EXPECT_EQ(templates.size(), 11u);
}

// Training task 4176 of seed 1 asks for a link that wraps over two lines ("Create an / account"
// on a narrow sign-in card). The centre of its bounding box lies between the two fragments, on
// no text; the oracle must aim at a fragment, or the click does nothing.
TEST_F(SyntheticGroundingTest, ALinkWrappedOverTwoLinesIsClickedOnItsText) {
    const gr::SyntheticTask task = gr::generateTask(gr::Split::Train, 1, 4176);
    ASSERT_FALSE(task.goals.empty());
    const std::string link = task.goals.back().target;
    Result<gr::ScreenSize> image = modelImageSize(task.screen, 313600);
    ASSERT_TRUE(image.isOk());
    agent::GuiThreadEnvironment* browser = nullptr;
    int fragments = 0;
    Result<std::vector<std::string>> answers = playSyntheticTask(
        m_browsers, folder(), task, {task.screen, *image}, 8, [&](const PlayedStep& step) {
            browser = step.browser;
            if (fragments == 0) {
                Result<std::string> count = evaluateInPage(
                    *step.browser, "document.querySelector('[data-iris-id=\"" + link +
                                       "\"]').getClientRects().length");
                fragments = count.isOk() ? std::stoi(*count) : -1;
            }
            return Status::ok();
        });
    ASSERT_TRUE(answers.isOk()) << answers.status().message();
    EXPECT_EQ(fragments, 2) << "the link no longer wraps: this test needs another task";
    ASSERT_NE(browser, nullptr);
    EXPECT_EQ(fact(*browser, "last-click"), link);
}

TEST_F(SyntheticGroundingTest, TheWriterGivesTheSameExamplesTwice) {
    GroundingDataOptions options;
    options.split = gr::Split::Train;
    options.seed = 4;
    options.count = 4;
    options.maxPixels = 401408;  // 512 tokens: 1280x800 becomes 784x476
    options.messages = true;
    options.out = folder() / "a";
    Result<GroundingDataSummary> first = writeGroundingData(options);
    ASSERT_TRUE(first.isOk()) << first.status().message();
    options.out = folder() / "b";
    Result<GroundingDataSummary> second = writeGroundingData(options);
    ASSERT_TRUE(second.isOk()) << second.status().message();
    const std::string a = readFile(folder() / "a" / "examples.jsonl");
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, readFile(folder() / "b" / "examples.jsonl"));
    EXPECT_EQ(readFile(folder() / "a" / "dataset.json"), readFile(folder() / "b" / "dataset.json"));

    // Every line has the fields the training script reads; images have the model's size.
    std::istringstream lines(a);
    std::string line;
    int steps = 0, labelClicks = 0;
    while (std::getline(lines, line)) {
        const nlohmann::json example = nlohmann::json::parse(line);
        for (const char* key : {"id", "task", "step", "image", "image_width", "image_height",
                                "screen_width", "screen_height", "instruction", "history", "answer",
                                "kind", "template", "split", "texts"})
            EXPECT_TRUE(example.contains(key)) << key;
        EXPECT_EQ(example["history"].size(), example["step"].get<std::size_t>());
        // The agent loop's request: the earlier answers as assistant turns, this step's image
        // last, the instruction in the first turn.
        const nlohmann::json& messages = example["messages"];
        ASSERT_FALSE(messages.empty());
        EXPECT_EQ(messages.back()["content"].back()["image"], example["image"]);
        std::vector<std::string> said;
        for (const nlohmann::json& message : messages)
            if (message["role"] == "assistant")
                said.push_back(message["content"][0]["text"].get<std::string>());
        EXPECT_EQ(nlohmann::json(said), example["history"]);
        EXPECT_NE(messages[0]["content"][0]["text"].get<std::string>().find(
                      example["instruction"].get<std::string>()),
                  std::string::npos);
        // A click's point (in the image) lies in its target's box (in the image).
        if (example["answer"].get<std::string>().starts_with("click(")) {
            int x = 0, y = 0;
            ASSERT_EQ(std::sscanf(example["answer"].get<std::string>().c_str(),
                                  "click(start_box='(%d,%d)')", &x, &y),
                      2);
            const nlohmann::json& box = example["target_box"];
            ASSERT_EQ(box.size(), 4u) << line;
            EXPECT_TRUE(box[0] <= x + 0.5 && x - 0.5 <= box[2] && box[1] <= y + 0.5 &&
                        y - 0.5 <= box[3])
                << line;
        } else {
            EXPECT_TRUE(example["target_box"].is_null()) << line;
        }
        // The page's words lie in the image; a first step that clicks the one label its
        // instruction quotes has the label's first word measured inside the box the oracle's
        // probe measured for the target (later steps may click a form's button instead).
        const double width = example["image_width"], height = example["image_height"];
        ASSERT_FALSE(example["texts"].empty()) << line;
        for (const nlohmann::json& word : example["texts"]) {
            ASSERT_EQ(word.size(), 5u) << line;
            EXPECT_TRUE(word[0] < word[2] && word[1] < word[3] && word[2] > 0 && word[3] > 0 &&
                        word[0] < width && word[1] < height)
                << word.dump();
            EXPECT_FALSE(word[4].get<std::string>().empty());
        }
        const std::string instruction = example["instruction"];
        if (example["kind"] == "click_label" && example["step"] == 0 &&
            std::count(instruction.begin(), instruction.end(), '\'') == 2) {
            const std::size_t quote = instruction.find('\'');
            const std::string label = instruction.substr(quote + 1);
            const std::string quotedWord = label.substr(0, label.find_first_of(" '"));
            const nlohmann::json& box = example["target_box"];
            bool found = false;
            for (const nlohmann::json& word : example["texts"])
                found = found || (word[4] == quotedWord && word[0] >= box[0].get<double>() - 1 &&
                                  word[2] <= box[2].get<double>() + 1 &&
                                  word[1] >= box[1].get<double>() - 1 &&
                                  word[3] <= box[3].get<double>() + 1);
            EXPECT_TRUE(found) << "'" << quotedWord << "' not measured inside the target: " << line;
            ++labelClicks;
        }
        EXPECT_TRUE(fs::is_regular_file(folder() / "a" / example["image"].get<std::string>()));
        if (example["screen_width"] == 1280) {
            EXPECT_EQ(example["image_width"], 784);
        }
        ++steps;
    }
    EXPECT_EQ(steps, first->steps);
    EXPECT_GT(labelClicks, 0);  // the check above ran
}

// The exported task's evaluator through Iris's evaluation machinery, on the live page.
double score(const gr::SyntheticTask& task, agent::GuiThreadEnvironment& browser,
             const fs::path& dir) {
    const nlohmann::json file = gr::osworldTask(task, ".", "demo.json", 5);
    Result<agent::eval::Task> parsed = agent::eval::parseTask(file.dump(), task.id + ".json");
    EXPECT_TRUE(parsed.isOk()) << parsed.status().message();
    if (!parsed.isOk()) return -1;
    eval::ContextSetup setup;
    setup.runTempDir = dir;
    setup.cacheDir = dir;
    setup.taskDir = dir;
    setup.viewportWidth = task.screen.width;
    setup.viewportHeight = task.screen.height;
    eval::EnvironmentContext context(setup, browser, &browser,
                                     [](const std::function<void()>& work) {
                                         work();
                                         return Status::ok();
                                     });
    Result<agent::eval::EvaluationOutcome> outcome = agent::eval::evaluate(*parsed, context);
    EXPECT_TRUE(outcome.isOk()) << outcome.status().message();
    return outcome.isOk() ? outcome->score : -1;
}

TEST_F(SyntheticGroundingTest, TheEvaluatorScoresZeroWhenAnotherControlIsClicked) {
    int checked = 0;
    for (int i = 0; checked < 6 && i < 60; ++i) {
        const gr::SyntheticTask task = gr::generateTask(gr::Split::HeldOut, 2, i);
        const bool click = task.goals.back().act == gr::TaskGoal::Act::Click;
        if (!click) continue;
        agent::GuiThreadEnvironment* browser = nullptr;
        Result<std::vector<std::string>> answers = playSyntheticTask(
            m_browsers, folder(), task, {task.screen, task.screen}, 8, [&](const PlayedStep& step) {
                browser = step.browser;
                return Status::ok();
            });
        ASSERT_TRUE(answers.isOk()) << answers.status().message();
        EXPECT_EQ(score(task, *browser, folder()), 1.0) << task.id;

        // The same page afresh, the goals done by the oracle except the last click, which goes
        // to another control in view.
        const std::string target = task.goals.back().target;
        gr::SyntheticTask shortened = task;
        shortened.goals.pop_back();
        shortened.expectedFacts.erase("last_click");
        shortened.expectedFacts.erase("dialog");
        Result<std::vector<std::string>> partial =
            playSyntheticTask(m_browsers, folder(), shortened, {task.screen, task.screen}, 8);
        ASSERT_TRUE(partial.isOk()) << partial.status().message();
        Result<std::string> other = evaluateInPage(
            *browser,
            "[...document.querySelectorAll('button[data-iris-id],a[data-iris-id]')]"
            ".map(e => e.dataset.irisId).find(id => id !== '" +
                target +
                "' && (() => { const r = document.querySelector('[data-iris-id=\"' + id + '\"]')"
                ".getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight"
                " && r.width > 0; })())");
        ASSERT_TRUE(other.isOk()) << other.status().message();
        const std::string wrong = nlohmann::json::parse(*other).get<std::string>();
        const gr::Rect box = measure(*browser, wrong);
        ASSERT_TRUE(browser
                        ->execute(agent::Click{
                            agent::Point{box.left + box.width / 2, box.top + box.height / 2}})
                        .status.isOk());
        EXPECT_EQ(fact(*browser, "last-click"), wrong);
        EXPECT_EQ(score(task, *browser, folder()), 0.0) << task.id << " clicked " << wrong;
        ++checked;
    }
    EXPECT_EQ(checked, 6);
}

}  // namespace
}  // namespace iris::app
