#include "agent/recording/session_store.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <random>
#include <thread>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/recording/chat_json.h"
#include "agent/recording/model_image_event.h"
#include "agent/recording/replay_client.h"
#include "base/clock.h"
#include "tests/agent/recording/recording_fixtures.h"

namespace iris::agent {
namespace {

using namespace recording_test;  // NOLINT(google-build-using-namespace)
namespace fs = std::filesystem;

SessionStoreOptions quietOptions() {
    SessionStoreOptions options;
    options.redactor = Redactor();
    options.busyTimeout = std::chrono::milliseconds(2000);
    return options;
}

SessionStore openStore(const fs::path& file, SessionStoreOptions options = quietOptions()) {
    auto store = SessionStore::open(file, std::move(options));
    if (!store) ADD_FAILURE() << store.status().message();
    return std::move(store).value();
}

// A second, plain SQLite connection: what another process would see.
struct RawDb {
    explicit RawDb(const fs::path& file) {
        EXPECT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
        sqlite3_busy_timeout(db, 2000);
    }
    ~RawDb() { sqlite3_close(db); }
    RawDb(const RawDb&) = delete;
    RawDb& operator=(const RawDb&) = delete;

    void exec(const std::string& sql) {
        char* message = nullptr;
        const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
        EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (message ? message : "");
        sqlite3_free(message);
    }
    std::int64_t integer(const std::string& sql) {
        sqlite3_stmt* statement = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sql;
        std::int64_t value = -1;
        if (sqlite3_step(statement) == SQLITE_ROW) value = sqlite3_column_int64(statement, 0);
        sqlite3_finalize(statement);
        return value;
    }
    sqlite3* db = nullptr;
};

void expectRequestsEqual(const ChatRequest& expected, const ChatRequest& actual) {
    ASSERT_EQ(actual.messages.size(), expected.messages.size());
    for (std::size_t i = 0; i < expected.messages.size(); ++i) {
        const ChatMessage& e = expected.messages[i];
        const ChatMessage& a = actual.messages[i];
        EXPECT_EQ(a.role, e.role);
        ASSERT_EQ(a.content.size(), e.content.size());
        for (std::size_t j = 0; j < e.content.size(); ++j) {
            ASSERT_EQ(a.content[j].isImage(), e.content[j].isImage()) << i << "," << j;
            if (e.content[j].isImage()) {
                EXPECT_EQ(a.content[j].image->bytes, e.content[j].image->bytes);
                EXPECT_EQ(a.content[j].image->mimeType, e.content[j].image->mimeType);
                EXPECT_EQ(a.content[j].image->width, e.content[j].image->width);
                EXPECT_EQ(a.content[j].image->height, e.content[j].image->height);
            } else {
                EXPECT_EQ(a.content[j].text, e.content[j].text);
            }
        }
        ASSERT_EQ(a.toolCalls.size(), e.toolCalls.size());
        EXPECT_EQ(a.toolCallId, e.toolCallId);
    }
    ASSERT_EQ(actual.tools.size(), expected.tools.size());
    EXPECT_EQ(actual.tools[0].name, expected.tools[0].name);
    EXPECT_EQ(actual.tools[0].parametersSchema, expected.tools[0].parametersSchema);
    EXPECT_EQ(actual.maxTokens, expected.maxTokens);
    EXPECT_EQ(actual.seed, expected.seed);
    EXPECT_EQ(actual.stop, expected.stop);
}

void expectStepsEqual(const StepRecord& expected, const StepRecord& actual) {
    SCOPED_TRACE("step " + std::to_string(expected.index));
    EXPECT_EQ(actual.index, expected.index);
    EXPECT_EQ(actual.startedAtMs, expected.startedAtMs);
    EXPECT_EQ(actual.observationPng, expected.observationPng);
    EXPECT_EQ(actual.url, expected.url);
    EXPECT_EQ(actual.title, expected.title);
    expectRequestsEqual(expected.request, actual.request);
    ASSERT_EQ(actual.response.has_value(), expected.response.has_value());
    if (expected.response) {
        EXPECT_EQ(actual.response->text, expected.response->text);
        ASSERT_EQ(actual.response->toolCalls.size(), expected.response->toolCalls.size());
        EXPECT_EQ(actual.response->toolCalls[0].arguments,
                  expected.response->toolCalls[0].arguments);
        EXPECT_EQ(actual.response->finishReason, expected.response->finishReason);
        EXPECT_EQ(actual.response->promptTokens, expected.response->promptTokens);
        EXPECT_EQ(actual.response->latencyMs, expected.response->latencyMs);
    }
    EXPECT_EQ(actual.modelError, expected.modelError);
    EXPECT_EQ(actual.actions, expected.actions);
    EXPECT_EQ(actual.parseError, expected.parseError);
    EXPECT_EQ(actual.results, expected.results);
    EXPECT_EQ(actual.edits, expected.edits);
    EXPECT_EQ(actual.timings, expected.timings);
}

TEST(SessionStore, RoundTripsASessionWithSeveralSteps) {
    const fs::path file = freshDir("round_trip") / "nested" / "sessions.db";
    std::vector<StepRecord> steps = {makeStep(0), makeStep(1), makeStep(2), makeStep(3, true)};
    steps[2].response.reset();
    steps[2].modelError = "connection refused";
    steps[2].actions.clear();
    steps[2].results.clear();
    steps[2].parseError = "no action in the answer";
    std::int64_t id = 0;
    {
        SessionStore store = openStore(file);
        auto created = store.createSession(sessionInfo());
        ASSERT_TRUE(created) << created.status().message();
        id = *created;
        for (const StepRecord& step : steps) {
            const Status status = store.appendStep(id, step);
            ASSERT_TRUE(status.isOk()) << status.message();
        }
        ASSERT_TRUE(store.addEvent(id, {2, 0, "warning", "model call failed"}).isOk());
        ASSERT_TRUE(store.finishSession(id, SessionStatus::Done, 0.75).isOk());
    }
    SessionStore store = openStore(file);
    auto loaded = store.loadSession(id);
    ASSERT_TRUE(loaded) << loaded.status().message();
    EXPECT_EQ(loaded->summary.instruction, "Open the settings page");
    EXPECT_EQ(loaded->summary.actionFormat, "computer_13");
    EXPECT_EQ(loaded->summary.status, SessionStatus::Done);
    EXPECT_EQ(loaded->summary.score, 0.75);
    EXPECT_TRUE(loaded->summary.endedAtMs.has_value());
    EXPECT_EQ(loaded->summary.stepCount, 4);
    EXPECT_EQ(loaded->config, sessionInfo().config);
    ASSERT_EQ(loaded->steps.size(), steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i)
        expectStepsEqual(steps[i], loaded->steps[i]);
    ASSERT_EQ(loaded->events.size(), 1u);
    EXPECT_EQ(loaded->events[0].stepIndex, 2);
    EXPECT_EQ(loaded->events[0].message, "model call failed");

    // The screenshot decodes back to the pixels that were recorded.
    const cv::Mat decoded = cv::imdecode(loaded->steps[1].observationPng, cv::IMREAD_COLOR);
    EXPECT_EQ(cv::norm(decoded, screenshot(1), cv::NORM_INF), 0.0);
}

// A small local model can emit any bytes; the step is kept, the broken sequences replaced.
TEST(SessionStore, KeepsAStepWhoseModelOutputIsNotUtf8) {
    const fs::path file = freshDir("not_utf8") / "sessions.db";
    StepRecord step = makeStep(0);
    step.response->text = "half a character: \xE2\x82 and a stray \xFF byte";
    step.request.messages[1].content[0].text = "typed \xC3";
    SessionStore store = openStore(file);
    auto created = store.createSession(sessionInfo());
    ASSERT_TRUE(created) << created.status().message();
    const Status appended = store.appendStep(*created, step);
    ASSERT_TRUE(appended.isOk()) << appended.message();
    auto loaded = store.loadSession(*created);
    ASSERT_TRUE(loaded) << loaded.status().message();
    ASSERT_EQ(loaded->steps.size(), 1u);
    ASSERT_TRUE(loaded->steps[0].response.has_value());
    EXPECT_EQ(loaded->steps[0].response->text, "half a character: \uFFFD and a stray \uFFFD byte");
}

TEST(SessionStore, StoresEachScreenshotOnceAndRequestsReferToIt) {
    const fs::path file = freshDir("dedup") / "sessions.db";
    SessionStore store = openStore(file);
    const std::int64_t id = *store.createSession(sessionInfo());
    for (int i = 0; i < 4; ++i)
        ASSERT_TRUE(store.appendStep(id, makeStep(i)).isOk());

    RawDb raw(file);
    // Four observations; each request repeats the previous one and this one.
    EXPECT_EQ(raw.integer("SELECT count(*) FROM images"), 4);
    sqlite3_stmt* statement = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw.db, "SELECT request FROM steps WHERE step_index = 2", -1,
                                 &statement, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(statement), SQLITE_ROW);
    const auto request =
        nlohmann::json::parse(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)));
    sqlite3_finalize(statement);
    const auto& content = request["messages"][1]["content"];
    ASSERT_EQ(content.size(), 3u);
    EXPECT_EQ(content[1]["step"], 1);
    EXPECT_EQ(content[2]["step"], 2);
    EXPECT_EQ(content[2]["sha256"], sha256Hex(screenshotPng(2)));
    EXPECT_FALSE(content[2].contains("bytes"));
}

