// Reading sessions back: the list of summaries, and one whole session with its steps, edits and
// events.
#include <map>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "agent/recording/chat_json.h"
#include "agent/recording/session_store.h"
#include "agent/recording/session_store_internal.h"

namespace iris::agent {
namespace {

using detail::SqliteStatement;
using nlohmann::json;

constexpr const char* kSummaryColumns =
    "SELECT id, created_at, ended_at, instruction, environment, model, action_format, status,"
    " score, forked_from, forked_at_step,"
    " (SELECT count(*) FROM steps WHERE session_id = sessions.id), config FROM sessions";

Result<SessionSummary> summaryFromRow(const SqliteStatement& s) {
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

Result<json> parseColumn(const std::string& text, const std::string& where) {
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) return Status::corrupt(where + ": not valid JSON");
    return parsed;
}

constexpr const char* kStepColumns =
    "SELECT step_index, started_at, observation, url, title, request, response, model_error,"
    " actions, parse_error, results, timings FROM steps";

// One row of kStepColumns; `where` names the session, for errors.
Result<StepRecord> stepFromRow(const SqliteStatement& s, const std::string& session,
                               const ImageLookupFn& lookup) {
    StepRecord step;
    step.index = static_cast<int>(s.integer(0));
    const std::string where = session + " step " + std::to_string(step.index);
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
            return action.status().withContext(where + " actions[" + std::to_string(i) + "]: ");
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
    step.timings = detail::timingsFromJson(*timings);
    return step;
}

}  // namespace

Result<std::vector<SessionSummary>> SessionStore::listSessions() {
    const std::string sql = std::string(kSummaryColumns) + " ORDER BY id DESC";
    SqliteStatement s(m_db.get(), sql.c_str());
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
    const SessionRead read{session, "loading session " + std::to_string(session),
                           m_path.string() + ": session " + std::to_string(session)};
    SessionRecord record;
    IRIS_RETURN_IF_ERROR(readSessionRow(read, record));
    IRIS_RETURN_IF_ERROR(readSteps(read, record));
    IRIS_RETURN_IF_ERROR(readEdits(read, record));
    IRIS_RETURN_IF_ERROR(readEvents(read, record));
    for (std::size_t i = 0; i < record.steps.size(); ++i) {
        if (record.steps[i].index != static_cast<int>(i)) {
            return Status::corrupt(read.where + " has no step " + std::to_string(i));
        }
    }
    return record;
}

Status SessionStore::readSessionRow(const SessionRead& read, SessionRecord& record) {
    const std::string path = m_path.string();
    const std::string sql = std::string(kSummaryColumns) + " WHERE id = ?1";
    SqliteStatement s(m_db.get(), sql.c_str());
    s.bind(1, read.session);
    const int rc = s.step();
    if (rc == SQLITE_DONE) {
        return Status::notFound("session " + std::to_string(read.session) + " does not exist in " +
                                path);
    }
    if (rc != SQLITE_ROW) return error(rc, read.what);
    auto summary = summaryFromRow(s);
    if (!summary) return summary.status().withContext(path + ": ");
    record.summary = std::move(*summary);
    auto config = parseColumn(s.text(12), read.where + " config");
    if (!config) return config.status();
    record.config = std::move(*config);
    return Status::ok();
}

Status SessionStore::readSteps(const SessionRead& read, SessionRecord& record) {
    // Each image is read once and shared by every step and request that shows it.
    std::map<std::string, std::shared_ptr<const EncodedImage>> images;
    const ImageLookupFn lookup =
        [&](const std::string& sha) -> Result<std::shared_ptr<const EncodedImage>> {
        if (const auto it = images.find(sha); it != images.end()) return it->second;
        Result<std::shared_ptr<const EncodedImage>> image = readImage(sha, read.what);
        if (image) images.emplace(sha, *image);
        return image;
    };
    const std::string sql =
        std::string(kStepColumns) + " WHERE session_id = ?1 ORDER BY step_index";
    SqliteStatement s(m_db.get(), sql.c_str());
    s.bind(1, read.session);
    int rc = SQLITE_OK;
    while ((rc = s.step()) == SQLITE_ROW) {
        Result<StepRecord> step = stepFromRow(s, read.where, lookup);
        if (!step) return step.status();
        record.steps.push_back(std::move(*step));
    }
    return rc == SQLITE_DONE ? Status::ok() : error(rc, read.what);
}

Result<std::shared_ptr<const EncodedImage>> SessionStore::readImage(const std::string& sha,
                                                                    const std::string& what) {
    SqliteStatement s(m_db.get(),
                      "SELECT mime_type, width, height, bytes FROM images WHERE sha256 = ?1");
    s.bind(1, sha);
    const int rc = s.step();
    if (rc == SQLITE_DONE)
        return Status::corrupt(m_path.string() + ": image " + sha + " is missing");
    if (rc != SQLITE_ROW) return error(rc, what);
    auto image = std::make_shared<EncodedImage>();
    image->mimeType = s.text(0);
    image->width = static_cast<int>(s.integer(1));
    image->height = static_cast<int>(s.integer(2));
    image->bytes = s.blob(3);
    return std::shared_ptr<const EncodedImage>(std::move(image));
}

Status SessionStore::readEdits(const SessionRead& read, SessionRecord& record) {
    SqliteStatement s(m_db.get(),
                      "SELECT step_index, path, revision, diff FROM edits WHERE session_id = ?1"
                      " ORDER BY step_index, ordinal");
    s.bind(1, read.session);
    int rc = SQLITE_OK;
    while ((rc = s.step()) == SQLITE_ROW) {
        const auto index = s.integer(0);
        // Steps are consecutive from 0, so a step's position is its index.
        if (index < 0 || static_cast<std::size_t>(index) >= record.steps.size()) {
            return Status::corrupt(read.where + ": an edit refers to missing step " +
                                   std::to_string(index));
        }
        record.steps[static_cast<std::size_t>(index)].edits.push_back(
            {s.text(1), static_cast<int>(s.integer(2)), s.text(3)});
    }
    return rc == SQLITE_DONE ? Status::ok() : error(rc, read.what);
}

Status SessionStore::readEvents(const SessionRead& read, SessionRecord& record) {
    SqliteStatement s(m_db.get(),
                      "SELECT step_index, at, kind, message, data FROM events WHERE session_id = ?1"
                      " ORDER BY id");
    s.bind(1, read.session);
    int rc = SQLITE_OK;
    while ((rc = s.step()) == SQLITE_ROW) {
        SessionEvent event;
        if (!s.isNull(0)) event.stepIndex = static_cast<int>(s.integer(0));
        event.atMs = s.integer(1);
        event.kind = s.text(2);
        event.message = s.text(3);
        if (!s.isNull(4)) {
            auto data = parseColumn(s.text(4), read.where + " event " + event.kind + " data");
            if (!data) return data.status();
            event.data = std::move(*data);
        }
        record.events.push_back(std::move(event));
    }
    return rc == SQLITE_DONE ? Status::ok() : error(rc, read.what);
}

}  // namespace iris::agent
