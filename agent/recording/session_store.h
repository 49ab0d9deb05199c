#pragma once
// Every session Iris runs, in one SQLite database (WAL mode): the session's description, and per
// step one transaction holding the observation, the model call, the actions and their results,
// file edits and timings. A crash loses at most the step being written. Screenshots are stored
// once per content (SHA-256); requests refer to them. Every text passes through the Redactor.
//
// Not thread-safe: open one SessionStore per thread (SQLite serialises writers across them).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/recording/recording_types.h"
#include "agent/recording/redactor.h"
#include "base/status.h"

struct sqlite3;

namespace iris::agent {

struct SessionStoreOptions {
    // How long a write waits for another process's transaction before failing as "locked".
    std::chrono::milliseconds busyTimeout{5000};
    Redactor redactor = Redactor::fromEnvironment();
    // A cap on the database size in pages (SQLite's max_page_count): a quota, and how tests
    // provoke "disk full".
    std::optional<std::int64_t> maxPageCount;
};

class SessionStore {
public:
    // The schema version this code writes; older databases are migrated on open.
    static constexpr int kSchemaVersion = 3;

    // Opens or creates `dbFile` (and its parent folders). Errors name the file: not a database,
    // damaged, newer than this code, locked by another process.
    static Result<SessionStore> open(const std::filesystem::path& dbFile,
                                     SessionStoreOptions options = {});

    SessionStore(SessionStore&&) noexcept;
    SessionStore& operator=(SessionStore&&) noexcept;
    SessionStore(const SessionStore&) = delete;
    SessionStore& operator=(const SessionStore&) = delete;
    ~SessionStore();

    const std::filesystem::path& path() const { return m_path; }

    // A new session with status "running"; returns its id.
    Result<std::int64_t> createSession(const SessionInfo& info);

    // One transaction. Steps of a session are consecutive from 0; a session that has finished
    // takes no more steps.
    Status appendStep(std::int64_t session, const StepRecord& step);

    // Its message and data pass through the Redactor; data is stored as JSON text (NULL when the
    // event has none). NotFound when the session does not exist.
    Status addEvent(std::int64_t session, const SessionEvent& event);

    // Sets the final status (not Running), the score when there is one, and the end time.
    Status finishSession(std::int64_t session, SessionStatus status,
                         std::optional<double> score = std::nullopt);

    // Newest first.
    Result<std::vector<SessionSummary>> listSessions();

    Result<SessionRecord> loadSession(std::int64_t session);

    // A new running session with the same description and copies of steps [0, uptoStep) of
    // `session` (their screenshots are shared); the loop continues it from step uptoStep.
    Result<std::int64_t> forkSession(std::int64_t session, int uptoStep);

    // One transaction: removes the session with its steps, edits and events, and the images no
    // other step refers to. Sessions forked from it keep their copied steps and forget the link.
    Status deleteSession(std::int64_t session);

    // One transaction: copies every session of the database `source` into this one under new
    // ids, with its steps, edits, events and the images they use (`iris eval merge` gathers the
    // shards' databases so). Times, statuses and scores stay as recorded; a fork's link follows
    // its origin when that is copied too. Returns the new id of each source session. The source
    // is checked (and migrated) as open() does; NotFound when it does not exist.
    // session_store_import.cpp.
    Result<std::map<std::int64_t, std::int64_t>> importSessions(
        const std::filesystem::path& source);

private:
    struct Closer {
        void operator()(sqlite3* db) const;
    };

    SessionStore(std::unique_ptr<sqlite3, Closer> db, std::filesystem::path path,
                 SessionStoreOptions options);

    // The step being written, and how errors name it ("recording step 3", "session 7 step 3").
    struct StepWrite {
        std::int64_t session;
        const StepRecord& step;
        std::string what;
        std::string where;
    };
    // The session being read, and how errors name it ("loading session 7", "<path>: session 7").
    struct SessionRead {
        std::int64_t session;
        std::string what;
        std::string where;
    };

    Status migrate();      // session_store_schema.cpp
    Status switchToWal();  // session_store_schema.cpp
    Status execute(const char* sql, std::string_view what);
    void rollback();
    Status error(int code, std::string_view what) const;

    // insertStep's phases, in order, inside appendStep's transaction (session_store_write.cpp).
    Status insertStep(std::int64_t session, const StepRecord& step);
    Status checkNextStep(const StepWrite& write);  // the session runs; the index is the next one
    Status storeImage(const std::string& sha, std::span<const std::uint8_t> bytes,
                      std::string_view mimeType, int width, int height, std::string_view what);
    Result<std::optional<std::string>> storeObservation(const StepWrite& write);  // its sha256
    // The redacted request as stored: image parts become references to stored images.
    Result<nlohmann::json> storeRequest(const StepWrite& write,
                                        const std::optional<std::string>& observation);
    Status insertStepRow(const StepWrite& write, const std::optional<std::string>& observation,
                         const nlohmann::json& request);
    Status insertEdits(const StepWrite& write);

    // loadSession's phases, in order (session_store_read.cpp).
    Status readSessionRow(const SessionRead& read, SessionRecord& record);  // summary, config
    Status readSteps(const SessionRead& read, SessionRecord& record);
    Result<std::shared_ptr<const EncodedImage>> readImage(const std::string& sha,
                                                          const std::string& what);
    Status readEdits(const SessionRead& read, SessionRecord& record);
    Status readEvents(const SessionRead& read, SessionRecord& record);

    std::unique_ptr<sqlite3, Closer> m_db;
    std::filesystem::path m_path;
    SessionStoreOptions m_options;
};

}  // namespace iris::agent
