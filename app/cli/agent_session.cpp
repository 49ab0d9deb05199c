#include "app/cli/agent_session.h"

#include <cstdio>
#include <optional>
#include <ostream>

#include "agent/recording/session_recorder.h"
#include "agent/recording/session_store.h"

namespace iris::app {
namespace {

int exitCode(const agent::LoopResult& result) {
    // Stopped on a runaway loop: the agent did not get there, as at its step limit.
    if (!result.runaway.empty()) return kExitNotDone;
    switch (result.end) {
        case agent::LoopEnd::Done:
            return kExitDone;
        case agent::LoopEnd::Failed:
        case agent::LoopEnd::MaxSteps:
        case agent::LoopEnd::NoImprovement:
            return kExitNotDone;
        case agent::LoopEnd::Stopped:
        case agent::LoopEnd::Error:
            break;
    }
    return kExitError;
}

std::string seconds(double milliseconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f s", milliseconds / 1000.0);
    return text;
}

}  // namespace

void printStep(std::ostream& out, const agent::StepReport& report) {
    out << "step " << report.index + 1 << ':';
    if (report.actions.empty()) out << " (no action)";
    for (const agent::Action& action : report.actions)
        out << ' ' << agent::describe(action);
    out << "  [model " << seconds(report.timings.modelMs) << ", act "
        << seconds(report.timings.executeMs) << "]\n";
    if (!report.verdict.empty()) out << "  " << report.verdict << '\n';
    for (const std::string& problem : report.problems)
        out << "  ! " << problem << '\n';
    out.flush();
}

Result<std::int64_t> parseSessionId(const std::string& text) {
    std::size_t used = 0;
    long long id = 0;
    try {
        id = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || id < 1)
        return Status::invalidArgument("'" + text + "' is not a session id (see iris sessions)");
    return std::int64_t(id);
}

int runAgentSession(const SessionPlan& plan, agent::ModelClient& client, std::ostream& out,
                    std::ostream& err, InterruptWatcher* interrupts) {
    Result<PreparedSession> prepared = prepareSession(plan);
    if (!prepared) {
        err << "iris: " << prepared.status().message() << '\n';
        return kExitError;
    }
    agent::Environment& environment = *prepared->environment;
    std::optional<agent::Workspace>& workspace = prepared->workspace;

    Result<agent::SessionStore> store = agent::SessionStore::open(plan.database);
    if (!store) {
        err << "iris: " << store.status().message() << '\n';
        return kExitError;
    }
    agent::SessionInfo info;
    info.instruction = plan.loop.instruction;
    info.environment = environment.describe();
    info.model = plan.clientDescription.empty() ? client.describe() : plan.clientDescription;
    info.actionFormat = std::string(agent::actionFormatName(plan.loop.format));
    info.config = sessionConfig(plan, workspace ? &*workspace : nullptr);
    Result<std::int64_t> session = store->createSession(info);
    if (!session) {
        err << "iris: " << session.status().message() << '\n';
        return kExitError;
    }
    out << "session " << *session << " in " << plan.database.string() << '\n'
        << "environment: " << info.environment << "\nmodel: " << info.model << '\n';
    out.flush();

    agent::SessionRecorder recorder(*store, *session);
    agent::AgentLoop loop(environment, client, agent::SafetyPolicy(prepared->safety),
                          workspace ? &*workspace : nullptr, &recorder, plan.loop);
    if (interrupts) interrupts->onInterrupt([&loop] { loop.requestStop(); });
    const agent::LoopResult result =
        loop.run([&](const agent::StepReport& r) { printStep(out, r); });
    if (interrupts) interrupts->onInterrupt({});

    if (Status finished = store->finishSession(*session, sessionStatusOf(result.end), result.score);
        !finished.isOk()) {
        err << "iris: " << finished.message() << '\n';
    }
    out << "session " << *session << ": " << agent::loopEndName(result.end) << " after "
        << result.steps << (result.steps == 1 ? " step" : " steps");
    if (result.score) {
        char score[16];
        std::snprintf(score, sizeof score, "%.4f", *result.score);
        out << ", score " << score;
    }
    if (!result.message.empty()) out << " (" << result.message << ')';
    out << '\n';
    return exitCode(result);
}

}  // namespace iris::app
