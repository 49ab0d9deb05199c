// Task files: OSWorld's full example (docs/osworld.md §1), list evaluators, the "iris" extension,
// malformed files whose errors name the JSON field path, folders of tasks, and placeholders.
#include "agent/eval/task.h"

#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "tests/inference/models/scratch_dir.h"

namespace iris::agent::eval {
namespace {

namespace fs = std::filesystem;

// docs/osworld.md §1, verbatim.
constexpr const char* kChromeExample = R"({
  "id": "7a5a7856-f1b6-42a4-ade9-1ca81ca0f263",
  "snapshot": "chrome",
  "instruction": "Can you save this webpage I'm looking at to bookmarks bar so I can come back to it later?",
  "source": "https://www.youtube.com/watch?v=ZaZ8GcTxjXA",
  "config": [
    {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
    {"type": "launch", "parameters": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]}},
    {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [
        "https://blog.eleuther.ai/rotary-embeddings/",
        "https://jalammar.github.io/illustrated-transformer/"]}}
  ],
  "trajectory": "trajectories/",
  "related_apps": ["chrome"],
  "evaluator": {
    "postconfig": [
      {"type": "launch", "parameters": {"command": ["pkill", "chrome"]}},
      {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
      {"type": "sleep",  "parameters": {"seconds": 3}}
    ],
    "func": "is_expected_bookmarks",
    "result":   {"type": "bookmarks"},
    "expected": {"type": "rule", "rules": {"type": "bookmark_bar_websites_urls",
                 "urls": ["https://jalammar.github.io/illustrated-transformer/"]}}
  },
  "proxy": true,
  "fixed_ip": false,
  "possibility_of_env_change": "low"
})";

TEST(TaskParse, ReadsOsworldFullExample) {
    auto t = parseTask(kChromeExample, "chrome.json");
    ASSERT_TRUE(t) << t.status().message();
    EXPECT_EQ(t->id, "7a5a7856-f1b6-42a4-ade9-1ca81ca0f263");
    EXPECT_EQ(t->snapshot, "chrome");
    EXPECT_EQ(t->source, "https://www.youtube.com/watch?v=ZaZ8GcTxjXA");
    EXPECT_EQ(t->trajectory, "trajectories/");
    EXPECT_EQ(t->relatedApps, std::vector<std::string>{"chrome"});
    EXPECT_TRUE(t->proxy);
    EXPECT_FALSE(t->fixedIp);
    EXPECT_EQ(t->possibilityOfEnvChange, "low");
    EXPECT_FALSE(t->hint.has_value());
    ASSERT_EQ(t->config.size(), 3u);
    const auto* launch = std::get_if<LaunchStep>(&t->config[0].params);
    ASSERT_NE(launch, nullptr);
    EXPECT_EQ(launch->command.argv,
              (std::vector<std::string>{"google-chrome", "--remote-debugging-port=1337"}));
    EXPECT_FALSE(launch->command.isString);
    EXPECT_TRUE(isBrowserPlumbingStep(t->config[0]));
    EXPECT_TRUE(isBrowserPlumbingStep(t->config[1]));
    const auto* tabs = std::get_if<ChromeOpenTabsStep>(&t->config[2].params);
    ASSERT_NE(tabs, nullptr);
    EXPECT_EQ(tabs->urls.size(), 2u);
    EXPECT_EQ(t->config[2].where, "config[2]");

    const EvaluatorSpec& ev = t->evaluator;
    EXPECT_EQ(ev.funcs, std::vector<std::string>{"is_expected_bookmarks"});
    EXPECT_FALSE(ev.funcIsList);
    EXPECT_EQ(ev.conj, Conj::And);
    ASSERT_TRUE(ev.results[0]);
    EXPECT_EQ(ev.results[0]->type, "bookmarks");
    ASSERT_TRUE(ev.expected[0]);
    EXPECT_EQ(ev.expected[0]->type, "rule");
    EXPECT_EQ(ev.expected[0]->spec["rules"]["urls"][0],
              "https://jalammar.github.io/illustrated-transformer/");
    EXPECT_EQ(ev.options[0], nlohmann::json::object());
    ASSERT_EQ(ev.postconfig.size(), 3u);
    EXPECT_TRUE(isBrowserPlumbingStep(ev.postconfig[0]));  // pkill chrome
    EXPECT_EQ(ev.postconfig[2].where, "evaluator.postconfig[2]");
    const auto* sleep = std::get_if<SleepStep>(&ev.postconfig[2].params);
    ASSERT_NE(sleep, nullptr);
    EXPECT_DOUBLE_EQ(sleep->seconds, 3.0);
    EXPECT_FALSE(t->iris.present);
    EXPECT_EQ(t->iris.environment, EnvironmentKind::Browser);
}