TEST(SessionStore, ListsSessionsNewestFirst) {
    const fs::path file = freshDir("list") / "sessions.db";
    SessionStore store = openStore(file);
    const std::int64_t first = *store.createSession(sessionInfo("first"));
    const std::int64_t second = *store.createSession(sessionInfo("second"));
    ASSERT_TRUE(store.appendStep(second, makeStep(0)).isOk());
    ASSERT_TRUE(store.finishSession(first, SessionStatus::Failed).isOk());
    auto sessions = store.listSessions();
    ASSERT_TRUE(sessions) << sessions.status().message();
    ASSERT_EQ(sessions->size(), 2u);
    EXPECT_EQ((*sessions)[0].id, second);
    EXPECT_EQ((*sessions)[0].stepCount, 1);
    EXPECT_EQ((*sessions)[0].status, SessionStatus::Running);
    EXPECT_EQ((*sessions)[1].instruction, "first");
    EXPECT_EQ((*sessions)[1].status, SessionStatus::Failed);
    EXPECT_FALSE((*sessions)[1].score.has_value());
}

TEST(SessionStore, RecordsEveryFinalStatusByName) {
    const fs::path file = freshDir("statuses") / "sessions.db";
    SessionStore store = openStore(file);
    for (const SessionStatus status :
         {SessionStatus::Done, SessionStatus::Failed, SessionStatus::Stopped, SessionStatus::Error,
          SessionStatus::MaxSteps, SessionStatus::NoImprovement}) {
        const std::int64_t id = *store.createSession(sessionInfo());
        ASSERT_TRUE(store.finishSession(id, status).isOk());
        EXPECT_EQ(store.loadSession(id)->summary.status, status);
        EXPECT_EQ(sessionStatusFromName(sessionStatusName(status)).value(), status);
    }
    EXPECT_EQ(sessionStatusName(SessionStatus::NoImprovement), "no_improvement");
    EXPECT_EQ(store.finishSession(1, SessionStatus::Running).code(), StatusCode::InvalidArgument);
    EXPECT_EQ(store.finishSession(999, SessionStatus::Done).code(), StatusCode::NotFound);
    RawDb(file).exec("UPDATE sessions SET status = 'exploded' WHERE id = 1");
    EXPECT_EQ(store.loadSession(1).status().message(),
              file.string() + ": unknown session status \"exploded\"");
}

