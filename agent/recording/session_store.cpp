#include "agent/recording/session_store.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <string>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "agent/recording/chat_json.h"

namespace iris::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// PRAGMA application_id: "Iris" in ASCII, so that another program's SQLite file is recognised.
constexpr std::int32_t kApplicationId = 0x49726973;

struct Migration {
    int version;
    const char* sql;
};

// Append only: a released migration never changes, since databases in the field have run it.
constexpr std::array<Migration, 2> kMigrations = {{
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
}};
static_assert(kMigrations.back().version == SessionStore::kSchemaVersion);

std::int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// One prepared statement. A failed prepare or bind is reported by the next step().
class Statement {
public:
    Statement(sqlite3* db, const char* sql) {
        m_rc = sqlite3_prepare_v2(db, sql, -1, &m_statement, nullptr);
    }
    ~Statement() { sqlite3_finalize(m_statement); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, std::int64_t value) {
        return check(m_statement ? sqlite3_bind_int64(m_statement, index, value) : m_rc);
    }
    Statement& bind(int index, int value) { return bind(index, std::int64_t{value}); }
    Statement& bind(int index, double value) {
        return check(m_statement ? sqlite3_bind_double(m_statement, index, value) : m_rc);
    }
    Statement& bind(int index, std::string_view text) {
        return check(m_statement ? sqlite3_bind_text64(m_statement, index, text.data(), text.size(),
                                                       SQLITE_TRANSIENT, SQLITE_UTF8)
                                 : m_rc);
    }
    Statement& bindBlob(int index, std::span<const std::uint8_t> bytes) {
        // A zero-length blob from a null pointer would bind NULL.
        static constexpr std::uint8_t kNothing = 0;
        return check(m_statement ? sqlite3_bind_blob64(m_statement, index,
                                                       bytes.empty() ? &kNothing : bytes.data(),
                                                       bytes.size(), SQLITE_TRANSIENT)
                                 : m_rc);
    }
    Statement& bindNull(int index) {
        return check(m_statement ? sqlite3_bind_null(m_statement, index) : m_rc);
    }
    template <class T>
    Statement& bind(int index, const std::optional<T>& value) {
        return value ? bind(index, *value) : bindNull(index);
    }

    // SQLITE_ROW, SQLITE_DONE, or an error code.
    int step() {
        if (m_rc != SQLITE_OK) return m_rc;
        return sqlite3_step(m_statement);
    }

    bool isNull(int column) const {
        return sqlite3_column_type(m_statement, column) == SQLITE_NULL;
    }
    std::int64_t integer(int column) const { return sqlite3_column_int64(m_statement, column); }
    double real(int column) const { return sqlite3_column_double(m_statement, column); }
    std::string text(int column) const {
        const auto* data = sqlite3_column_text(m_statement, column);
        const int size = sqlite3_column_bytes(m_statement, column);
        if (data == nullptr) return {};
        return {reinterpret_cast<const char*>(data), static_cast<std::size_t>(size)};
    }
    std::vector<std::uint8_t> blob(int column) const {
        const auto* data =
            static_cast<const std::uint8_t*>(sqlite3_column_blob(m_statement, column));
        const int size = sqlite3_column_bytes(m_statement, column);
        if (data == nullptr) return {};
        return {data, data + size};
    }
    std::optional<std::int64_t> optionalInteger(int column) const {
        if (isNull(column)) return std::nullopt;
        return integer(column);
    }

private:
    Statement& check(int rc) {
        if (m_rc == SQLITE_OK && rc != SQLITE_OK) m_rc = rc;
        return *this;
    }

    sqlite3_stmt* m_statement = nullptr;
    int m_rc = SQLITE_OK;
};

std::uint32_t bigEndian(const unsigned char* p, int bytes) {
    std::uint32_t value = 0;
    for (int i = 0; i < bytes; ++i)
        value = value << 8 | p[i];
    return value;
}

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
    // The header's page count is only meaningful when it was written with the last change.
    if (changeCounter == validFor && pageCount > 0 && pageCount * pageSize > size) {
        return Status::corrupt(path.string() + ": damaged session database (truncated: its " +
                               "header says " + std::to_string(pageCount * pageSize) +
                               " bytes, the file has " + std::to_string(size) + ")");
    }
    return Status::ok();
}

