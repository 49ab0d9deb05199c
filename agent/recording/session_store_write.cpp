// Writing to a session: its steps (one transaction each) and its events.
#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "agent/recording/chat_json.h"
#include "agent/recording/session_store.h"
#include "agent/recording/session_store_internal.h"

namespace iris::agent {
namespace {

using detail::bigEndian;
using detail::nowMs;
using detail::SqliteStatement;
using nlohmann::json;

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

}  // namespace

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
    const StepWrite write{
        session, step, "recording step " + std::to_string(step.index),
        "session " + std::to_string(session) + " step " + std::to_string(step.index)};
    IRIS_RETURN_IF_ERROR(checkNextStep(write));
    Result<std::optional<std::string>> observation = storeObservation(write);
    if (!observation) return observation.status();
    Result<json> request = storeRequest(write, *observation);
    if (!request) return request.status();
    IRIS_RETURN_IF_ERROR(insertStepRow(write, *observation, *request));
    return insertEdits(write);
}

Status SessionStore::checkNextStep(const StepWrite& write) {
    SqliteStatement s(m_db.get(),
                      "SELECT status, (SELECT max(step_index) FROM steps WHERE session_id = ?1)"
                      " FROM sessions WHERE id = ?1");
    s.bind(1, write.session);
    const int rc = s.step();
    if (rc == SQLITE_DONE) {
        return Status::notFound("session " + std::to_string(write.session) + " does not exist in " +
                                m_path.string());
    }
    if (rc != SQLITE_ROW) return error(rc, write.what);
    if (s.text(0) != "running") {
        return Status::invalidArgument(write.where + ": the session has ended (" + s.text(0) +
                                       ") and takes no more steps");
    }
    const std::int64_t expected = s.isNull(1) ? 0 : s.integer(1) + 1;
    if (write.step.index != expected) {
        return Status::invalidArgument(write.where + ": steps must be consecutive; the next is " +
                                       std::to_string(expected));
    }
    return Status::ok();
}

Status SessionStore::storeImage(const std::string& sha, std::span<const std::uint8_t> bytes,
                                std::string_view mimeType, int width, int height,
                                std::string_view what) {
    SqliteStatement s(m_db.get(),
                      "INSERT OR IGNORE INTO images (sha256, mime_type, width, height, bytes)"
                      " VALUES (?1, ?2, ?3, ?4, ?5)");
    s.bind(1, sha).bind(2, mimeType).bind(3, width).bind(4, height).bindBlob(5, bytes);
    const int rc = s.step();
    return rc == SQLITE_DONE ? Status::ok() : error(rc, what);
}

Result<std::optional<std::string>> SessionStore::storeObservation(const StepWrite& write) {
    const StepRecord& step = write.step;
    if (step.observationPng.empty()) return std::optional<std::string>();
    const auto size = pngSize(step.observationPng);
    if (!size) return Status::invalidArgument(write.where + ": the observation is not a PNG");
    std::string sha = sha256Hex(step.observationPng);
    IRIS_RETURN_IF_ERROR(
        storeImage(sha, step.observationPng, "image/png", size->first, size->second, write.what));
    return std::optional<std::string>(std::move(sha));
}

// The request's images: stored once each, referred to by hash and, when the image is a step's
// observation, by that step.
Result<json> SessionStore::storeRequest(const StepWrite& write,
                                        const std::optional<std::string>& observation) {
    std::vector<std::shared_ptr<const EncodedImage>> images;
    const ChatRequest request = redacted(write.step.request, m_options.redactor);
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
            IRIS_RETURN_IF_ERROR(storeImage(sha, image.bytes, image.mimeType, image.width,
                                            image.height, write.what));
            if (observation && sha == *observation) {
                part["step"] = write.step.index;
                continue;
            }
            SqliteStatement s(m_db.get(),
                              "SELECT min(step_index) FROM steps WHERE session_id = ?1"
                              " AND observation = ?2");
            s.bind(1, write.session).bind(2, sha);
            const int rc = s.step();
            if (rc != SQLITE_ROW) return error(rc, write.what);
            if (!s.isNull(0)) part["step"] = s.integer(0);
        }
    }
    return requestJson;
}

Status SessionStore::insertStepRow(const StepWrite& write,
                                   const std::optional<std::string>& observation,
                                   const json& request) {
    const StepRecord& step = write.step;
    const Redactor& r = m_options.redactor;
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
    SqliteStatement s(m_db.get(),
                      "INSERT INTO steps (session_id, step_index, started_at, observation, url,"
                      " title, request, response, model_error, actions, parse_error, results,"
                      " timings) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
    s.bind(1, write.session)
        .bind(2, step.index)
        .bind(3, step.startedAtMs != 0 ? step.startedAtMs : nowMs())
        .bind(4, observation)
        .bind(5, r.redact(step.url))
        .bind(6, r.redact(step.title))
        .bind(7, toJsonText(request))
        .bind(8, responseText)
        .bind(9, r.redact(step.modelError))
        .bind(10, toJsonText(actionsToJson(step.actions, r)))
        .bind(11, r.redact(step.parseError))
        .bind(12, toJsonText(results))
        .bind(13, toJsonText(detail::timingsToJson(step.timings)));
    const int rc = s.step();
    return rc == SQLITE_DONE ? Status::ok() : error(rc, write.what);
}

Status SessionStore::insertEdits(const StepWrite& write) {
    const Redactor& r = m_options.redactor;
    for (std::size_t i = 0; i < write.step.edits.size(); ++i) {
        const FileEdit& edit = write.step.edits[i];
        SqliteStatement s(
            m_db.get(),
            "INSERT INTO edits (session_id, step_index, ordinal, path, revision, diff)"
            " VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
        s.bind(1, write.session)
            .bind(2, write.step.index)
            .bind(3, static_cast<std::int64_t>(i))
            .bind(4, r.redact(edit.path))
            .bind(5, edit.revision)
            .bind(6, r.redact(edit.diff));
        const int rc = s.step();
        if (rc != SQLITE_DONE) return error(rc, write.what);
    }
    return Status::ok();
}

Status SessionStore::addEvent(std::int64_t session, const SessionEvent& event) {
    const Redactor& r = m_options.redactor;
    std::optional<std::string> data;
    if (!event.data.is_null()) {
        json redactedData = event.data;
        r.redactJson(redactedData);
        data = toJsonText(redactedData);
    }
    SqliteStatement s(m_db.get(),
                      "INSERT INTO events (session_id, step_index, at, kind, message, data)"
                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    s.bind(1, session)
        .bind(2, event.stepIndex)
        .bind(3, event.atMs != 0 ? event.atMs : nowMs())
        .bind(4, r.redact(event.kind))
        .bind(5, r.redact(event.message))
        .bind(6, data);
    const int rc = s.step();
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
        return Status::notFound("session " + std::to_string(session) + " does not exist in " +
                                m_path.string());
    }
    if (rc != SQLITE_DONE) return error(rc, "writing an event");
    return Status::ok();
}

}  // namespace iris::agent