TEST(TaskParse, ReadsListEvaluatorWithOrAndNullOptions) {
    auto t = parseTask(R"({"id": "x", "instruction": "i",
      "evaluator": {"func": ["is_expected_url_pattern_match", "check_direct_json_object"], "conj": "or",
        "result": [{"type": "active_url_from_accessTree", "goto_prefix": "https://www."},
                   {"type": "active_tab_url_parse", "parse_keys": ["q"]}],
        "expected": [{"type": "rule", "rules": {"expected": ["^https://a"]}}, null],
        "options": [null, {"_note": "comment"}],
        "_config_note": "ignored"}})",
                       "list.json");
    ASSERT_TRUE(t) << t.status().message();
    const EvaluatorSpec& ev = t->evaluator;
    EXPECT_TRUE(ev.funcIsList);
    EXPECT_EQ(ev.conj, Conj::Or);
    ASSERT_EQ(ev.results.size(), 2u);
    EXPECT_EQ(ev.results[1]->type, "active_tab_url_parse");
    EXPECT_TRUE(ev.expected[0]);
    EXPECT_FALSE(ev.expected[1]);
    EXPECT_EQ(ev.options[0], nlohmann::json::object());
    EXPECT_EQ(ev.options[1], nlohmann::json::object());  // "_note" dropped
    EXPECT_FALSE(ev.raw.contains("_config_note"));
}

TEST(TaskParse, ReadsInfeasibleAndOtherStepTypes) {
    auto t = parseTask(
        R"({"id": "inf", "instruction": "i", "hint": "case sensitive", "env_may_change": true,
      "config": [{"type": "execute", "parameters": {"command": "echo {SCREEN_WIDTH} > /tmp/x", "shell": true, "stdout": "w.out"}},
                 {"type": "command", "parameters": {"command": "ls -l /tmp"}},
                 {"type": "download", "parameters": {"files": [{"url": "https://h/f.xlsx", "path": "/home/user/f.xlsx"}]}},
                 {"type": "open", "parameters": {"path": "/home/user/f.xlsx"}},
                 {"type": "activate_window", "parameters": {"window_name": "f.xlsx - LibreOffice Calc", "strict": true}},
                 {"type": "chrome_close_tabs", "parameters": {"urls_to_close": ["https://a"]}},
                 {"type": "googledrive", "parameters": {"settings_file": "s.json", "operation": ["delete"], "args": [{}]}}],
      "evaluator": {"func": "infeasible"}})",
        "inf.json");
    ASSERT_TRUE(t) << t.status().message();
    EXPECT_TRUE(t->evaluator.isInfeasible());
    EXPECT_EQ(t->hint, "case sensitive");
    EXPECT_EQ(t->envMayChange, true);
    const auto* exec = std::get_if<ExecuteStep>(&t->config[0].params);
    ASSERT_NE(exec, nullptr);
    EXPECT_TRUE(exec->command.shell);
    EXPECT_TRUE(exec->command.isString);
    EXPECT_EQ(exec->stdoutFile, "w.out");
    const auto* cmd = std::get_if<ExecuteStep>(&t->config[1].params);
    ASSERT_NE(cmd, nullptr);
    EXPECT_EQ(cmd->command.argv,
              (std::vector<std::string>{"ls", "-l", "/tmp"}));  // split without shell
    EXPECT_EQ(std::get<DownloadStep>(t->config[2].params).files[0].path, "/home/user/f.xlsx");
    EXPECT_EQ(std::get<OpenStep>(t->config[3].params).path, "/home/user/f.xlsx");
    EXPECT_TRUE(std::get<ActivateWindowStep>(t->config[4].params).strict);
    EXPECT_EQ(std::get<ChromeCloseTabsStep>(t->config[5].params).urls[0], "https://a");
    EXPECT_FALSE(t->config[6].supported());
    EXPECT_EQ(t->config[6].type, "googledrive");
}

TEST(TaskParse, ReadsIrisExtension) {
    auto t = parseTask(R"({"id": "web-1", "instruction": "Make the title red",
      "iris": {"environment": "browser", "project": "projects/landing", "start_page": "index.html",
               "viewport": [1024, 768], "action_format": "tools", "demonstration": "demo/web-1.json",
               "max_steps": 12},
      "evaluator": {"func": "exact_match", "result": {"type": "rule", "rules": 1}, "expected": {"type": "rule", "rules": {"expected": 1}}}})",
                       "web.json");
    ASSERT_TRUE(t) << t.status().message();
    EXPECT_TRUE(t->iris.present);
    EXPECT_EQ(t->iris.project, "projects/landing");
    EXPECT_EQ(t->iris.viewportWidth, 1024);
    EXPECT_EQ(t->iris.viewportHeight, 768);
    EXPECT_EQ(t->iris.actionFormat, "tools");
    EXPECT_EQ(t->iris.demonstration, "demo/web-1.json");
    EXPECT_EQ(t->iris.maxSteps, 12);
}