// Width and height from a PNG's IHDR chunk; nullopt when `bytes` is not a PNG.
std::optional<std::pair<int, int>> pngSize(std::span<const std::uint8_t> bytes) {
    static constexpr std::array<std::uint8_t, 8> kSignature = {0x89, 'P',  'N',  'G',
                                                               '\r', '\n', 0x1a, '\n'};
    if (bytes.size() < 24 || !std::equal(kSignature.begin(), kSignature.end(), bytes.begin()) ||
        std::memcmp(bytes.data() + 12, "IHDR", 4) != 0) {
        return std::nullopt;
    }
    const auto width = bigEndian(bytes.data() + 16, 4);
    const auto height = bigEndian(bytes.data() + 20, 4);
    if (width == 0 || height == 0 || width > 1u << 24 || height > 1u << 24) return std::nullopt;
    return std::pair{static_cast<int>(width), static_cast<int>(height)};
}

ChatRequest redacted(const ChatRequest& request, const Redactor& redactor) {
    ChatRequest out = request;
    if (redactor.empty()) return out;
    for (ChatMessage& message : out.messages) {
        for (ContentPart& part : message.content)
            part.text = redactor.redact(part.text);
        for (ToolCall& call : message.toolCalls) {
            call.id = redactor.redact(call.id);
            call.name = redactor.redact(call.name);
            call.arguments = redactor.redact(call.arguments);
        }
        message.toolCallId = redactor.redact(message.toolCallId);
    }
    for (ToolDefinition& tool : out.tools) {
        tool.name = redactor.redact(tool.name);
        tool.description = redactor.redact(tool.description);
        tool.parametersSchema = redactor.redact(tool.parametersSchema);
    }
    for (std::string& stop : out.stop)
        stop = redactor.redact(stop);
    return out;
}

json actionsToJson(const std::vector<Action>& actions, const Redactor& redactor) {
    json out = json::array();
    for (const Action& action : actions) {
        json item = actionToJson(action);
        // Every field but the kind: TypeText's text, a file's content, a URL.
        for (auto& [key, value] : item.items()) {
            if (key != "type") redactor.redactJson(value);
        }
        out.push_back(std::move(item));
    }
    return out;
}

json timingsToJson(const StepTimings& t) {
    return {{"capture_ms", t.captureMs}, {"encode_ms", t.encodeMs},   {"model_ms", t.modelMs},
            {"parse_ms", t.parseMs},     {"execute_ms", t.executeMs}, {"record_ms", t.recordMs}};
}

StepTimings timingsFromJson(const json& j) {
    auto get = [&](const char* key) {
        const auto it = j.find(key);
        return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
    };
    return {get("capture_ms"), get("encode_ms"),  get("model_ms"),
            get("parse_ms"),   get("execute_ms"), get("record_ms")};
}

Result<json> parseColumn(const std::string& text, const std::string& where) {
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) return Status::corrupt(where + ": not valid JSON");
    return parsed;
}

}  // namespace

void SessionStore::Closer::operator()(sqlite3* db) const {
    sqlite3_close_v2(db);
}

SessionStore::SessionStore(std::unique_ptr<sqlite3, Closer> db, std::filesystem::path path,
                           SessionStoreOptions options)
    : m_db(std::move(db)), m_path(std::move(path)), m_options(std::move(options)) {}

SessionStore::SessionStore(SessionStore&&) noexcept = default;
SessionStore& SessionStore::operator=(SessionStore&&) noexcept = default;
SessionStore::~SessionStore() = default;

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