TEST(SessionStore, RefusesStepsOutOfOrderAndAfterTheSessionEnded) {
    const fs::path file = freshDir("order") / "sessions.db";
    SessionStore store = openStore(file);
    const std::int64_t id = *store.createSession(sessionInfo());
    Status skipped = store.appendStep(id, makeStep(1));
    EXPECT_EQ(skipped.code(), StatusCode::InvalidArgument);
    EXPECT_NE(skipped.message().find("steps must be consecutive; the next is 0"), std::string::npos)
        << skipped.message();
    ASSERT_TRUE(store.appendStep(id, makeStep(0)).isOk());
    EXPECT_EQ(store.appendStep(id, makeStep(0)).code(), StatusCode::InvalidArgument);
    EXPECT_EQ(store.appendStep(id + 100, makeStep(0)).code(), StatusCode::NotFound);
    ASSERT_TRUE(store.finishSession(id, SessionStatus::Stopped).isOk());
    const Status late = store.appendStep(id, makeStep(1));
    EXPECT_NE(late.message().find("has ended (stopped)"), std::string::npos) << late.message();
    EXPECT_EQ(store.loadSession(id)->steps.size(), 1u);

    StepRecord notPng = makeStep(0);
    notPng.observationPng = {1, 2, 3};
    const std::int64_t other = *store.createSession(sessionInfo());
    EXPECT_NE(store.appendStep(other, notPng).message().find("not a PNG"), std::string::npos);
}

TEST(SessionStore, ForkCopiesTheStepsBeforeTheForkPoint) {
    const fs::path file = freshDir("fork") / "sessions.db";
    SessionStore store = openStore(file);
    const std::int64_t id = *store.createSession(sessionInfo());
    for (int i = 0; i < 4; ++i)
        ASSERT_TRUE(store.appendStep(id, makeStep(i)).isOk());
    auto fork = store.forkSession(id, 2);
    ASSERT_TRUE(fork) << fork.status().message();
    auto forked = store.loadSession(*fork);
    ASSERT_TRUE(forked) << forked.status().message();
    EXPECT_EQ(forked->summary.forkedFrom, id);
    EXPECT_EQ(forked->summary.forkedAtStep, 2);
    EXPECT_EQ(forked->summary.status, SessionStatus::Running);
    ASSERT_EQ(forked->steps.size(), 2u);
    expectStepsEqual(makeStep(1), forked->steps[1]);
    EXPECT_TRUE(store.appendStep(*fork, makeStep(2)).isOk());
    EXPECT_EQ(store.forkSession(id, 5).status().code(), StatusCode::OutOfRange);
    EXPECT_EQ(RawDb(file).integer("SELECT count(*) FROM images"), 4);
}

