#pragma once
// `iris eval validate|run|report`: OSWorld-style evaluation (docs/osworld.md). Returns the
// process exit code: 0 the command worked (whatever the scores), 1 validate found malformed task
// files, 2 bad usage, 3 the run itself failed or was interrupted.

namespace iris::app {

int runEval(int argc, char** argv);

}  // namespace iris::app
