#pragma once
// Where the loop puts what happened: one call per finished step (one SQLite transaction in the
// session store, so a killed process loses at most the step in flight) and free-form events.
#include "agent/recording/recording_types.h"
#include "base/status.h"

namespace iris::agent {

class Recorder {
public:
    virtual ~Recorder() = default;
    virtual Status recordStep(const StepRecord& step) = 0;
    virtual Status recordEvent(const SessionEvent& event) = 0;
};

}  // namespace iris::agent