// `iris eval merge` gathers the shards' databases: every session, under new ids, as recorded.
TEST(SessionStore, ImportCopiesEverySessionUnderNewIds) {
    const fs::path dir = freshDir("import");
    std::int64_t done = 0, fork = 0, running = 0;
    {
        SessionStore source = openStore(dir / "source.db");
        done = *source.createSession(sessionInfo("Open the about page"));
        for (int i = 0; i < 3; ++i)
            ASSERT_TRUE(source.appendStep(done, makeStep(i, i == 2)).isOk());
        ASSERT_TRUE(source.addEvent(done, {1, 1234, "warning", "slow", {{"ms", 900}}}).isOk());
        ASSERT_TRUE(source.finishSession(done, SessionStatus::Done, 0.5).isOk());
        fork = *source.forkSession(done, 2);
        running = *source.createSession(sessionInfo("Still going"));
    }
    SessionStore target = openStore(dir / "target.db");
    const std::int64_t own = *target.createSession(sessionInfo("Already here"));
    ASSERT_TRUE(target.appendStep(own, makeStep(0)).isOk());  // shares an image with the source

    auto ids = target.importSessions(dir / "source.db");
    ASSERT_TRUE(ids) << ids.status().message();
    ASSERT_EQ(ids->size(), 3u);
    SessionStore source = openStore(dir / "source.db");
    for (const std::int64_t id : {done, fork, running}) {
        SCOPED_TRACE("session " + std::to_string(id));
        const std::int64_t copy = ids->at(id);
        EXPECT_NE(copy, own);
        const SessionRecord expected = *source.loadSession(id);
        const SessionRecord actual = *target.loadSession(copy);
        EXPECT_EQ(actual.summary.instruction, expected.summary.instruction);
        EXPECT_EQ(actual.summary.createdAtMs, expected.summary.createdAtMs);
        EXPECT_EQ(actual.summary.endedAtMs, expected.summary.endedAtMs);
        EXPECT_EQ(actual.summary.status, expected.summary.status);
        EXPECT_EQ(actual.summary.score, expected.summary.score);
        EXPECT_EQ(actual.config, expected.config);
        ASSERT_EQ(actual.steps.size(), expected.steps.size());
        for (std::size_t i = 0; i < expected.steps.size(); ++i)
            expectStepsEqual(expected.steps[i], actual.steps[i]);
        ASSERT_EQ(actual.events.size(), expected.events.size());
        for (std::size_t i = 0; i < expected.events.size(); ++i) {
            EXPECT_EQ(actual.events[i].atMs, expected.events[i].atMs);
            EXPECT_EQ(actual.events[i].message, expected.events[i].message);
            EXPECT_EQ(actual.events[i].data, expected.events[i].data);
        }
    }
    // The fork follows its origin's new id.
    EXPECT_EQ(target.loadSession(ids->at(fork))->summary.forkedFrom, ids->at(done));
    EXPECT_EQ(target.loadSession(ids->at(fork))->summary.forkedAtStep, 2);
    // Each screenshot once: the source's 3 and the shared one.
    EXPECT_EQ(RawDb(dir / "target.db").integer("SELECT count(*) FROM images"), 3);
    EXPECT_EQ(target.listSessions()->size(), 4u);
    EXPECT_EQ(target.importSessions(dir / "missing.db").status().code(), StatusCode::NotFound);
}

