#include "app/cli/eval/shard_merge.h"

#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "agent/recording/session_store.h"
#include "app/cli/eval/eval_report.h"
#include "app/cli/eval/eval_results.h"
#include "app/cli/eval/shards.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;

struct ShardFolder {
    fs::path dir;
    ShardManifest manifest;
    RunResults results;
};

// An OUT that is empty or absent, and none of the inputs.
Status checkOutput(const fs::path& out, const std::vector<fs::path>& dirs) {
    std::error_code error;
    for (const fs::path& dir : dirs) {
        if (fs::equivalent(out, dir, error))
            return Status::invalidArgument(out.string() + " is one of the shard folders; give " +
                                           "the merged results a new folder");
    }
    if (!fs::exists(out, error)) return Status::ok();
    if (!fs::is_directory(out, error))
        return Status::invalidArgument(out.string() + ": not a folder");
    if (!fs::is_empty(out, error) || error)
        return Status::invalidArgument(out.string() + " is not empty; give the merged results a " +
                                       "new folder");
    return Status::ok();
}

Result<ShardFolder> readShardFolder(const fs::path& dir) {
    const std::string notShard = dir.string() + " is not the output of `iris eval run --shard`";
    Result<ShardManifest> manifest = loadShardManifest(dir);
    if (!manifest) {
        if (manifest.status().code() == StatusCode::NotFound)
            return Status::invalidArgument(notShard + " (no shard.json)");
        return manifest.status();
    }
    Result<RunResults> results = loadRunResults(dir);
    if (!results) {
        if (results.status().code() == StatusCode::NotFound)
            return Status::invalidArgument(notShard + " (no results.json)");
        return results.status();
    }
    if (results->settings.shard != manifest->shard.text()) {
        return Status::invalidArgument(notShard + " (results.json's shard is '" +
                                       results->settings.shard + "', shard.json's '" +
                                       manifest->shard.text() + "')");
    }
    return ShardFolder{dir, std::move(*manifest), std::move(*results)};
}

// The settings that change what the tasks' scores mean must be the same in every shard.
Status checkSameSettings(const ShardFolder& a, const ShardFolder& b) {
    auto number = [](double value) {
        std::ostringstream text;
        text << value;
        return text.str();
    };
    const RunSettings& x = a.results.settings;
    const RunSettings& y = b.results.settings;
    const std::pair<const char*, std::pair<std::string, std::string>> fields[] = {
        {"model", {x.model, y.model}},
        {"action_format", {x.actionFormat, y.actionFormat}},
        {"max_steps", {std::to_string(x.maxSteps), std::to_string(y.maxSteps)}},
        {"sleep_after_action_s", {number(x.sleepAfterActionS), number(y.sleepAfterActionS)}},
        {"task_timeout_s", {number(x.taskTimeoutS), number(y.taskTimeoutS)}},
        {"repeat", {std::to_string(x.repeat), std::to_string(y.repeat)}},
        {"loop_limit", {std::to_string(x.loopLimit), std::to_string(y.loopLimit)}},
    };
    for (const auto& [field, values] : fields) {
        if (values.first != values.second) {
            return Status::invalidArgument("settings differ: " + std::string(field) + " is '" +
                                           values.first + "' in " + a.dir.string() + " but '" +
                                           values.second + "' in " + b.dir.string());
        }
    }
    return Status::ok();
}

// Same N, same suite (the same assignment), each shard once, the same settings.
Status checkShardsAgree(const std::vector<ShardFolder>& shards) {
    const ShardFolder& first = shards.front();
    std::map<int, const ShardFolder*> byIndex;
    for (const ShardFolder& shard : shards) {
        const ShardManifest& m = shard.manifest;
        if (m.shard.count != first.manifest.shard.count) {
            return Status::invalidArgument("shards of different counts: " + first.dir.string() +
                                           " is shard " + first.manifest.shard.text() + ", " +
                                           shard.dir.string() + " is shard " + m.shard.text());
        }
        if (const auto [it, added] = byIndex.emplace(m.shard.index, &shard); !added) {
            return Status::invalidArgument("shard " + m.shard.text() + " twice: " +
                                           it->second->dir.string() + " and " + shard.dir.string());
        }
        const std::vector<ShardTask>& mine = m.tasks;
        const std::vector<ShardTask>& theirs = first.manifest.tasks;
        for (std::size_t i = 0; i < std::max(mine.size(), theirs.size()); ++i) {
            if (i < mine.size() && i < theirs.size() && mine[i].file == theirs[i].file &&
                mine[i].shard == theirs[i].shard)
                continue;
            const std::string task = i < mine.size() ? mine[i].file : theirs[i].file;
            return Status::invalidArgument(
                "shards of different task suites: " + first.dir.string() + " and " +
                shard.dir.string() + " disagree at task " + std::to_string(i + 1) + " (" + task +
                "; " + std::to_string(theirs.size()) + " and " + std::to_string(mine.size()) +
                " tasks)");
        }
        IRIS_RETURN_IF_ERROR(checkSameSettings(first, shard));
    }
    return Status::ok();
}

