// Opening a session database: the checks on an existing file, and the schema with its migrations.
#include <array>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include <sqlite3.h>

#include "agent/recording/session_store.h"
#include "agent/recording/session_store_internal.h"
#include "base/clock.h"

namespace iris::agent {
namespace {

namespace fs = std::filesystem;
using detail::bigEndian;
using detail::SqliteStatement;

// PRAGMA application_id: "Iris" in ASCII, so that another program's SQLite file is recognised.
constexpr std::int32_t kApplicationId = 0x49726973;

struct Migration {
    int version;
    const char* sql;
};

// Append only: a released migration never changes, since databases in the field have run it.
constexpr std::array<Migration, 3> kMigrations = {{
    {1, R"sql(
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    created_at INTEGER NOT NULL,
    ended_at INTEGER,
    instruction TEXT NOT NULL,
    environment TEXT NOT NULL,
    model TEXT NOT NULL,
    action_format TEXT NOT NULL,
    -- sessionStatusName(), checked on read: no CHECK, so a new status needs no table rebuild.
    status TEXT NOT NULL DEFAULT 'running',
    score REAL,
    config TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE images (
    sha256 TEXT PRIMARY KEY,
    mime_type TEXT NOT NULL,
    width INTEGER NOT NULL,
    height INTEGER NOT NULL,
    bytes BLOB NOT NULL
);
CREATE TABLE steps (
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    step_index INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    observation TEXT REFERENCES images(sha256),
    url TEXT NOT NULL,
    title TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT,
    model_error TEXT NOT NULL,
    actions TEXT NOT NULL,
    parse_error TEXT NOT NULL,
    results TEXT NOT NULL,
    timings TEXT NOT NULL,
    PRIMARY KEY (session_id, step_index)
);
CREATE INDEX steps_by_observation ON steps(session_id, observation);
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    step_index INTEGER,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX events_by_session ON events(session_id, id);
)sql"},
    // Web-project edits per step, and where a forked session came from.
    {2, R"sql(
CREATE TABLE edits (
    session_id INTEGER NOT NULL,
    step_index INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    path TEXT NOT NULL,
    revision INTEGER NOT NULL,
    diff TEXT NOT NULL,
    PRIMARY KEY (session_id, step_index, ordinal),
    FOREIGN KEY (session_id, step_index) REFERENCES steps(session_id, step_index)
        ON DELETE CASCADE
);
ALTER TABLE sessions ADD COLUMN forked_from INTEGER REFERENCES sessions(id);
ALTER TABLE sessions ADD COLUMN forked_at_step INTEGER;
)sql"},
    // Events carry their fields as JSON (SessionEvent::data); NULL in the events recorded before.
    {3, R"sql(
ALTER TABLE events ADD COLUMN data TEXT;
)sql"},
}};
static_assert(kMigrations.back().version == SessionStore::kSchemaVersion);

// Checks an existing file before SQLite touches it, so that a file that is not a database, or a
// database cut short, is reported as such and left exactly as it was.
Status checkExistingFile(const fs::path& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return Status::ok();
    if (!fs::is_regular_file(path, ec)) {
        return Status::invalidArgument(path.string() + ": not a file");
    }
    const std::uintmax_t size = fs::file_size(path, ec);
    if (ec) return Status::ioError(path.string() + ": " + ec.message());
    if (size == 0) return Status::ok();  // SQLite treats an empty file as an empty database

    std::array<unsigned char, 100> header{};
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::ioError(path.string() + ": cannot read the file");
    in.read(reinterpret_cast<char*>(header.data()), header.size());
    static constexpr char kMagic[] = "SQLite format 3";  // with its terminating zero: 16 bytes
    if (in.gcount() < static_cast<std::streamsize>(header.size()) ||
        std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) {
        return Status::corrupt(path.string() +
                               ": not an Iris session database (file is not a database)");
    }
    std::uint64_t pageSize = bigEndian(&header[16], 2);
    if (pageSize == 1) pageSize = 65536;
    const std::uint32_t changeCounter = bigEndian(&header[24], 4);
    const std::uint32_t pageCount = bigEndian(&header[28], 4);
    const std::uint32_t validFor = bigEndian(&header[92], 4);
    // While another connection has the database open (WAL mode keeps a -wal file beside it), a
    // checkpoint may have written page 1, with the new page count, before the pages after it:
    // the size is compared only for a database at rest, and measured after the header is read.
    if (fs::exists(path.string() + "-wal", ec)) return Status::ok();
    const std::uintmax_t sizeNow = fs::file_size(path, ec);
    if (ec) return Status::ioError(path.string() + ": " + ec.message());
    // The header's page count is only meaningful when it was written with the last change.
    if (changeCounter == validFor && pageCount > 0 && pageCount * pageSize > sizeNow) {
        return Status::corrupt(path.string() + ": damaged session database (truncated: its " +
                               "header says " + std::to_string(pageCount * pageSize) +
                               " bytes, the file has " + std::to_string(sizeNow) + ")");
    }
    return Status::ok();
}

}  // namespace

Result<SessionStore> SessionStore::open(const std::filesystem::path& dbFile,
                                        SessionStoreOptions options) {
    if (dbFile.empty()) return Status::invalidArgument("session database: empty path");
    IRIS_RETURN_IF_ERROR(checkExistingFile(dbFile));
    if (dbFile.has_parent_path()) {
        std::error_code ec;
        fs::create_directories(dbFile.parent_path(), ec);
        if (ec) {
            return Status::ioError(
                dbFile.parent_path().string() +
                ": cannot create the folder for the session database: " + ec.message());
        }
    }
    sqlite3* raw = nullptr;
    const int rc =
        sqlite3_open_v2(dbFile.c_str(), &raw,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    std::unique_ptr<sqlite3, Closer> db(raw);
    if (rc != SQLITE_OK) {
        return Status::ioError(dbFile.string() + ": cannot open the session database: " +
                               (raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
    }
    sqlite3_busy_timeout(raw, static_cast<int>(options.busyTimeout.count()));
    SessionStore store(std::move(db), dbFile, std::move(options));
    IRIS_RETURN_IF_ERROR(store.migrate());
    return store;
}

// Switching a database to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY at once,
// without its busy handler, when another connection holds a lock on the file (two evaluation
// workers opening a new database together). So the switch is retried here, within the same busy
// timeout as every other statement.
Status SessionStore::switchToWal() {
    const Clock::time_point start = Clock::now();
    for (;;) {
        SqliteStatement s(m_db.get(), "PRAGMA journal_mode = WAL");
        const int rc = s.step();
        if (rc == SQLITE_ROW) {
            if (s.text(0) == "wal") return Status::ok();
            return Status::ioError(m_path.string() + ": SQLite refused WAL mode (journal mode " +
                                   s.text(0) + ")");
        }
        const bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
        if (!busy || millisecondsSince(start) >= double(m_options.busyTimeout.count()))
            return error(rc, "switching to WAL mode");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

Status SessionStore::migrate() {
    const std::string path = m_path.string();
    auto pragmaInteger = [&](const char* sql) -> Result<std::int64_t> {
        SqliteStatement s(m_db.get(), sql);
        const int rc = s.step();
        if (rc != SQLITE_ROW) return error(rc, "reading the schema");
        return s.integer(0);
    };
    // One read transaction, so that the three come from one snapshot: read one by one, they could
    // straddle another process's migration and show its tables without its schema version.
    IRIS_RETURN_IF_ERROR(execute("BEGIN", "reading the schema"));
    auto applicationId = pragmaInteger("PRAGMA application_id");
    auto version = pragmaInteger("PRAGMA user_version");
    auto tables = pragmaInteger("SELECT count(*) FROM sqlite_master");
    rollback();  // only read
    if (!applicationId) return applicationId.status();
    if (!version) return version.status();
    if (!tables) return tables.status();

    if (*applicationId != 0 && *applicationId != kApplicationId) {
        return Status::corrupt(path + ": not an Iris session database (another program's " +
                               "SQLite file, application id " + std::to_string(*applicationId) +
                               ")");
    }
    if (*version == 0 && *tables > 0) {
        return Status::corrupt(path + ": not an Iris session database (it has tables but no " +
                               "Iris schema version)");
    }
    if (*version > kSchemaVersion) {
        return Status::unsupported(path + ": written by a newer Iris (schema version " +
                                   std::to_string(*version) + "; this Iris knows up to " +
                                   std::to_string(kSchemaVersion) + ")");
    }

    IRIS_RETURN_IF_ERROR(switchToWal());
    IRIS_RETURN_IF_ERROR(execute("PRAGMA foreign_keys = ON", "enabling foreign keys"));
    // In WAL mode NORMAL loses no committed transaction when the process dies (only on power loss).
    IRIS_RETURN_IF_ERROR(execute("PRAGMA synchronous = NORMAL", "setting synchronous mode"));
    if (m_options.maxPageCount) {
        const std::string sql =
            "PRAGMA max_page_count = " + std::to_string(*m_options.maxPageCount);
        SqliteStatement s(m_db.get(), sql.c_str());
        const int rc = s.step();
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) return error(rc, "setting max_page_count");
    }
    if (*version == kSchemaVersion) return Status::ok();

    IRIS_RETURN_IF_ERROR(execute("BEGIN IMMEDIATE", "upgrading the schema"));
    auto fail = [&](Status status) {
        rollback();
        return status;
    };
    // Another process may have upgraded it while this one waited for the lock.
    version = pragmaInteger("PRAGMA user_version");
    if (!version) return fail(version.status());
    for (const Migration& migration : kMigrations) {
        if (migration.version <= *version) continue;
        const Status status = execute(
            migration.sql, "upgrading the schema to version " + std::to_string(migration.version));
        if (!status.isOk()) return fail(status);
    }
    const std::string stamp = "PRAGMA user_version = " + std::to_string(kSchemaVersion) +
                              "; PRAGMA application_id = " + std::to_string(kApplicationId);
    if (Status status = execute(stamp.c_str(), "upgrading the schema"); !status.isOk()) {
        return fail(status);
    }
    if (Status status = execute("COMMIT", "upgrading the schema"); !status.isOk()) {
        return fail(status);
    }
    return Status::ok();
}

}  // namespace iris::agent