TEST(SessionStore, DeleteRemovesTheSessionAndOnlyImagesNoOtherStepUses) {
    const fs::path file = freshDir("delete") / "sessions.db";
    SessionStore store = openStore(file);
    const std::int64_t doomed = *store.createSession(sessionInfo());
    // Step 0's request also shows a target image that is no step's observation.
    StepRecord withTarget = makeStep(0);
    withTarget.request.messages[1].content.push_back({"", asImage(screenshotPng(9))});
    ASSERT_TRUE(store.appendStep(doomed, withTarget).isOk());
    for (int i = 1; i < 4; ++i)
        ASSERT_TRUE(store.appendStep(doomed, makeStep(i)).isOk());
    ASSERT_TRUE(store.addEvent(doomed, {1, 0, "info", "hello"}).isOk());
    ASSERT_TRUE(store.finishSession(doomed, SessionStatus::Done, 1.0).isOk());
    // Another session showing screenshot 0 only, and a fork sharing screenshots 0..2.
    const std::int64_t other = *store.createSession(sessionInfo());
    ASSERT_TRUE(store.appendStep(other, makeStep(0)).isOk());
    const std::int64_t fork = *store.forkSession(doomed, 3);
    RawDb raw(file);
    ASSERT_EQ(raw.integer("SELECT count(*) FROM images"), 5);
    ASSERT_GT(
        raw.integer("SELECT count(*) FROM edits WHERE session_id = " + std::to_string(doomed)), 0);

    const Status status = store.deleteSession(doomed);
    ASSERT_TRUE(status.isOk()) << status.message();

    const std::string where = " WHERE session_id = " + std::to_string(doomed);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM steps" + where), 0);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM edits" + where), 0);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM events" + where), 0);
    // Screenshot 3 was the deleted session's alone; the target lives on in the fork's request.
    EXPECT_EQ(raw.integer("SELECT count(*) FROM images"), 4);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM images WHERE sha256 = '" +
                          sha256Hex(screenshotPng(3)) + "'"),
              0);
    EXPECT_EQ(store.loadSession(doomed).status().code(), StatusCode::NotFound);
    auto sessions = store.listSessions();
    ASSERT_TRUE(sessions);
    ASSERT_EQ(sessions->size(), 2u);

    auto forked = store.loadSession(fork);
    ASSERT_TRUE(forked) << forked.status().message();
    EXPECT_FALSE(forked->summary.forkedFrom.has_value());
    ASSERT_EQ(forked->steps.size(), 3u);
    expectStepsEqual(withTarget, forked->steps[0]);
    for (int i = 1; i < 3; ++i)
        expectStepsEqual(makeStep(i), forked->steps[std::size_t(i)]);
    auto kept = store.loadSession(other);
    ASSERT_TRUE(kept) << kept.status().message();
    expectStepsEqual(makeStep(0), kept->steps[0]);

    const Status again = store.deleteSession(doomed);
    EXPECT_EQ(again.code(), StatusCode::NotFound);
    EXPECT_NE(again.message().find(file.string()), std::string::npos) << again.message();

    // With every session gone, so is every image, the request-only target included.
    ASSERT_TRUE(store.deleteSession(fork).isOk());
    EXPECT_EQ(raw.integer("SELECT count(*) FROM images"), 1);
    ASSERT_TRUE(store.deleteSession(other).isOk());
    EXPECT_EQ(raw.integer("SELECT count(*) FROM images"), 0);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM steps"), 0);
}

// Version 1, as released: written out here rather than taken from the code, so that a change
// to the code's copy cannot go unnoticed.
constexpr const char* kVersion1Schema = R"sql(
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY, created_at INTEGER NOT NULL, ended_at INTEGER,
    instruction TEXT NOT NULL, environment TEXT NOT NULL, model TEXT NOT NULL,
    action_format TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'running',
    score REAL, config TEXT NOT NULL DEFAULT '{}');
CREATE TABLE images (sha256 TEXT PRIMARY KEY, mime_type TEXT NOT NULL, width INTEGER NOT NULL,
    height INTEGER NOT NULL, bytes BLOB NOT NULL);
CREATE TABLE steps (
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    step_index INTEGER NOT NULL, started_at INTEGER NOT NULL,
    observation TEXT REFERENCES images(sha256), url TEXT NOT NULL, title TEXT NOT NULL,
    request TEXT NOT NULL, response TEXT, model_error TEXT NOT NULL, actions TEXT NOT NULL,
    parse_error TEXT NOT NULL, results TEXT NOT NULL, timings TEXT NOT NULL,
    PRIMARY KEY (session_id, step_index));
CREATE INDEX steps_by_observation ON steps(session_id, observation);
CREATE TABLE events (id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    step_index INTEGER, at INTEGER NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL);
CREATE INDEX events_by_session ON events(session_id, id);
INSERT INTO sessions (id, created_at, instruction, environment, model, action_format, status,
    score) VALUES (7, 1700000000000, 'old task', 'desktop:0', 'local m.gguf', 'pyautogui', 'done',
    1.0);
INSERT INTO steps VALUES (7, 0, 1700000000500, NULL, '', 'Desktop',
    '{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}',
    '{"text":"pyautogui.click(1, 2)","finish_reason":"stop"}', '',
    '[{"type":"click","x":1,"y":2}]', '', '[{"ok":true}]', '{"model_ms":12}');
PRAGMA user_version = 1;
PRAGMA application_id = 1232234867;
)sql";