// Every task of the suite (every attempt) finished by exactly one folder: the merged entries.
Result<RunResults> gatherTasks(const std::vector<ShardFolder>& shards) {
    const ShardManifest& suite = shards.front().manifest;
    std::set<std::string> inSuite;
    for (const ShardTask& task : suite.tasks)
        inSuite.insert(task.file);
    std::map<std::pair<std::string, int>, const ShardFolder*> owner;
    RunResults merged;
    merged.settings = shards.front().results.settings;
    merged.settings.shard.clear();
    merged.tasksTotal = int(suite.tasks.size());
    for (const ShardFolder& shard : shards) {
        for (const TaskResult& task : shard.results.tasks) {
            if (task.status == TaskStatus::Stopped) continue;  // not finished: missing
            const std::string name =
                task.file + (task.attempt ? " attempt " + std::to_string(task.attempt + 1) : "");
            if (!inSuite.count(task.file)) {
                return Status::invalidArgument(shard.dir.string() + " has task " + name +
                                               ", which is not in the suite's shard.json");
            }
            const auto [it, added] = owner.emplace(std::pair(task.file, task.attempt), &shard);
            if (!added) {
                return Status::invalidArgument(
                    "task " + name + " is in two shard folders: " + it->second->dir.string() +
                    " and " + shard.dir.string());
            }
            merged.put(task);
        }
    }
    const int attempts = std::max(1, merged.settings.repeat);
    for (const ShardTask& task : suite.tasks) {
        for (int attempt = 0; attempt < attempts; ++attempt) {
            if (owner.count({task.file, attempt})) continue;
            return Status::notFound(
                "task " + task.file +
                (attempts > 1 ? " attempt " + std::to_string(attempt + 1) : std::string()) +
                " is missing: no folder finished it (it is shard " + std::to_string(task.shard) +
                "/" + std::to_string(suite.shard.count) + "'s; run that shard again to finish it)");
        }
    }
    return merged;
}

// Copies the tasks' result folders and sessions of `shard` into `out`, renumbering sessions.
Status copyShard(const ShardFolder& shard, const fs::path& out, agent::SessionStore& sessions,
                 RunResults& merged) {
    std::map<std::int64_t, std::int64_t> ids;
    std::error_code error;
    if (fs::exists(shard.dir / "sessions.db", error)) {
        Result<std::map<std::int64_t, std::int64_t>> imported =
            sessions.importSessions(shard.dir / "sessions.db");
        if (!imported) return imported.status();
        ids = std::move(*imported);
    }
    for (const TaskResult& task : shard.results.tasks) {
        if (task.status == TaskStatus::Stopped) continue;
        TaskResult copy = task;
        const auto id = ids.find(task.session);
        copy.session = id == ids.end() ? 0 : id->second;
        merged.put(copy);
        if (task.resultDir.empty() || !fs::is_directory(shard.dir / task.resultDir, error))
            continue;
        fs::create_directories(out / task.resultDir, error);
        if (!error) {
            fs::copy(shard.dir / task.resultDir, out / task.resultDir, fs::copy_options::recursive,
                     error);
        }
        if (error) {
            return Status::ioError("copying " + (shard.dir / task.resultDir).string() + " to " +
                                   (out / task.resultDir).string() + ": " + error.message());
        }
    }
    return Status::ok();
}

}  // namespace

Result<std::string> mergeShards(const fs::path& out, const std::vector<fs::path>& dirs) {
    if (dirs.empty()) return Status::invalidArgument("give the shard folders to merge");
    IRIS_RETURN_IF_ERROR(checkOutput(out, dirs));
    std::vector<ShardFolder> shards;
    for (const fs::path& dir : dirs) {
        Result<ShardFolder> shard = readShardFolder(dir);
        if (!shard) return shard.status();
        shards.push_back(std::move(*shard));
    }
    IRIS_RETURN_IF_ERROR(checkShardsAgree(shards));
    Result<RunResults> merged = gatherTasks(shards);
    if (!merged) return merged.status();

    std::error_code error;
    fs::create_directories(out, error);
    if (error) return Status::ioError(out.string() + ": " + error.message());
    Result<agent::SessionStore> sessions = agent::SessionStore::open(out / "sessions.db");
    if (!sessions) return sessions.status();
    for (const ShardFolder& shard : shards)
        IRIS_RETURN_IF_ERROR(copyShard(shard, out, *sessions, *merged));
    IRIS_RETURN_IF_ERROR(saveRunResults(*merged, out));
    return writeReport(out, out / "report.html");
}

}  // namespace iris::app::eval
