#pragma once
// The loop's Recorder on top of one session of a SessionStore: each step is one transaction.
// Used on the thread that owns the store (stores are not thread-safe), by the CLI and the GUI.
#include <cstdint>

#include "agent/recording/recorder.h"
#include "agent/recording/session_store.h"

namespace iris::agent {

class SessionRecorder final : public Recorder {
public:
    SessionRecorder(SessionStore& store, std::int64_t session)
        : m_store(store), m_session(session) {}

    Status recordStep(const StepRecord& step) override {
        return m_store.appendStep(m_session, step);
    }
    Status recordEvent(const SessionEvent& event) override {
        return m_store.addEvent(m_session, event);
    }

private:
    SessionStore& m_store;
    std::int64_t m_session;
};

}  // namespace iris::agent