struct BadCase {
    const char* json;
    const char* message;  // expected substring
};

TEST(TaskParse, ErrorsNameTheFileAndFieldPath) {
    const BadCase cases[] = {
        {R"({"id": "x", "instruction": "i", "evaluator": {"func": ["a", "b"], "result": [{"type": "rule"}, {"type": 3}]}})",
         "bad.json: evaluator.result[1].type: expected a string, got a number"},
        {R"({"id": "x", "instruction": "i", "evaluator": {"func": ["a", "b"], "result": [{"type": "rule"}]}})",
         "bad.json: evaluator.result: has 1 entries, func has 2"},
        {R"({"id": "x", "instruction": "i", "evaluator": {"func": ["a"], "options": {"x": 1}}})",
         "bad.json: evaluator.options: expected a list (func is a list), got an object"},
        {R"({"id": "x", "instruction": "i", "evaluator": {"func": "a", "conj": "xor"}})",
         "bad.json: evaluator.conj: expected \"and\" or \"or\""},
        {R"({"id": "x", "instruction": "i", "evaluator": {"func": 7}})",
         "bad.json: evaluator.func: expected a string or a list of strings, got a number"},
        {R"({"id": "x", "instruction": "i"})", "bad.json: evaluator: missing"},
        {R"({"instruction": "i", "evaluator": {"func": "a"}})", "bad.json: id: missing"},
        {R"({"id": "x", "instruction": "i", "config": [{"type": "sleep", "parameters": {"seconds": "3"}}], "evaluator": {"func": "a"}})",
         "bad.json: config[0].parameters.seconds: expected a number, got a string"},
        {R"({"id": "x", "instruction": "i", "config": [{"type": "launch", "parameters": {"command": [1]}}], "evaluator": {"func": "a"}})",
         "bad.json: config[0].parameters.command[0]: expected a string, got a number"},
        {R"({"id": "x", "instruction": "i", "config": [{"type": "download", "parameters": {"files": [{"url": "u"}]}}], "evaluator": {"func": "a"}})",
         "bad.json: config[0].parameters.files[0].path: missing"},
        {R"({"id": "x", "instruction": "i", "evaluator": {"func": "a", "postconfig": [{"parameters": {}}]}})",
         "bad.json: evaluator.postconfig[0].type: missing"},
        {R"({"id": "x", "instruction": "i", "related_apps": "chrome", "evaluator": {"func": "a"}})",
         "bad.json: related_apps: expected a list of strings, got a string"},
        {R"({"id": "x", "instruction": "i", "proxy": "yes", "evaluator": {"func": "a"}})",
         "bad.json: proxy: expected a boolean, got a string"},
        {R"({"id": "x", "instruction": "i", "iris": {"environment": "vm"}, "evaluator": {"func": "a"}})",
         "bad.json: iris.environment: expected \"browser\" or \"desktop\""},
        {R"({"id": "x", "instruction": "i", "iris": {"viewport": [10]}, "evaluator": {"func": "a"}})",
         "bad.json: iris.viewport: expected [width, height]"},
        {R"({"id": "x", "instruction": "i", "iris": {"project": "/abs/path"}, "evaluator": {"func": "a"}})",
         "bad.json: iris.project: must be a relative path"},
        {R"({"id": "x", "instruction": "i", "iris": {"start_page": "../x.html"}, "evaluator": {"func": "a"}})",
         "bad.json: iris.start_page: must name a file inside the project"},
        {R"({"id": "x", "instruction": "i", "iris": {"max_steps": 0}, "evaluator": {"func": "a"}})",
         "bad.json: iris.max_steps: expected a positive integer"},
        {R"({"id": "x", "instruction": "i", "iris": {"action_format": "xml"}, "evaluator": {"func": "a"}})",
         "bad.json: iris.action_format: expected pyautogui, computer_13, uitars or tools"},
        {R"([1, 2])", "bad.json: (top level): expected an object, got a list"},
        {R"({"id": "x", )", "bad.json: not valid JSON at byte"},
    };
    for (const auto& c : cases) {
        auto t = parseTask(c.json, "bad.json");
        ASSERT_FALSE(t) << c.json;
        EXPECT_NE(t.status().message().find(c.message), std::string::npos)
            << "got: " << t.status().message() << "\nwant: " << c.message;
    }
}

