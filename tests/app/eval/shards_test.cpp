// --shard K/N and auto, the cost estimate and the assignment (app/cli/eval/shards.h), and
// `iris eval merge` on hand-made shard folders (app/cli/eval/shard_merge.h).
#include "app/cli/eval/shards.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>

#include <gtest/gtest.h>

#include "agent/recording/session_store.h"
#include "app/cli/eval/eval_results.h"
#include "app/cli/eval/shard_merge.h"
#include "tests/inference/models/scratch_dir.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;
namespace ev = agent::eval;

// Sets (or with nullptr unsets) an environment variable for the scope, then restores it.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : m_name(name) {
        if (const char* old = std::getenv(name)) m_old = old;
        if (value) {
            ::setenv(name, value, 1);
        } else {
            ::unsetenv(name);
        }
    }
    ~ScopedEnv() {
        if (m_old) {
            ::setenv(m_name, m_old->c_str(), 1);
        } else {
            ::unsetenv(m_name);
        }
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

TEST(EvalShards, ParsesKOfN) {
    EXPECT_EQ(*parseShard("1/1"), (ShardSpec{1, 1}));
    EXPECT_EQ(*parseShard("3/7"), (ShardSpec{3, 7}));
    EXPECT_EQ(*parseShard("1000/1000"), (ShardSpec{1000, 1000}));
    EXPECT_EQ(parseShard("3/7")->text(), "3/7");
    for (const char* bad : {"", "3", "0/3", "4/3", "1/0", "1/1001", "-1/3", " 1/3", "1/3 ", "a/b",
                            "1/2/3", "1.5/3", "/3", "1/"}) {
        const Result<ShardSpec> parsed = parseShard(bad);
        ASSERT_FALSE(parsed) << bad;
        EXPECT_NE(parsed.status().message().find("'" + std::string(bad) + "'"), std::string::npos)
            << parsed.status().message();
    }
    EXPECT_NE(parseShard("4/3").status().message().find("K must be from 1 to 3"),
              std::string::npos);
    EXPECT_NE(parseShard("1/1001").status().message().find("N must be from 1 to 1000"),
              std::string::npos);
}

TEST(EvalShards, AutoTakesTheIndexedJobsVariables) {
    {
        ScopedEnv index("JOB_COMPLETION_INDEX", "2");
        ScopedEnv count("IRIS_SHARD_COUNT", "5");
        EXPECT_EQ(*resolveShard("auto"), (ShardSpec{3, 5}));  // 0-based index 2: shard 3
        EXPECT_EQ(*resolveShard("1/5"), (ShardSpec{1, 5}));   // K/N ignores the variables
    }
    struct Case {
        const char* index;
        const char* count;
        std::string expected;  // in the message
    };
    const Case cases[] = {
        {nullptr, "3", "JOB_COMPLETION_INDEX is not set"},
        {"0", nullptr, "IRIS_SHARD_COUNT is not set"},
        {"x", "3", "JOB_COMPLETION_INDEX='x'"},
        {"3", "3", "JOB_COMPLETION_INDEX='3': expected a number from 0 to 2"},
        {"-1", "3", "JOB_COMPLETION_INDEX='-1'"},
        {"0", "0", "IRIS_SHARD_COUNT='0'"},
        {"0", "1001", "IRIS_SHARD_COUNT='1001'"},
        {"0", "three", "IRIS_SHARD_COUNT='three'"},
    };
    for (const Case& c : cases) {
        ScopedEnv index("JOB_COMPLETION_INDEX", c.index);
        ScopedEnv count("IRIS_SHARD_COUNT", c.count);
        const Result<ShardSpec> shard = resolveShard("auto");
        ASSERT_FALSE(shard) << c.expected;
        EXPECT_NE(shard.status().message().find(c.expected), std::string::npos)
            << shard.status().message();
    }
}

TaskPlan browserPlan(const std::string& key, int maxSteps) {
    TaskPlan plan;
    plan.key = key;
    plan.task.emplace();
    plan.task->iris.maxSteps = maxSteps;
    plan.task->evaluator.funcs = {"exact_match"};
    return plan;
}

TEST(EvalShards, CostFollowsTheFormula) {
    // Browser: 2 + 3 per step; the task's iris.max_steps unless --max-steps is given.
    EXPECT_EQ(estimatedTaskCost(browserPlan("a", 10), 0), 2 + 3 * 10);
    EXPECT_EQ(estimatedTaskCost(browserPlan("a", 10), 4), 2 + 3 * 4);
    EXPECT_EQ(estimatedTaskCost(browserPlan("a", 0), 0), 2 + 3 * 15);
    // Desktop: 10 + 5 per step.
    TaskPlan desktop = browserPlan("d", 0);
    desktop.task->iris.environment = ev::EnvironmentKind::Desktop;
    EXPECT_EQ(estimatedTaskCost(desktop, 0), 10 + 5 * 15);
    // Sleep steps (rounded up, set-up and postconfig) and visual metrics.
    TaskPlan slow = browserPlan("s", 5);
    slow.task->config.push_back({"sleep", {}, ev::SleepStep{2.5}, "config[0]"});
    slow.task->evaluator.postconfig.push_back(
        {"sleep", {}, ev::SleepStep{1}, "evaluator.postconfig[0]"});
    slow.task->evaluator.funcs = {"compare_images", "design2code", "exact_match",
                                  "check_structure_sim"};
    EXPECT_EQ(estimatedTaskCost(slow, 0), 2 + 3 * 5 + 3 + 1 + 3 * 5);
    // A file that did not parse costs a default browser task.
    TaskPlan broken;
    broken.key = "broken.json";
    broken.loadError = "not JSON";
    EXPECT_EQ(estimatedTaskCost(broken, 0), 2 + 3 * 15);
    EXPECT_EQ(estimatedTaskCost(broken, 6), 2 + 3 * 6);
}

TEST(EvalShards, AssignsLongestFirstToTheLeastLoaded) {
    // By hand, N=3, costs a10 b8 c7 d6 e5 f4 (totals after each):
    // a->1 (10,0,0); b->2 (10,8,0); c->3 (10,8,7); d->3 (10,8,13); e->2 (10,13,13);
    // f->1 (14,13,13).
    const std::vector<std::string> keys = {"f", "a", "d", "c", "e", "b"};
    const std::vector<std::int64_t> costs = {4, 10, 6, 7, 5, 8};
    EXPECT_EQ(assignShards(costs, keys, 3), (std::vector<int>{1, 1, 3, 3, 2, 2}));
    // Equal costs go by key, ties between shards to the lowest: a->1, b->2, c->1, d->2.
    EXPECT_EQ(assignShards({5, 5, 5, 5}, {"d", "c", "b", "a"}, 2), (std::vector<int>{2, 1, 2, 1}));
    // One shard runs everything; more shards than tasks leave the last ones empty.
    EXPECT_EQ(assignShards(costs, keys, 1), (std::vector<int>(6, 1)));
    EXPECT_EQ(assignShards({3, 9}, {"x", "y"}, 5), (std::vector<int>{2, 1}));
}

TEST(EvalShards, AssignmentIsDeterministicCompleteAndBalanced) {
    std::uint32_t seed = 12345;  // a fixed LCG: the same "random" suite every run
    auto next = [&seed] {
        seed = seed * 1664525u + 1013904223u;
        return seed >> 8;
    };
    std::vector<std::int64_t> costs;
    std::vector<std::string> keys;
    for (int i = 0; i < 300; ++i) {
        costs.push_back(5 + std::int64_t(next() % 120));
        keys.push_back("task-" + std::to_string(next() % 100000) + "-" + std::to_string(i));
    }
    const std::int64_t largest = *std::max_element(costs.begin(), costs.end());
    for (const int n : {1, 2, 3, 7, 50, 300, 1000}) {
        const std::vector<int> shards = assignShards(costs, keys, n);
        ASSERT_EQ(shards.size(), costs.size());
        std::vector<std::int64_t> totals(std::size_t(n), 0);
        for (std::size_t i = 0; i < shards.size(); ++i) {
            ASSERT_GE(shards[i], 1);
            ASSERT_LE(shards[i], n);
            totals[std::size_t(shards[i] - 1)] += costs[i];
        }
        const auto [least, most] = std::minmax_element(totals.begin(), totals.end());
        EXPECT_LE(*most - *least, largest) << n << " shards";
        // The same suite listed in another order gets the same assignment.
        std::vector<std::int64_t> reversedCosts(costs.rbegin(), costs.rend());
        std::vector<std::string> reversedKeys(keys.rbegin(), keys.rend());
        std::vector<int> reversed = assignShards(reversedCosts, reversedKeys, n);
        std::reverse(reversed.begin(), reversed.end());
        EXPECT_EQ(reversed, shards) << n << " shards";
    }
}

TEST(EvalShards, SelectShardKeepsItsShareAndWritesTheSuite) {
    const inference::testing::ScratchDir scratch("iris-eval-shards-test");
    std::vector<TaskPlan> suite;
    for (int i = 0; i < 7; ++i)
        suite.push_back(browserPlan("t" + std::to_string(i) + ".json", 2 + i));
    TaskPlan broken;
    broken.key = "broken.json";
    broken.loadError = "not JSON";
    suite.push_back(broken);

    std::vector<std::string> seen;
    for (int k = 1; k <= 3; ++k) {
        const fs::path out = scratch.path() / ("s" + std::to_string(k));
        fs::create_directories(out);
        std::vector<TaskPlan> plans = suite;
        const std::string shard = std::to_string(k) + "/3";
        ASSERT_TRUE(selectShard(shard, 0, "suite", out, plans).isOk());
        const Result<ShardManifest> manifest = loadShardManifest(out);
        ASSERT_TRUE(manifest) << manifest.status().message();
        EXPECT_EQ(manifest->shard, (ShardSpec{k, 3}));
        EXPECT_EQ(manifest->tasksPath, "suite");
        ASSERT_EQ(manifest->tasks.size(), suite.size());
        for (const TaskPlan& plan : plans) {
            seen.push_back(plan.key);
            const auto entry = std::find_if(manifest->tasks.begin(), manifest->tasks.end(),
                                            [&](const ShardTask& t) { return t.file == plan.key; });
            ASSERT_NE(entry, manifest->tasks.end());
            EXPECT_EQ(entry->shard, k);
        }
        // Resuming with the same shard is fine; another shard in the same folder is not.
        std::vector<TaskPlan> again = suite;
        EXPECT_TRUE(selectShard(shard, 0, "suite", out, again).isOk());
        const Status other = selectShard(k == 1 ? "2/3" : "1/3", 0, "suite", out, again);
        EXPECT_NE(other.message().find("holds shard " + shard), std::string::npos)
            << other.message();
    }
    std::sort(seen.begin(), seen.end());
    std::vector<std::string> all;
    for (const TaskPlan& plan : suite)
        all.push_back(plan.key);
    std::sort(all.begin(), all.end());
    EXPECT_EQ(seen, all);  // every task once
}

// A shard folder as `iris eval run --shard K/3` leaves it, for a suite of tasks a, b and c
// (assigned a->1, b->2, c->3), holding the results of `files` with one session each.
struct FakeShard {
    fs::path dir;
};

ShardManifest suiteManifest(int k) {
    return {{k, 3}, "suite", {{"a.json", 1, 9}, {"b.json", 2, 8}, {"c.json", 3, 7}}};
}

TaskResult fakeTask(const std::string& file, double score) {
    TaskResult task;
    task.id = file.substr(0, 1);
    task.domain = "web";
    task.file = file;
    task.status = TaskStatus::Scored;
    task.score = score;
    task.steps = 2;
    task.resultDir = "pyautogui/demo/web/" + task.id;
    return task;
}

fs::path makeShard(const fs::path& dir, int k, const std::vector<std::string>& files,
                   const std::string& model = "demo") {
    fs::create_directories(dir);
    EXPECT_TRUE(saveShardManifest(suiteManifest(k), dir).isOk());
    RunResults results;
    results.settings.model = model;
    results.settings.shard = std::to_string(k) + "/3";
    results.tasksTotal = int(files.size());
    agent::SessionStoreOptions quiet;
    quiet.redactor = agent::Redactor();
    Result<agent::SessionStore> store = agent::SessionStore::open(dir / "sessions.db", quiet);
    EXPECT_TRUE(store) << store.status().message();
    for (const std::string& file : files) {
        TaskResult task = fakeTask(file, file == "b.json" ? 0.0 : 1.0);
        // Sessions of an earlier task first, so that ids differ between shards' databases.
        (void)store->createSession({"filler", "browser", "demo", "pyautogui", {}, 0});
        task.session = *store->createSession({"do " + file, "browser", "demo", "pyautogui", {}, 0});
        EXPECT_TRUE(store->finishSession(task.session, agent::SessionStatus::Done, 1.0).isOk());
        fs::create_directories(dir / task.resultDir);
        std::ofstream(dir / task.resultDir / "result.txt") << *task.score << '\n';
        results.put(task);
    }
    EXPECT_TRUE(saveRunResults(results, dir).isOk());
    return dir;
}

std::string mergeError(const fs::path& out, const std::vector<fs::path>& dirs) {
    const Result<std::string> merged = mergeShards(out, dirs);
    EXPECT_FALSE(merged) << "merge succeeded";
    return merged ? std::string() : merged.status().message();
}

TEST(EvalMerge, GathersResultsFoldersAndSessions) {
    const inference::testing::ScratchDir scratch("iris-eval-merge-test");
    const fs::path& root = scratch.path();
    const std::vector<fs::path> dirs = {makeShard(root / "s2", 2, {"b.json"}),
                                        makeShard(root / "s1", 1, {"a.json"}),
                                        makeShard(root / "s3", 3, {"c.json"})};
    const Result<std::string> summary = mergeShards(root / "merged", dirs);
    ASSERT_TRUE(summary) << summary.status().message();
    EXPECT_NE(summary->find("66.67% of 3 attempted (2/3)"), std::string::npos) << *summary;

    const Result<RunResults> merged = loadRunResults(root / "merged");
    ASSERT_TRUE(merged) << merged.status().message();
    EXPECT_EQ(merged->settings.shard, "");
    EXPECT_EQ(merged->settings.model, "demo");
    EXPECT_EQ(merged->tasksTotal, 3);
    ASSERT_EQ(merged->tasks.size(), 3u);
    Result<agent::SessionStore> store = agent::SessionStore::open(root / "merged" / "sessions.db");
    ASSERT_TRUE(store);
    EXPECT_EQ(store->listSessions()->size(), 6u);  // each shard's filler and task session
    for (const std::string file : {"a.json", "b.json", "c.json"}) {
        const TaskResult* task = merged->find(file);
        ASSERT_NE(task, nullptr) << file;
        EXPECT_EQ(readResultTxt(root / "merged" / task->resultDir), file == "b.json" ? 0.0 : 1.0);
        const Result<agent::SessionRecord> session = store->loadSession(task->session);
        ASSERT_TRUE(session) << file;
        EXPECT_EQ(session->summary.instruction, "do " + file);
        EXPECT_EQ(session->summary.status, agent::SessionStatus::Done);
    }
    EXPECT_TRUE(fs::exists(root / "merged" / "report.html"));
    // A second merge into the now full folder is refused.
    EXPECT_NE(mergeError(root / "merged", dirs).find("merged is not empty"), std::string::npos);
}

TEST(EvalMerge, RefusesWhatIsNotOneCompleteSuite) {
    const inference::testing::ScratchDir scratch("iris-eval-merge-test");
    const fs::path& root = scratch.path();
    const fs::path s1 = makeShard(root / "s1", 1, {"a.json"});
    const fs::path s2 = makeShard(root / "s2", 2, {"b.json"});
    const fs::path s3 = makeShard(root / "s3", 3, {"c.json"});
    const fs::path out = root / "out";
    auto has = [](const std::string& message, const std::string& part) {
        return message.find(part) != std::string::npos;
    };

    // A task no folder has, named with its shard.
    std::string e = mergeError(out, {s1, s3});
    EXPECT_TRUE(has(e, "task b.json is missing") && has(e, "shard 2/3")) << e;
    // The same task in two folders.
    const fs::path s2b = makeShard(root / "s2b", 2, {"b.json", "a.json"});
    e = mergeError(out, {s1, s2b, s3});
    EXPECT_TRUE(has(e, "task a.json is in two shard folders") && has(e, s1.string()) &&
                has(e, s2b.string()))
        << e;
    // The same shard twice.
    e = mergeError(out, {s1, s2, s2b, s3});
    EXPECT_TRUE(has(e, "shard 2/3 twice") && has(e, s2b.string())) << e;
    // A folder that is not a shard's output.
    const fs::path plain = root / "plain";
    fs::create_directories(plain);
    e = mergeError(out, {s1, s2, plain});
    EXPECT_TRUE(has(e, plain.string() + " is not the output of `iris eval run --shard`")) << e;
    // Different N.
    const fs::path four = makeShard(root / "four", 3, {"c.json"});
    ShardManifest ofFour = suiteManifest(3);
    ofFour.shard = {3, 4};
    ASSERT_TRUE(saveShardManifest(ofFour, four).isOk());
    Result<RunResults> fourResults = loadRunResults(four);
    fourResults->settings.shard = "3/4";
    ASSERT_TRUE(saveRunResults(*fourResults, four).isOk());
    e = mergeError(out, {s1, s2, four});
    EXPECT_TRUE(has(e, "shards of different counts") && has(e, four.string() + " is shard 3/4"))
        << e;
    // Another suite.
    const fs::path other = makeShard(root / "other", 3, {"c.json"});
    ShardManifest otherSuite = suiteManifest(3);
    otherSuite.tasks[1].file = "z.json";
    ASSERT_TRUE(saveShardManifest(otherSuite, other).isOk());
    e = mergeError(out, {s1, s2, other});
    EXPECT_TRUE(has(e, "shards of different task suites") && has(e, other.string())) << e;
    // Settings that differ.
    const fs::path model = makeShard(root / "model", 3, {"c.json"}, "other-model");
    e = mergeError(out, {s1, s2, model});
    EXPECT_TRUE(
        has(e, "model is 'demo' in " + s1.string() + " but 'other-model' in " + model.string()))
        << e;
    // An output folder that is not empty, or is an input.
    e = mergeError(plain.parent_path(), {s1, s2, s3});
    EXPECT_TRUE(has(e, "is not empty")) << e;
    e = mergeError(s1, {s1, s2, s3});
    EXPECT_TRUE(has(e, "is one of the shard folders")) << e;
    EXPECT_FALSE(fs::exists(out));  // nothing was written
}

}  // namespace
}  // namespace iris::app::eval
