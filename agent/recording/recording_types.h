#pragma once
// What a recorded session holds: the session's description, and per step everything the loop saw,
// asked, got back and did. The session store writes and reads these; export and replay read them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/actions/action.h"
#include "agent/clients/chat.h"
#include "base/status.h"

namespace iris::agent {

// How a session ended (Running until it does). NoImprovement: a visual-goal session stopped because
// its renders stopped getting closer to the target.
enum class SessionStatus { Running, Done, Failed, Stopped, Error, MaxSteps, NoImprovement };

std::string_view sessionStatusName(SessionStatus status);  // "running", "max_steps", ...
Result<SessionStatus> sessionStatusFromName(std::string_view name);

struct SessionInfo {
    std::string instruction;
    std::string environment;   // Environment::describe()
    std::string model;         // ModelClient::describe()
    std::string actionFormat;  // "computer_13", "pyautogui", "uitars", "tools"
    nlohmann::json config = nlohmann::json::object();  // max_steps, sleep_after_execution, ...
    std::int64_t createdAtMs = 0;                      // 0: now
};

// What an action did; `ok` false means the environment or workspace refused it.
struct ActionOutcome {
    bool ok = true;
    std::string error;
    std::string output;  // ReadFile's content, a script's output
    friend bool operator==(const ActionOutcome&, const ActionOutcome&) = default;
};

// One file the step changed in the web project, as a unified diff against its previous revision.
struct FileEdit {
    std::string path;
    int revision = 0;
    std::string diff;
    friend bool operator==(const FileEdit&, const FileEdit&) = default;
};

// Milliseconds spent in each phase of the step.
struct StepTimings {
    double captureMs = 0;
    double encodeMs = 0;
    double modelMs = 0;
    double parseMs = 0;
    double executeMs = 0;
    double recordMs = 0;
    friend bool operator==(const StepTimings&, const StepTimings&) = default;
};

struct StepRecord {
    int index = 0;                             // 0-based, dense within a session
    std::int64_t startedAtMs = 0;              // wall clock; 0: now
    std::vector<std::uint8_t> observationPng;  // the screenshot the model saw (encodeObservation)
    std::string url;
    std::string title;
    ChatRequest request;                   // images are stored once, by content hash
    std::optional<ChatResponse> response;  // empty when the model call failed
    std::string modelError;                // why there is no response
    std::vector<Action> actions;           // as parsed from the response
    std::string parseError;                // the parser's complaint, if any
    std::vector<ActionOutcome> results;    // one per executed action (may be fewer than actions)
    std::vector<FileEdit> edits;
    StepTimings timings;
};

// Something that happened in a session besides its steps. `message` is for people; what a
// program reads back (ModelImageEvent, for one) travels typed in `data`, never parsed from the
// message.
struct SessionEvent {
    SessionEvent() = default;
    SessionEvent(std::optional<int> step, std::int64_t at, std::string eventKind, std::string text,
                 nlohmann::json fields = nullptr)
        : stepIndex(step),
          atMs(at),
          kind(std::move(eventKind)),
          message(std::move(text)),
          data(std::move(fields)) {}

    std::optional<int> stepIndex;
    std::int64_t atMs = 0;  // 0: now
    std::string kind;       // "info", "warning", "error", "stop", "model_image", ...
    std::string message;
    // The event's fields as a JSON object; null when it has none (and in every event recorded
    // before session schema version 3).
    nlohmann::json data;
};

struct SessionSummary {
    std::int64_t id = 0;
    std::int64_t createdAtMs = 0;
    std::optional<std::int64_t> endedAtMs;
    std::string instruction;
    std::string environment;
    std::string model;
    std::string actionFormat;
    SessionStatus status = SessionStatus::Running;
    std::optional<double> score;
    int stepCount = 0;
    std::optional<std::int64_t> forkedFrom;  // the session this one continues, if any
    std::optional<int> forkedAtStep;         // steps [0, forkedAtStep) were copied from it
};

struct SessionRecord {
    SessionSummary summary;
    nlohmann::json config = nlohmann::json::object();
    std::vector<StepRecord> steps;  // by index
    std::vector<SessionEvent> events;
};

}  // namespace iris::agent