// Two evaluation workers (or two Iris processes) opening a database that does not exist yet at
// the same moment: each must get a working store (the switch to WAL mode needs an exclusive lock,
// for which SQLite does not wait by itself).
TEST(SessionStore, ConnectionsOpeningANewDatabaseTogetherAllSucceed) {
    for (int round = 0; round < 20; ++round) {
        const fs::path file = freshDir("open_together_" + std::to_string(round)) / "sessions.db";
        std::atomic<int> ready{0};
        std::vector<std::string> failures(4);
        std::vector<std::thread> openers;
        for (std::size_t i = 0; i < failures.size(); ++i) {
            openers.emplace_back([&, i] {
                ++ready;
                while (ready.load() < int(failures.size())) {
                }
                Result<SessionStore> store = SessionStore::open(file);
                if (!store) failures[i] = store.status().message();
            });
        }
        for (std::thread& t : openers)
            t.join();
        for (const std::string& failure : failures)
            EXPECT_EQ(failure, "") << "round " << round;
    }
}

TEST(SessionStore, UpgradesAVersion1Database) {
    const fs::path file = freshDir("migrate") / "sessions.db";
    RawDb(file).exec(kVersion1Schema);

    SessionStore store = openStore(file);
    RawDb raw(file);
    EXPECT_EQ(raw.integer("PRAGMA user_version"), SessionStore::kSchemaVersion);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_master WHERE name = 'edits'"), 1);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM pragma_table_info('sessions')"
                          " WHERE name = 'forked_from'"),
              1);
    auto old = store.loadSession(7);
    ASSERT_TRUE(old) << old.status().message();
    EXPECT_EQ(old->summary.instruction, "old task");
    EXPECT_EQ(old->summary.score, 1.0);
    EXPECT_FALSE(old->summary.forkedFrom.has_value());
    ASSERT_EQ(old->steps.size(), 1u);
    ASSERT_EQ(old->steps[0].actions.size(), 1u);
    EXPECT_EQ(old->steps[0].actions[0], Action(Click{Point{1, 2}}));
    EXPECT_EQ(old->steps[0].response->text, "pyautogui.click(1, 2)");
    EXPECT_EQ(old->steps[0].timings.modelMs, 12.0);

    // The new tables work on the upgraded file, and opening again changes nothing.
    const std::int64_t id = *store.createSession(sessionInfo());
    ASSERT_TRUE(store.appendStep(id, makeStep(0)).isOk());
    EXPECT_EQ(store.loadSession(id)->steps[0].edits, makeStep(0).edits);
    EXPECT_TRUE(SessionStore::open(file, quietOptions()));
}

// Version 2, as released: version 1 plus these, and a model-image event as version 2 wrote it
// (the frame only in its message).
constexpr const char* kVersion2Additions = R"sql(
CREATE TABLE edits (session_id INTEGER NOT NULL, step_index INTEGER NOT NULL,
    ordinal INTEGER NOT NULL, path TEXT NOT NULL, revision INTEGER NOT NULL, diff TEXT NOT NULL,
    PRIMARY KEY (session_id, step_index, ordinal),
    FOREIGN KEY (session_id, step_index) REFERENCES steps(session_id, step_index)
        ON DELETE CASCADE);
ALTER TABLE sessions ADD COLUMN forked_from INTEGER REFERENCES sessions(id);
ALTER TABLE sessions ADD COLUMN forked_at_step INTEGER;
INSERT INTO events (session_id, step_index, at, kind, message) VALUES (7, 0, 1700000000600,
    'model_image', 'the 1920x1080 screenshot is shown to the model as 1932x1092');
PRAGMA user_version = 2;
)sql";

TEST(SessionStore, UpgradesAVersion2DatabaseAndItsEventsStillReplay) {
    const fs::path file = freshDir("migrate2") / "sessions.db";
    RawDb(file).exec(std::string(kVersion1Schema) + kVersion2Additions);

    SessionStore store = openStore(file);
    RawDb raw(file);
    EXPECT_EQ(raw.integer("PRAGMA user_version"), SessionStore::kSchemaVersion);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM pragma_table_info('events') WHERE name = 'data'"),
              1);
    auto old = store.loadSession(7);
    ASSERT_TRUE(old) << old.status().message();
    ASSERT_EQ(old->events.size(), 1u);
    EXPECT_EQ(old->events[0].stepIndex, 0);
    EXPECT_EQ(old->events[0].kind, ModelImageEvent::kKind);
    EXPECT_TRUE(old->events[0].data.is_null());
    // The old session replays as it ran: its frame is read from the message.
    EXPECT_EQ(ReplayClient(*old).imageSizeFor(1920, 1080), (inference::ImageSize{1932, 1092}));

    // New events on the upgraded file keep their data, as JSON in the data column.
    const ModelImageEvent frame{1280, 800, {1288, 812}};
    ASSERT_TRUE(store.addEvent(7, frame.toEvent(1)).isOk());
    EXPECT_EQ(raw.integer("SELECT count(*) FROM events WHERE json_extract(data, '$.image.width')"
                          " = 1288"),
              1);
    auto again = store.loadSession(7);
    ASSERT_TRUE(again) << again.status().message();
    ASSERT_EQ(again->events.size(), 2u);
    EXPECT_EQ(again->events[1].data, frame.toEvent(1).data);
    EXPECT_EQ(again->events[1].message, frame.toEvent(1).message);
    const ReplayClient replay(*again);
    EXPECT_EQ(replay.imageSizeFor(1920, 1080), (inference::ImageSize{1932, 1092}));
    EXPECT_EQ(replay.imageSizeFor(1280, 800), (inference::ImageSize{1288, 812}));
}

