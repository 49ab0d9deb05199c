#pragma once
// Subcommands that run, replay and inspect agent sessions. Each returns the process exit code
// (see app/cli/agent_session.h: 0 done, 1 not done, 2 bad usage, 3 error or stopped).

namespace iris::app {

int runRun(int argc, char** argv);       // run_command.cpp
int runDemo(int argc, char** argv);      // demo_command.cpp
int runSessions(int argc, char** argv);  // sessions_command.cpp
int runExport(int argc, char** argv);    // sessions_command.cpp
int runReplay(int argc, char** argv);    // replay_command.cpp
int runRender(int argc, char** argv);    // render_command.cpp

}  // namespace iris::app
