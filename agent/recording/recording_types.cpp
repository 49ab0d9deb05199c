#include "agent/recording/recording_types.h"

#include <array>
#include <utility>

namespace iris::agent {
namespace {

constexpr std::array<std::pair<SessionStatus, std::string_view>, 7> kStatusNames = {{
    {SessionStatus::Running, "running"},
    {SessionStatus::Done, "done"},
    {SessionStatus::Failed, "failed"},
    {SessionStatus::Stopped, "stopped"},
    {SessionStatus::Error, "error"},
    {SessionStatus::MaxSteps, "max_steps"},
    {SessionStatus::NoImprovement, "no_improvement"},
}};

}  // namespace

std::string_view sessionStatusName(SessionStatus status) {
    for (const auto& [value, name] : kStatusNames) {
        if (value == status) return name;
    }
    return "unknown";
}

Result<SessionStatus> sessionStatusFromName(std::string_view name) {
    for (const auto& [value, known] : kStatusNames) {
        if (known == name) return value;
    }
    return Status::corrupt("unknown session status \"" + std::string(name) + "\"");
}

}  // namespace iris::agent