TEST(TaskParse, MutatedFilesGiveErrorsNotCrashes) {
    // Byte flips and truncations of the full example: every outcome is a task or a message.
    const std::string base = kChromeExample;
    std::mt19937 rng(11);
    const char replacements[] = {'"', '{', '}', '[', ']', ',', ':', '0', 'x', ' ', '\\', '\0'};
    for (int i = 0; i < 2000; ++i) {
        std::string text = base;
        const int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits; ++e) {
            text[rng() % text.size()] = replacements[rng() % sizeof replacements];
        }
        if (i % 4 == 0) text.resize(rng() % text.size());
        EXPECT_NO_THROW({
            auto t = parseTask(text, "m.json");
            if (!t) {
                EXPECT_EQ(t.status().message().rfind("m.json: ", 0), 0u);
            }
        });
    }
}

class TaskDirTest : public ::testing::Test {
protected:
    void write(const fs::path& rel, const std::string& text) {
        fs::create_directories((m_dir / rel).parent_path());
        std::ofstream(m_dir / rel) << text;
    }
    inference::testing::ScratchDir m_scratch{"iris-eval-taskdir"};
    const fs::path m_dir = m_scratch.path();
};

TEST_F(TaskDirTest, FindsOsworldLayoutAndKeepsGoingPastBadFiles) {
    const std::string good =
        R"({"id": "ID", "instruction": "i", "evaluator": {"func": "infeasible"}})";
    write("evaluation_examples/examples/chrome/a.json", std::string(good).replace(8, 2, "a"));
    write("evaluation_examples/examples/os/b.json",
          R"({"id": "b", "instruction": 5, "evaluator": {"func": "x"}})");
    write("evaluation_examples/examples/os/c.json", std::string(good).replace(8, 2, "c"));
    write("evaluation_examples/test_all.json", R"({"chrome": ["a"]})");
    auto files = loadTaskDir(m_dir / "evaluation_examples");
    ASSERT_TRUE(files) << files.status().message();
    ASSERT_EQ(files->size(), 3u);
    ASSERT_TRUE((*files)[0].task) << (*files)[0].task.status().message();
    EXPECT_EQ((*files)[0].task->id, "a");
    EXPECT_EQ((*files)[0].task->domain, "chrome");
    ASSERT_FALSE((*files)[1].task);
    EXPECT_NE((*files)[1].task.status().message().find("b.json: instruction: expected a string"),
              std::string::npos)
        << (*files)[1].task.status().message();
    ASSERT_TRUE((*files)[2].task);
    EXPECT_EQ((*files)[2].task->domain, "os");
    EXPECT_TRUE((*files)[2].task->file.is_absolute());
    auto domainOnly = loadTaskDir(m_dir / "evaluation_examples/examples/os");
    ASSERT_TRUE(domainOnly);
    ASSERT_EQ(domainOnly->size(), 2u);
    ASSERT_TRUE((*domainOnly)[1].task);
    EXPECT_EQ((*domainOnly)[1].task->domain, "os");
    EXPECT_EQ((*files)[2].task->folder(),
              fs::absolute(m_dir / "evaluation_examples/examples/os").lexically_normal());
}

TEST_F(TaskDirTest, ReadsFlatFolderAndRejectsMissingFolder) {
    write("one.json", R"({"id": "one", "instruction": "i", "evaluator": {"func": "infeasible"}})");
    write("notes.txt", "not a task");
    auto files = loadTaskDir(m_dir);
    ASSERT_TRUE(files);
    ASSERT_EQ(files->size(), 1u);
    ASSERT_TRUE((*files)[0].task);
    EXPECT_EQ((*files)[0].task->domain, "");
    EXPECT_FALSE(loadTaskDir(m_dir / "nope"));
    auto missing = loadTask(m_dir / "nope.json");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.status().message().find("nope.json"), std::string::npos);
}

TEST(TaskPlaceholders, SubstitutesKnownNamesOnly) {
    const Variables vars = {{"PROJECT_DIR", "/tmp/run/p"}, {"PROJECT_URL", "file:///tmp/run/p"}};
    EXPECT_EQ(substitute("{PROJECT_DIR}/index.html {DoW} {", vars),
              "/tmp/run/p/index.html {DoW} {");
    const auto j = substituteJson(
        nlohmann::json{{"path", "{PROJECT_URL}/a"}, {"n", 3}, {"l", {"{PROJECT_DIR}"}}}, vars);
    EXPECT_EQ(j["path"], "file:///tmp/run/p/a");
    EXPECT_EQ(j["n"], 3);
    EXPECT_EQ(j["l"][0], "/tmp/run/p");
    auto step = parseConfigStep({{"type", "chrome_open_tabs"},
                                 {"parameters", {{"urls_to_open", {"{PROJECT_URL}/index.html"}}}}},
                                "config[0]");
    ASSERT_TRUE(step);
    auto s = substituteStep(*step, vars);
    ASSERT_TRUE(s);
    EXPECT_EQ(std::get<ChromeOpenTabsStep>(s->params).urls[0], "file:///tmp/run/p/index.html");
    EXPECT_EQ(s->where, "config[0]");
}

}  // namespace
}  // namespace iris::agent::eval