TEST(SessionStore, RejectsEventDataThatIsNotJson) {
    const fs::path file = freshDir("event-data") / "sessions.db";
    SessionStore store = openStore(file);
    const std::int64_t id = *store.createSession(sessionInfo());
    ASSERT_TRUE(store.addEvent(id, {std::nullopt, 0, "note", "plain"}).isOk());
    RawDb(file).exec("UPDATE events SET data = '{not json'");
    auto loaded = store.loadSession(id);
    ASSERT_FALSE(loaded);
    EXPECT_EQ(loaded.status().code(), StatusCode::Corrupt);
    EXPECT_EQ(loaded.status().message(), file.string() + ": session " + std::to_string(id) +
                                             " event note data: not valid JSON");
}

TEST(SessionStore, RefusesADatabaseFromANewerIris) {
    const fs::path file = freshDir("newer") / "sessions.db";
    { SessionStore store = openStore(file); }
    RawDb(file).exec("PRAGMA user_version = 99");
    auto store = SessionStore::open(file, quietOptions());
    ASSERT_FALSE(store);
    EXPECT_EQ(store.status().code(), StatusCode::Unsupported);
    EXPECT_EQ(store.status().message(), file.string() +
                                            ": written by a newer Iris (schema version 99; this "
                                            "Iris knows up to 3)");
}

TEST(SessionStore, NamesAFileThatIsNotADatabaseAndLeavesItUntouched) {
    const fs::path dir = freshDir("not_a_db");
    const fs::path file = dir / "sessions.db";
    std::mt19937 random(7);
    std::string noise(10000, '\0');
    for (char& c : noise)
        c = static_cast<char>(random());
    { std::ofstream(file, std::ios::binary) << noise; }

    auto store = SessionStore::open(file, quietOptions());
    ASSERT_FALSE(store);
    EXPECT_EQ(store.status().code(), StatusCode::Corrupt);
    EXPECT_EQ(store.status().message(),
              file.string() + ": not an Iris session database (file is not a database)");
    EXPECT_EQ(readBytes(file), noise);
    EXPECT_FALSE(fs::exists(dir / "sessions.db-wal"));
}

TEST(SessionStore, NamesATruncatedDatabaseAndLeavesItUntouched) {
    const fs::path file = freshDir("truncated") / "sessions.db";
    {
        SessionStore store = openStore(file);
        const std::int64_t id = *store.createSession(sessionInfo());
        for (int i = 0; i < 6; ++i)
            ASSERT_TRUE(store.appendStep(id, makeStep(i)).isOk());
    }  // closing checkpoints the WAL into the file
    const std::string whole = readBytes(file);
    ASSERT_GT(whole.size(), 8192u);
    const std::string half = whole.substr(0, whole.size() / 2);
    { std::ofstream(file, std::ios::binary | std::ios::trunc) << half; }

    auto store = SessionStore::open(file, quietOptions());
    ASSERT_FALSE(store);
    EXPECT_EQ(store.status().code(), StatusCode::Corrupt);
    EXPECT_EQ(store.status().message().rfind(file.string() + ": damaged session database "
                                                             "(truncated",
                                             0),
              0u)
        << store.status().message();
    EXPECT_EQ(readBytes(file), half);
}

TEST(SessionStore, NamesAnotherProgramsSqliteFile) {
    const fs::path file = freshDir("foreign") / "sessions.db";
    RawDb(file).exec("CREATE TABLE bookmarks (url TEXT)");
    auto store = SessionStore::open(file, quietOptions());
    ASSERT_FALSE(store);
    EXPECT_EQ(store.status().message().rfind(file.string() + ": not an Iris session database", 0),
              0u)
        << store.status().message();
}

