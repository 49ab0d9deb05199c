// iris_agent_load: replays an agent-like workload against an OpenAI-compatible server and reports
// time to first token, generated tokens per second and the prefix-cache hit rate. Agents send a
// long shared prefix (the tool descriptions), resend a growing history every turn and get short
// replies, so their latency is prompt processing and cache reuse; agent_load.h says more.
//
//   iris_agent_load --endpoint http://127.0.0.1:8080/v1 [--sessions 4] [--turns 6] [--json]
//
// Exit status: 0, 1 when any request failed (the first error is printed), 2 for a bad command
// line or endpoint.
#include <iostream>
#include <string>
#include <vector>

#include "tests/bench/agent_load.h"

int main(int argc, char** argv) {
    return iris::bench::agentLoadMain(std::vector<std::string>(argv + 1, argv + argc), std::cout,
                                      std::cerr);
}
