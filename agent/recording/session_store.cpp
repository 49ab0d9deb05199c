// The store itself: its connection, errors and transactions, and the life of a session (created,
// finished, forked, deleted). Opening and the schema: session_store_schema.cpp; steps and events:
// session_store_write.cpp; reading back: session_store_read.cpp.
#include "agent/recording/session_store.h"

#include <array>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "agent/recording/chat_json.h"
#include "agent/recording/session_store_internal.h"

namespace iris::agent {

using detail::nowMs;
using detail::SqliteStatement;
using nlohmann::json;

void SessionStore::Closer::operator()(sqlite3* db) const {
    sqlite3_close_v2(db);
}

SessionStore::SessionStore(std::unique_ptr<sqlite3, Closer> db, std::filesystem::path path,
                           SessionStoreOptions options)
    : m_db(std::move(db)), m_path(std::move(path)), m_options(std::move(options)) {}

SessionStore::SessionStore(SessionStore&&) noexcept = default;
SessionStore& SessionStore::operator=(SessionStore&&) noexcept = default;
SessionStore::~SessionStore() = default;

Status SessionStore::error(int code, std::string_view what) const {
    const std::string path = m_path.string();
    const std::string detail = m_db ? sqlite3_errmsg(m_db.get()) : sqlite3_errstr(code);
    switch (code & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            return Status::ioError(path + " is locked by another process (gave up after " +
                                   std::to_string(m_options.busyTimeout.count()) + " ms " +
                                   std::string(what) + ")");
        case SQLITE_FULL:
            return Status::ioError("disk full while " + std::string(what) + " to " + path +
                                   "; earlier steps are intact");
        case SQLITE_NOTADB:
            return Status::corrupt(path + ": not an Iris session database (" + detail + ")");
        case SQLITE_CORRUPT:
            return Status::corrupt(path + ": damaged session database (" + detail + ")");
        default:
            return Status::ioError(path + ": " + std::string(what) + ": " + detail);
    }
}

// Ends a failed transaction. SQLite may have rolled it back already (on SQLITE_FULL, for one);
// then there is nothing to do and the error is of no interest.
void SessionStore::rollback() {
    sqlite3_exec(m_db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

Status SessionStore::execute(const char* sql, std::string_view what) {
    const int rc = sqlite3_exec(m_db.get(), sql, nullptr, nullptr, nullptr);
    return rc == SQLITE_OK ? Status::ok() : error(rc, what);
}

Result<std::int64_t> SessionStore::createSession(const SessionInfo& info) {
    const Redactor& r = m_options.redactor;
    json config = info.config.is_null() ? json::object() : info.config;
    r.redactJson(config);
    SqliteStatement s(
        m_db.get(),
        "INSERT INTO sessions (created_at, instruction, environment, model, action_format,"
        " config) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    s.bind(1, info.createdAtMs != 0 ? info.createdAtMs : nowMs())
        .bind(2, r.redact(info.instruction))
        .bind(3, r.redact(info.environment))
        .bind(4, r.redact(info.model))
        .bind(5, r.redact(info.actionFormat))
        .bind(6, toJsonText(config));
    const int rc = s.step();
    if (rc != SQLITE_DONE) return error(rc, "writing a new session");
    return sqlite3_last_insert_rowid(m_db.get());
}

Status SessionStore::finishSession(std::int64_t session, SessionStatus status,
                                   std::optional<double> score) {
    if (status == SessionStatus::Running) {
        return Status::invalidArgument("finishSession: \"running\" is not a final status");
    }
    SqliteStatement s(m_db.get(),
                      "UPDATE sessions SET status = ?2, score = ?3, ended_at = ?4 WHERE id = ?1");
    s.bind(1, session).bind(2, sessionStatusName(status)).bind(3, score).bind(4, nowMs());
    const int rc = s.step();
    if (rc != SQLITE_DONE) return error(rc, "writing the end of a session");
    if (sqlite3_changes(m_db.get()) == 0) {
        return Status::notFound("session " + std::to_string(session) + " does not exist in " +
                                m_path.string());
    }
    return Status::ok();
}

Result<std::int64_t> SessionStore::forkSession(std::int64_t session, int uptoStep) {
    const std::string what = "forking session " + std::to_string(session);
    IRIS_RETURN_IF_ERROR(execute("BEGIN IMMEDIATE", what));
    auto fail = [&](Status status) {
        rollback();
        return status;
    };
    {
        SqliteStatement s(m_db.get(), "SELECT count(*) FROM steps WHERE session_id = ?1");
        s.bind(1, session);
        const int rc = s.step();
        if (rc != SQLITE_ROW) return fail(error(rc, what));
        if (uptoStep < 0 || uptoStep > s.integer(0)) {
            return fail(Status::outOfRange(
                "session " + std::to_string(session) + " has " + std::to_string(s.integer(0)) +
                " steps; cannot fork it at step " + std::to_string(uptoStep)));
        }
    }
    std::int64_t fork = 0;
    {
        SqliteStatement s(
            m_db.get(),
            "INSERT INTO sessions (created_at, instruction, environment, model,"
            " action_format, config, forked_from, forked_at_step)"
            " SELECT ?2, instruction, environment, model, action_format, config, id, ?3"
            " FROM sessions WHERE id = ?1");
        s.bind(1, session).bind(2, nowMs()).bind(3, uptoStep);
        const int rc = s.step();
        if (rc != SQLITE_DONE) return fail(error(rc, what));
        if (sqlite3_changes(m_db.get()) == 0) {
            return fail(Status::notFound("session " + std::to_string(session) +
                                         " does not exist in " + m_path.string()));
        }
        fork = sqlite3_last_insert_rowid(m_db.get());
    }
    static constexpr std::array<const char*, 2> kCopies = {
        "INSERT INTO steps SELECT ?2, step_index, started_at, observation, url, title, request,"
        " response, model_error, actions, parse_error, results, timings FROM steps"
        " WHERE session_id = ?1 AND step_index < ?3",
        "INSERT INTO edits SELECT ?2, step_index, ordinal, path, revision, diff FROM edits"
        " WHERE session_id = ?1 AND step_index < ?3",
    };
    for (const char* sql : kCopies) {
        SqliteStatement s(m_db.get(), sql);
        s.bind(1, session).bind(2, fork).bind(3, uptoStep);
        const int rc = s.step();
        if (rc != SQLITE_DONE) return fail(error(rc, what));
    }
    if (Status status = execute("COMMIT", what); !status.isOk()) return fail(status);
    return fork;
}

Status SessionStore::deleteSession(std::int64_t session) {
    const std::string what = "deleting session " + std::to_string(session);
    IRIS_RETURN_IF_ERROR(execute("BEGIN IMMEDIATE", what));
    auto fail = [&](Status status) {
        rollback();
        return status;
    };
    // The images this session refers to: its observations and its requests' image parts (a
    // target image, say, is referenced only from a request).
    std::set<std::string> candidates;
    {
        SqliteStatement s(
            m_db.get(),
            "SELECT observation FROM steps WHERE session_id = ?1 AND observation IS NOT NULL"
            " UNION SELECT j.value FROM steps, json_tree(steps.request) AS j"
            " WHERE steps.session_id = ?1 AND j.key = 'sha256' AND j.type = 'text'");
        s.bind(1, session);
        int rc = SQLITE_ROW;
        while ((rc = s.step()) == SQLITE_ROW)
            candidates.insert(s.text(0));
        if (rc != SQLITE_DONE) return fail(error(rc, what));
    }
    static constexpr std::array<const char*, 4> kDeletes = {
        "UPDATE sessions SET forked_from = NULL, forked_at_step = NULL WHERE forked_from = ?1",
        "DELETE FROM edits WHERE session_id = ?1",
        "DELETE FROM events WHERE session_id = ?1",
        "DELETE FROM steps WHERE session_id = ?1",
    };
    for (const char* sql : kDeletes) {
        SqliteStatement s(m_db.get(), sql);
        s.bind(1, session);
        const int rc = s.step();
        if (rc != SQLITE_DONE) return fail(error(rc, what));
    }
    {
        SqliteStatement s(m_db.get(), "DELETE FROM sessions WHERE id = ?1");
        s.bind(1, session);
        const int rc = s.step();
        if (rc != SQLITE_DONE) return fail(error(rc, what));
        if (sqlite3_changes(m_db.get()) == 0) {
            return fail(Status::notFound("session " + std::to_string(session) +
                                         " does not exist in " + m_path.string()));
        }
    }
    if (!candidates.empty()) {
        // One pass over the remaining steps rather than one per candidate image.
        SqliteStatement s(m_db.get(),
                          "SELECT observation FROM steps WHERE observation IS NOT NULL"
                          " UNION SELECT j.value FROM steps, json_tree(steps.request) AS j"
                          " WHERE j.key = 'sha256' AND j.type = 'text'");
        int rc = SQLITE_ROW;
        while ((rc = s.step()) == SQLITE_ROW)
            candidates.erase(s.text(0));
        if (rc != SQLITE_DONE) return fail(error(rc, what));
    }
    for (const std::string& sha : candidates) {
        SqliteStatement s(m_db.get(), "DELETE FROM images WHERE sha256 = ?1");
        s.bind(1, sha);
        const int rc = s.step();
        if (rc != SQLITE_DONE) return fail(error(rc, what));
    }
    if (Status status = execute("COMMIT", what); !status.isOk()) return fail(status);
    return Status::ok();
}

}  // namespace iris::agent