Status SessionStore::migrate() {
    const std::string path = m_path.string();
    auto pragmaInteger = [&](const char* sql) -> Result<std::int64_t> {
        Statement s(m_db.get(), sql);
        const int rc = s.step();
        if (rc != SQLITE_ROW) return error(rc, "reading the schema");
        return s.integer(0);
    };
    auto applicationId = pragmaInteger("PRAGMA application_id");
    if (!applicationId) return applicationId.status();
    auto version = pragmaInteger("PRAGMA user_version");
    if (!version) return version.status();
    auto tables = pragmaInteger("SELECT count(*) FROM sqlite_master");
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

    {
        Statement s(m_db.get(), "PRAGMA journal_mode = WAL");
        const int rc = s.step();
        if (rc != SQLITE_ROW) return error(rc, "switching to WAL mode");
        if (s.text(0) != "wal") {
            return Status::ioError(path + ": SQLite refused WAL mode (journal mode " + s.text(0) +
                                   ")");
        }
    }
    IRIS_RETURN_IF_ERROR(execute("PRAGMA foreign_keys = ON", "enabling foreign keys"));
    // In WAL mode NORMAL loses no committed transaction when the process dies (only on power loss).
    IRIS_RETURN_IF_ERROR(execute("PRAGMA synchronous = NORMAL", "setting synchronous mode"));
    if (m_options.maxPageCount) {
        const std::string sql =
            "PRAGMA max_page_count = " + std::to_string(*m_options.maxPageCount);
        Statement s(m_db.get(), sql.c_str());
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

Result<std::int64_t> SessionStore::createSession(const SessionInfo& info) {
    const Redactor& r = m_options.redactor;
    json config = info.config.is_null() ? json::object() : info.config;
    r.redactJson(config);
    Statement s(m_db.get(),
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

Status SessionStore::appendStep(std::int64_t session, const StepRecord& step) {
    const std::string what = "recording step " + std::to_string(step.index);
    IRIS_RETURN_IF_ERROR(execute("BEGIN IMMEDIATE", what));
    const Status status = insertStep(session, step);
    if (!status.isOk()) {
        rollback();
        return status;
    }
    if (const int rc = sqlite3_exec(m_db.get(), "COMMIT", nullptr, nullptr, nullptr);
        rc != SQLITE_OK) {
        const Status commitError = error(rc, what);
        rollback();
        return commitError;
    }
    return Status::ok();
}

Status SessionStore::insertStep(std::int64_t session, const StepRecord& step) {
    const std::string what = "recording step " + std::to_string(step.index);
    const std::string where =
        "session " + std::to_string(session) + " step " + std::to_string(step.index);
    const Redactor& r = m_options.redactor;

    {
        Statement s(m_db.get(),
                    "SELECT status, (SELECT max(step_index) FROM steps WHERE session_id = ?1)"
                    " FROM sessions WHERE id = ?1");
        s.bind(1, session);
        const int rc = s.step();
        if (rc == SQLITE_DONE) {
            return Status::notFound("session " + std::to_string(session) + " does not exist in " +
                                    m_path.string());
        }
        if (rc != SQLITE_ROW) return error(rc, what);
        if (s.text(0) != "running") {
            return Status::invalidArgument(where + ": the session has ended (" + s.text(0) +
                                           ") and takes no more steps");
        }
        const std::int64_t expected = s.isNull(1) ? 0 : s.integer(1) + 1;
        if (step.index != expected) {
            return Status::invalidArgument(where + ": steps must be consecutive; the next is " +
                                           std::to_string(expected));
        }
    }

    auto storeImage = [&](const std::string& sha, std::span<const std::uint8_t> bytes,
                          std::string_view mimeType, int width, int height) -> Status {
        Statement s(m_db.get(),
                    "INSERT OR IGNORE INTO images (sha256, mime_type, width, height, bytes)"
                    " VALUES (?1, ?2, ?3, ?4, ?5)");
        s.bind(1, sha).bind(2, mimeType).bind(3, width).bind(4, height).bindBlob(5, bytes);
        const int rc = s.step();
        return rc == SQLITE_DONE ? Status::ok() : error(rc, what);
    };

    std::optional<std::string> observation;
    if (!step.observationPng.empty()) {
        const auto size = pngSize(step.observationPng);
        if (!size) {
            return Status::invalidArgument(where + ": the observation is not a PNG");
        }
        observation = sha256Hex(step.observationPng);
        IRIS_RETURN_IF_ERROR(
            storeImage(*observation, step.observationPng, "image/png", size->first, size->second));
    }

    // The request's images: stored once each, referred to by hash and, when the image is a
    // step's observation, by that step.
    std::vector<std::shared_ptr<const EncodedImage>> images;
    const ChatRequest request = redacted(step.request, r);
    json requestJson = chatRequestToJson(request);
    for (const ChatMessage& message : request.messages) {
        for (const ContentPart& part : message.content) {
            if (part.isImage()) images.push_back(part.image);
        }
    }
    std::size_t imageOrdinal = 0;
    for (json& message : requestJson["messages"]) {
        for (json& part : message["content"]) {
            if (part["type"] != "image") continue;
            const EncodedImage& image = *images.at(imageOrdinal++);
            const std::string sha = part["sha256"];
            IRIS_RETURN_IF_ERROR(
                storeImage(sha, image.bytes, image.mimeType, image.width, image.height));
            if (observation && sha == *observation) {
                part["step"] = step.index;
                continue;
            }
            Statement s(m_db.get(),
                        "SELECT min(step_index) FROM steps WHERE session_id = ?1"
                        " AND observation = ?2");
            s.bind(1, session).bind(2, sha);
            const int rc = s.step();
            if (rc != SQLITE_ROW) return error(rc, what);
            if (!s.isNull(0)) part["step"] = s.integer(0);
        }
    }

    std::optional<std::string> responseText;
    if (step.response) {
        json response = chatResponseToJson(*step.response);
        r.redactJson(response);
        responseText = toJsonText(response);
    }
    json results = json::array();
    for (const ActionOutcome& outcome : step.results) {
        results.push_back({{"ok", outcome.ok},
                           {"error", r.redact(outcome.error)},
                           {"output", r.redact(outcome.output)}});
    }

    {
        Statement s(m_db.get(),
                    "INSERT INTO steps (session_id, step_index, started_at, observation, url,"
                    " title, request, response, model_error, actions, parse_error, results,"
                    " timings) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
        s.bind(1, session)
            .bind(2, step.index)
            .bind(3, step.startedAtMs != 0 ? step.startedAtMs : nowMs())
            .bind(4, observation)
            .bind(5, r.redact(step.url))
            .bind(6, r.redact(step.title))
            .bind(7, toJsonText(requestJson))
            .bind(8, responseText)
            .bind(9, r.redact(step.modelError))
            .bind(10, toJsonText(actionsToJson(step.actions, r)))
            .bind(11, r.redact(step.parseError))
            .bind(12, toJsonText(results))
            .bind(13, toJsonText(timingsToJson(step.timings)));
        const int rc = s.step();
        if (rc != SQLITE_DONE) return error(rc, what);
    }
    for (std::size_t i = 0; i < step.edits.size(); ++i) {
        const FileEdit& edit = step.edits[i];
        Statement s(m_db.get(),
                    "INSERT INTO edits (session_id, step_index, ordinal, path, revision, diff)"
                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
        s.bind(1, session)
            .bind(2, step.index)
            .bind(3, static_cast<std::int64_t>(i))
            .bind(4, r.redact(edit.path))
            .bind(5, edit.revision)
            .bind(6, r.redact(edit.diff));
        const int rc = s.step();
        if (rc != SQLITE_DONE) return error(rc, what);
    }
    return Status::ok();
}

Status SessionStore::addEvent(std::int64_t session, const SessionEvent& event) {
    const Redactor& r = m_options.redactor;
    Statement s(m_db.get(),
                "INSERT INTO events (session_id, step_index, at, kind, message)"
                " VALUES (?1, ?2, ?3, ?4, ?5)");
    s.bind(1, session)
        .bind(2, event.stepIndex)
        .bind(3, event.atMs != 0 ? event.atMs : nowMs())
        .bind(4, r.redact(event.kind))
        .bind(5, r.redact(event.message));
    const int rc = s.step();
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
        return Status::notFound("session " + std::to_string(session) + " does not exist in " +
                                m_path.string());
    }
    if (rc != SQLITE_DONE) return error(rc, "writing an event");
    return Status::ok();
}

Status SessionStore::finishSession(std::int64_t session, SessionStatus status,
                                   std::optional<double> score) {
    if (status == SessionStatus::Running) {
        return Status::invalidArgument("finishSession: \"running\" is not a final status");
    }
    Statement s(m_db.get(),
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

namespace {

constexpr const char* kSummaryColumns =
    "SELECT id, created_at, ended_at, instruction, environment, model, action_format, status,"
    " score, forked_from, forked_at_step,"
    " (SELECT count(*) FROM steps WHERE session_id = sessions.id), config FROM sessions";

Result<SessionSummary> summaryFromRow(const Statement& s) {
    SessionSummary summary;
    summary.id = s.integer(0);
    summary.createdAtMs = s.integer(1);
    summary.endedAtMs = s.optionalInteger(2);
    summary.instruction = s.text(3);
    summary.environment = s.text(4);
    summary.model = s.text(5);
    summary.actionFormat = s.text(6);
    auto status = sessionStatusFromName(s.text(7));
    if (!status) return status.status();
    summary.status = *status;
    if (!s.isNull(8)) summary.score = s.real(8);
    summary.forkedFrom = s.optionalInteger(9);
    if (!s.isNull(10)) summary.forkedAtStep = static_cast<int>(s.integer(10));
    summary.stepCount = static_cast<int>(s.integer(11));
    return summary;
}

}  // namespace

Result<std::vector<SessionSummary>> SessionStore::listSessions() {
    const std::string sql = std::string(kSummaryColumns) + " ORDER BY id DESC";
    Statement s(m_db.get(), sql.c_str());
    std::vector<SessionSummary> sessions;
    int rc = SQLITE_OK;
    while ((rc = s.step()) == SQLITE_ROW) {
        auto summary = summaryFromRow(s);
        if (!summary) return summary.status().withContext(m_path.string() + ": ");
        sessions.push_back(std::move(*summary));
    }
    if (rc != SQLITE_DONE) return error(rc, "listing sessions");
    return sessions;
}

Result<SessionRecord> SessionStore::loadSession(std::int64_t session) {
    const std::string path = m_path.string();
    const std::string what = "loading session " + std::to_string(session);
    SessionRecord record;
    {
        const std::string sql = std::string(kSummaryColumns) + " WHERE id = ?1";
        Statement s(m_db.get(), sql.c_str());
        s.bind(1, session);
        const int rc = s.step();
        if (rc == SQLITE_DONE) {
            return Status::notFound("session " + std::to_string(session) + " does not exist in " +
                                    path);
        }
        if (rc != SQLITE_ROW) return error(rc, what);
        auto summary = summaryFromRow(s);
        if (!summary) return summary.status().withContext(path + ": ");
        record.summary = std::move(*summary);
        auto config =
            parseColumn(s.text(12), path + ": session " + std::to_string(session) + " config");
        if (!config) return config.status();
        record.config = std::move(*config);
    }

    // Each image is read once and shared by every step and request that shows it.
    std::map<std::string, std::shared_ptr<const EncodedImage>> images;
    auto lookup = [&](const std::string& sha) -> Result<std::shared_ptr<const EncodedImage>> {
        if (const auto it = images.find(sha); it != images.end()) return it->second;
        Statement s(m_db.get(),
                    "SELECT mime_type, width, height, bytes FROM images WHERE sha256 = ?1");
        s.bind(1, sha);
        const int rc = s.step();
        if (rc == SQLITE_DONE) {
            return Status::corrupt(path + ": image " + sha + " is missing");
        }
        if (rc != SQLITE_ROW) return error(rc, what);
        auto image = std::make_shared<EncodedImage>();
        image->mimeType = s.text(0);
        image->width = static_cast<int>(s.integer(1));
        image->height = static_cast<int>(s.integer(2));
        image->bytes = s.blob(3);
        images.emplace(sha, image);
        return std::shared_ptr<const EncodedImage>(std::move(image));
    };

    {
        Statement s(m_db.get(),
                    "SELECT step_index, started_at, observation, url, title, request, response,"
                    " model_error, actions, parse_error, results, timings FROM steps"
                    " WHERE session_id = ?1 ORDER BY step_index");
        s.bind(1, session);
        int rc = SQLITE_OK;
        while ((rc = s.step()) == SQLITE_ROW) {
            StepRecord step;
            step.index = static_cast<int>(s.integer(0));
            const std::string where = path + ": session " + std::to_string(session) + " step " +
                                      std::to_string(step.index);
            step.startedAtMs = s.integer(1);
            if (!s.isNull(2)) {
                auto observation = lookup(s.text(2));
                if (!observation) return observation.status();
                step.observationPng = (*observation)->bytes;
            }
            step.url = s.text(3);
            step.title = s.text(4);
            auto requestJson = parseColumn(s.text(5), where + " request");
            if (!requestJson) return requestJson.status();
            auto request = chatRequestFromJson(*requestJson, lookup);
            if (!request) return request.status().withContext(where + " ");
            step.request = std::move(*request);
            if (!s.isNull(6)) {
                auto responseJson = parseColumn(s.text(6), where + " response");
                if (!responseJson) return responseJson.status();
                auto response = chatResponseFromJson(*responseJson);
                if (!response) return response.status().withContext(where + " ");
                step.response = std::move(*response);
            }
            step.modelError = s.text(7);
            auto actions = parseColumn(s.text(8), where + " actions");
            if (!actions) return actions.status();
            if (!actions->is_array()) return Status::corrupt(where + " actions: not an array");
            for (std::size_t i = 0; i < actions->size(); ++i) {
                auto action = actionFromJson((*actions)[i]);
                if (!action) {
                    return action.status().withContext(where + " actions[" + std::to_string(i) +
                                                       "]: ");
                }
                step.actions.push_back(std::move(*action));
            }
            step.parseError = s.text(9);
            auto results = parseColumn(s.text(10), where + " results");
            if (!results) return results.status();
            for (const json& item : *results) {
                step.results.push_back(
                    {item.value("ok", false), item.value("error", ""), item.value("output", "")});
            }
            auto timings = parseColumn(s.text(11), where + " timings");
            if (!timings) return timings.status();
            step.timings = timingsFromJson(*timings);
            record.steps.push_back(std::move(step));
        }
        if (rc != SQLITE_DONE) return error(rc, what);
    }
    {
        Statement s(m_db.get(),
                    "SELECT step_index, path, revision, diff FROM edits WHERE session_id = ?1"
                    " ORDER BY step_index, ordinal");
        s.bind(1, session);
        int rc = SQLITE_OK;
        while ((rc = s.step()) == SQLITE_ROW) {
            const auto index = s.integer(0);
            // Steps are consecutive from 0, so a step's position is its index.
            if (index < 0 || static_cast<std::size_t>(index) >= record.steps.size()) {
                return Status::corrupt(path + ": session " + std::to_string(session) +
                                       ": an edit refers to missing step " + std::to_string(index));
            }
            record.steps[static_cast<std::size_t>(index)].edits.push_back(
                {s.text(1), static_cast<int>(s.integer(2)), s.text(3)});
        }
        if (rc != SQLITE_DONE) return error(rc, what);
    }
    {
        Statement s(m_db.get(),
                    "SELECT step_index, at, kind, message FROM events WHERE session_id = ?1"
                    " ORDER BY id");
        s.bind(1, session);
        int rc = SQLITE_OK;
        while ((rc = s.step()) == SQLITE_ROW) {
            SessionEvent event;
            if (!s.isNull(0)) event.stepIndex = static_cast<int>(s.integer(0));
            event.atMs = s.integer(1);
            event.kind = s.text(2);
            event.message = s.text(3);
            record.events.push_back(std::move(event));
        }
        if (rc != SQLITE_DONE) return error(rc, what);
    }
    for (std::size_t i = 0; i < record.steps.size(); ++i) {
        if (record.steps[i].index != static_cast<int>(i)) {
            return Status::corrupt(path + ": session " + std::to_string(session) + " has no step " +
                                   std::to_string(i));
        }
    }
    return record;
}

Result<std::int64_t> SessionStore::forkSession(std::int64_t session, int uptoStep) {
    const std::string what = "forking session " + std::to_string(session);
    IRIS_RETURN_IF_ERROR(execute("BEGIN IMMEDIATE", what));
    auto fail = [&](Status status) {
        rollback();
        return status;
    };
    {
        Statement s(m_db.get(), "SELECT count(*) FROM steps WHERE session_id = ?1");
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
        Statement s(m_db.get(),
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
        Statement s(m_db.get(), sql);
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
        Statement s(
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
        Statement s(m_db.get(), sql);
        s.bind(1, session);
        const int rc = s.step();
        if (rc != SQLITE_DONE) return fail(error(rc, what));
    }
    {
        Statement s(m_db.get(), "DELETE FROM sessions WHERE id = ?1");
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
        Statement s(m_db.get(),
                    "SELECT observation FROM steps WHERE observation IS NOT NULL"
                    " UNION SELECT j.value FROM steps, json_tree(steps.request) AS j"
                    " WHERE j.key = 'sha256' AND j.type = 'text'");
        int rc = SQLITE_ROW;
        while ((rc = s.step()) == SQLITE_ROW)
            candidates.erase(s.text(0));
        if (rc != SQLITE_DONE) return fail(error(rc, what));
    }
    for (const std::string& sha : candidates) {
        Statement s(m_db.get(), "DELETE FROM images WHERE sha256 = ?1");
        s.bind(1, sha);
        const int rc = s.step();
        if (rc != SQLITE_DONE) return fail(error(rc, what));
    }
    if (Status status = execute("COMMIT", what); !status.isOk()) return fail(status);
    return Status::ok();
}

}  // namespace iris::agent
