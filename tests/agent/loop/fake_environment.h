#pragma once
// Test doubles for the loop: an environment whose "render" is a solid colour read from the web
// project (so edits change what it shows), a model client that answers from a script, and a
// recorder that keeps everything in memory.
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "agent/clients/model_client.h"
#include "agent/environment.h"
#include "agent/recording/recorder.h"

namespace iris::agent::testing {

class FakeEnvironment final : public Environment {
public:
    // Without a project folder the screen is mid-grey; with one, it has the colour written in
    // color.txt as "B G R".
    explicit FakeEnvironment(std::filesystem::path project = {}) : m_project(std::move(project)) {}

    Status reset() override {
        executed.clear();
        return Status::ok();
    }
    Result<Observation> observe() override {
        ++observations;
        if (failObservationsAfter && observations > *failObservationsAfter)
            return Status::ioError("desktop: output FAKE-1 is gone (unplugged or disabled)");
        cv::Scalar colour(128, 128, 128);
        if (!m_project.empty()) {
            std::ifstream file(m_project / "color.txt");
            int b = 0, g = 0, r = 0;
            file >> b >> g >> r;
            colour = cv::Scalar(b, g, r);
        }
        Observation observation;
        observation.screenshot = cv::Mat(48, 64, CV_8UC3, colour);
        observation.title = "fake";
        return observation;
    }
    ActionResult execute(const Action& action) override {
        executed.push_back(action);
        return {};
    }
    Status reload() override {
        ++reloads;
        return Status::ok();
    }
    std::string describe() const override { return "fake"; }

    std::vector<Action> executed;
    int observations = 0;
    std::optional<int> failObservationsAfter;  // observe() fails once it has answered this many
    int reloads = 0;

private:
    std::filesystem::path m_project;
};

// Answers with the scripted texts in order; past the end it repeats the last one. With
// `blockUntilCancelled` it waits for cancel() instead of answering.
class ScriptedClient final : public ModelClient {
public:
    explicit ScriptedClient(std::vector<std::string> answers) : m_answers(std::move(answers)) {}

    Result<ChatResponse> complete(const ChatRequest& request, const TextStream&) override {
        requests.push_back(request);
        if (blockUntilCancelled) {
            std::unique_lock lock(m_mutex);
            m_cancelledCondition.wait(lock, [&] { return m_cancelled; });
            return Status::cancelled("cancelled");
        }
        ChatResponse response;
        response.text = m_answers.at(std::min(m_next++, m_answers.size() - 1));
        return response;
    }
    void cancel() override {
        std::lock_guard lock(m_mutex);
        m_cancelled = true;
        m_cancelledCondition.notify_all();
    }
    std::string describe() const override { return "scripted"; }

    std::vector<ChatRequest> requests;
    bool blockUntilCancelled = false;

private:
    std::vector<std::string> m_answers;
    std::size_t m_next = 0;
    std::mutex m_mutex;
    std::condition_variable m_cancelledCondition;
    bool m_cancelled = false;
};

class MemoryRecorder final : public Recorder {
public:
    Status recordStep(const StepRecord& step) override {
        steps.push_back(step);
        return Status::ok();
    }
    Status recordEvent(const SessionEvent& event) override {
        events.push_back(event);
        return Status::ok();
    }
    std::vector<StepRecord> steps;
    std::vector<SessionEvent> events;
};

// The text of every part of the last user message of `request`.
inline std::string lastUserText(const ChatRequest& request) {
    for (auto it = request.messages.rbegin(); it != request.messages.rend(); ++it) {
        if (it->role != "user") continue;
        std::string text;
        for (const ContentPart& part : it->content)
            text += part.text;
        return text;
    }
    return {};
}

// A Qwen-style tool call in the answer text.
inline std::string toolCall(const std::string& name, const std::string& arguments) {
    return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + arguments +
           "}\n</tool_call>";
}

}  // namespace iris::agent::testing
