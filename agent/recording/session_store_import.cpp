// Copying the sessions of another database into this one (SessionStore::importSessions).
#include <array>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <sqlite3.h>

#include "agent/recording/session_store.h"
#include "agent/recording/session_store_internal.h"

namespace iris::agent {

using detail::SqliteStatement;

namespace {

struct SourceSession {
    std::int64_t id = 0;
    std::optional<std::int64_t> forkedFrom;
};

}  // namespace

Result<std::map<std::int64_t, std::int64_t>> SessionStore::importSessions(
    const std::filesystem::path& source) {
    std::error_code ec;
    if (!std::filesystem::exists(source, ec)) {
        return Status::notFound(source.string() + ": no such session database");
    }
    {
        // The same checks (not a database, damaged, newer) and migrations as open(), so that the
        // columns copied below are this code's.
        SessionStoreOptions options;
        options.busyTimeout = m_options.busyTimeout;
        Result<SessionStore> checked = SessionStore::open(source, std::move(options));
        if (!checked) return checked.status();
    }
    const std::string what = "importing the sessions of " + source.string();
    {
        SqliteStatement attach(m_db.get(), "ATTACH DATABASE ?1 AS import_source");
        attach.bind(1, source.string());
        if (const int rc = attach.step(); rc != SQLITE_DONE) return error(rc, what);
    }
    auto detach = [&] {
        sqlite3_exec(m_db.get(), "DETACH DATABASE import_source", nullptr, nullptr, nullptr);
    };
    if (Status begun = execute("BEGIN IMMEDIATE", what); !begun.isOk()) {
        detach();
        return begun;
    }
    auto fail = [&](Status status) {
        rollback();
        detach();
        return status;
    };
    std::vector<SourceSession> sessions;
    {
        SqliteStatement s(m_db.get(),
                          "SELECT id, forked_from FROM import_source.sessions"
                          " ORDER BY id");
        int rc = SQLITE_ROW;
        while ((rc = s.step()) == SQLITE_ROW)
            sessions.push_back({s.integer(0), s.optionalInteger(1)});
        if (rc != SQLITE_DONE) return fail(error(rc, what));
    }
    {
        SqliteStatement s(m_db.get(),
                          "INSERT OR IGNORE INTO images (sha256, mime_type, width, height, bytes)"
                          " SELECT sha256, mime_type, width, height, bytes"
                          " FROM import_source.images");
        if (const int rc = s.step(); rc != SQLITE_DONE) return fail(error(rc, what));
    }
    std::map<std::int64_t, std::int64_t> ids;
    for (const SourceSession& session : sessions) {
        SqliteStatement s(
            m_db.get(),
            "INSERT INTO sessions (created_at, ended_at, instruction, environment, model,"
            " action_format, status, score, config)"
            " SELECT created_at, ended_at, instruction, environment, model, action_format,"
            " status, score, config FROM import_source.sessions WHERE id = ?1");
        s.bind(1, session.id);
        if (const int rc = s.step(); rc != SQLITE_DONE) return fail(error(rc, what));
        ids[session.id] = sqlite3_last_insert_rowid(m_db.get());
    }
    static constexpr std::array<const char*, 3> kCopies = {
        "INSERT INTO steps (session_id, step_index, started_at, observation, url, title, request,"
        " response, model_error, actions, parse_error, results, timings)"
        " SELECT ?2, step_index, started_at, observation, url, title, request, response,"
        " model_error, actions, parse_error, results, timings FROM import_source.steps"
        " WHERE session_id = ?1",
        "INSERT INTO edits (session_id, step_index, ordinal, path, revision, diff)"
        " SELECT ?2, step_index, ordinal, path, revision, diff FROM import_source.edits"
        " WHERE session_id = ?1",
        "INSERT INTO events (session_id, step_index, at, kind, message, data)"
        " SELECT ?2, step_index, at, kind, message, data FROM import_source.events"
        " WHERE session_id = ?1 ORDER BY id",
    };
    for (const SourceSession& session : sessions) {
        for (const char* sql : kCopies) {
            SqliteStatement s(m_db.get(), sql);
            s.bind(1, session.id).bind(2, ids.at(session.id));
            if (const int rc = s.step(); rc != SQLITE_DONE) return fail(error(rc, what));
        }
        // A fork keeps its link when its origin came along.
        const auto origin = session.forkedFrom ? ids.find(*session.forkedFrom) : ids.end();
        if (origin == ids.end()) continue;
        SqliteStatement s(m_db.get(),
                          "UPDATE sessions SET forked_from = ?3, forked_at_step = (SELECT"
                          " forked_at_step FROM import_source.sessions WHERE id = ?1)"
                          " WHERE id = ?2");
        s.bind(1, session.id).bind(2, ids.at(session.id)).bind(3, origin->second);
        if (const int rc = s.step(); rc != SQLITE_DONE) return fail(error(rc, what));
    }
    if (Status status = execute("COMMIT", what); !status.isOk()) return fail(status);
    detach();
    return ids;
}

}  // namespace iris::agent