TEST(SessionStore, ReportsALockedDatabaseWithinTheBusyTimeout) {
    const fs::path file = freshDir("locked") / "sessions.db";
    { SessionStore store = openStore(file); }
    SessionStoreOptions options = quietOptions();
    options.busyTimeout = std::chrono::milliseconds(150);
    SessionStore store = openStore(file, options);
    const std::int64_t id = *store.createSession(sessionInfo());

    RawDb other(file);
    other.exec("BEGIN EXCLUSIVE");
    other.exec("INSERT INTO events (session_id, at, kind, message) VALUES (1, 0, 'x', 'y')");
    const Clock::time_point start = Clock::now();
    const Status status = store.appendStep(id, makeStep(0));
    const double waitedMs = millisecondsSince(start);
    EXPECT_EQ(status.code(), StatusCode::IoError);
    EXPECT_EQ(status.message(), file.string() +
                                    " is locked by another process (gave up after 150 ms "
                                    "recording step 0)");
    EXPECT_GE(waitedMs, 100.0);
    EXPECT_LT(waitedMs, 3000.0);
    other.exec("ROLLBACK");
    EXPECT_TRUE(store.appendStep(id, makeStep(0)).isOk());
}

TEST(SessionStore, ReportsDiskFullAndKeepsTheEarlierSteps) {
    const fs::path file = freshDir("disk_full") / "sessions.db";
    std::int64_t id = 0;
    std::int64_t pages = 0;
    {
        SessionStore store = openStore(file);
        id = *store.createSession(sessionInfo());
        for (int i = 0; i < 2; ++i)
            ASSERT_TRUE(store.appendStep(id, makeStep(i)).isOk());
    }
    pages = RawDb(file).integer("PRAGMA page_count");
    SessionStoreOptions options = quietOptions();
    options.maxPageCount = pages + 2;
    {
        SessionStore store = openStore(file, options);
        StepRecord big = makeStep(2);
        cv::Mat noise(300, 300, CV_8UC3);
        cv::randu(noise, 0, 256);
        big.observationPng = pngOf(noise);  // ~270 KB: far more than two pages
        const Status status = store.appendStep(id, big);
        EXPECT_EQ(status.code(), StatusCode::IoError);
        EXPECT_EQ(status.message(), "disk full while recording step 2 to " + file.string() +
                                        "; earlier steps are intact");
        auto loaded = store.loadSession(id);
        ASSERT_TRUE(loaded) << loaded.status().message();
        ASSERT_EQ(loaded->steps.size(), 2u);
        for (int i = 0; i < 2; ++i)
            expectStepsEqual(makeStep(i), loaded->steps[std::size_t(i)]);
    }
    // The rolled-back step left nothing: the store takes step 2 again once there is room.
    SessionStore store = openStore(file);
    EXPECT_TRUE(store.appendStep(id, makeStep(2)).isOk());
    EXPECT_EQ(RawDb(file).integer("SELECT count(*) FROM images"), 3);
}

bool writeAll(int fd, const void* data, std::size_t size) {
    return ::write(fd, data, size) == static_cast<ssize_t>(size);
}

TEST(SessionStore, SurvivesSigkillMidSession) {
    const fs::path file = freshDir("sigkill") / "sessions.db";
    std::int64_t id = 0;
    {
        SessionStore store = openStore(file);
        id = *store.createSession(sessionInfo());
    }
    int pipeFds[2];
    ASSERT_EQ(::pipe(pipeFds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // The child: record steps as fast as it can and report each one that committed.
        ::close(pipeFds[0]);
        auto store = SessionStore::open(file, quietOptions());
        if (!store) ::_exit(2);
        for (int i = 0;; ++i) {
            if (!store->appendStep(id, makeStep(i)).isOk()) ::_exit(3);
            if (!writeAll(pipeFds[1], &i, sizeof i)) ::_exit(4);
        }
    }
    ::close(pipeFds[1]);
    int lastReported = -1;
    while (lastReported < 5) {
        int index = 0;
        ASSERT_EQ(::read(pipeFds[0], &index, sizeof index), static_cast<ssize_t>(sizeof index))
            << "the child stopped early";
        lastReported = index;
    }
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status));
    // Reports the child wrote before it died.
    int index = 0;
    while (::read(pipeFds[0], &index, sizeof index) == static_cast<ssize_t>(sizeof index)) {
        lastReported = index;
    }
    ::close(pipeFds[0]);

    SessionStore store = openStore(file);
    auto loaded = store.loadSession(id);
    ASSERT_TRUE(loaded) << loaded.status().message();
    // Every reported step is there, whole; at most one more committed before the report.
    ASSERT_GE(loaded->steps.size(), static_cast<std::size_t>(lastReported + 1));
    ASSERT_LE(loaded->steps.size(), static_cast<std::size_t>(lastReported + 2));
    for (const StepRecord& step : loaded->steps)
        expectStepsEqual(makeStep(step.index), step);
    RawDb raw(file);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM edits"), static_cast<int>(loaded->steps.size()));
    EXPECT_EQ(raw.integer("SELECT count(*) FROM images"), static_cast<int>(loaded->steps.size()));
    EXPECT_TRUE(store.appendStep(id, makeStep(static_cast<int>(loaded->steps.size()))).isOk());
}

}  // namespace
}  // namespace iris::agent
