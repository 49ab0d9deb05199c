#pragma once
// The agentic load generator behind iris_agent_load (agent_load_main.cpp), as a library so that
// its bookkeeping can be tested against a fake server (agent_load_test.cpp).
//
// It models what an agent does to an OpenAI-compatible server, which is not what chat benchmarks
// do: every session sends the same long system prompt (the tool descriptions), each turn resends
// the whole history plus one new observation of a few hundred tokens, and the replies are short
// (one tool call). So the prompt dominates, it grows turn by turn, and almost all of it was seen
// before: what decides an agent's latency is the time to first token and how much of each prompt
// the server finds in its prefix cache, not the decoding speed. The generator reports both.
//
// The workload is deterministic: the same options send the same text, so runs against different
// servers (Iris, llama-server, vLLM) compare like with like. Token counts are approximate (text
// is sized in characters, see kCharsPerToken); servers that report usage tell the real ones.
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "agent/clients/sse_parser.h"
#include "base/status.h"

namespace iris::bench {

// Observations are sized at this many characters a token, which their mix of English words,
// numbers and brackets keeps with the Qwen3 vocabulary; the system prompt's JSON schemas are
// sized at 4.5 (agentSystemPrompt). Both were counted with Qwen3's tokenizer.json.
inline constexpr int kCharsPerToken = 4;

struct AgentLoadOptions {
    std::string endpoint;  // the API's base URL, http(s)://host[:port][/path], e.g. .../v1
    std::string apiKey;    // sent as "Authorization: Bearer <key>" when not empty
    std::string model = "default";
    int sessions = 4;
    int turns = 6;
    int systemTokens = 1500;      // the shared system prompt, approximate
    int observationTokens = 300;  // each turn's new user message, approximate
    int maxTokens = 32;
    // Varies the observations (not the system prompt): a second run against a server that keeps
    // its prefix cache (or its KV disk tier) then shares only the system prompt with the first.
    int seed = 0;
    int requestTimeoutSeconds = 600;
};

// One chat-completions request: what was sent and what came back. Times are seconds from the
// request's start. Counts a server did not report are -1.
struct RequestRecord {
    int session = 0;
    int turn = 0;
    int messages = 0;  // in the request
    double ttft = -1;  // the first chunk with content, reasoning or a tool call; -1 when none came
    double total = 0;
    int generatedTokens = 0;  // usage.completion_tokens, else the chunks that carried output
    long promptTokens = -1;   // usage.prompt_tokens, else timings.cache_n + timings.prompt_n
    long cachedTokens = -1;   // usage.prompt_tokens_details.cached_tokens, else timings.cache_n
    std::string reply;        // the assistant's text (tool calls rendered as JSON text)
    std::string error;        // empty when the request succeeded
};

struct Distribution {
    int count = 0;
    double mean = 0, p50 = 0, p90 = 0, max = 0;  // percentiles by nearest rank
};

struct AgentLoadReport {
    double wall = 0;  // seconds, from the first request to the last reply
    int requests = 0;
    int errors = 0;
    Distribution ttft;                   // over the requests that produced output
    std::vector<double> ttftMeanByTurn;  // turn 0 first; -1 for a turn without a timed request
    long generatedTokens = 0;
    double tokensPerSecond = 0;  // generatedTokens / wall
    long promptTokens = 0;       // summed over the requests whose server reported the cache
    long cachedTokens = 0;
    int requestsWithCacheInfo = 0;
    std::string firstError;              // "session S turn T: ..." of the earliest failed request
    std::vector<RequestRecord> records;  // session by session, turn by turn

    // cachedTokens / promptTokens; -1 when no request reported its cache use.
    double cacheHitRate() const;
};

// The deterministic workload. The system prompt is the same for every session; an observation
// depends on (session, turn), so sessions share nothing after the system prompt.
std::string agentSystemPrompt(int approxTokens);
std::string agentObservation(int session, int turn, int approxTokens, int seed = 0);

// InvalidArgument, saying what is wrong, unless `url` is http:// or https:// with a host and no
// query or fragment.
Status checkEndpoint(std::string_view url);

// Parses one response stream (Server-Sent Events of chat.completion.chunk objects) into `record`:
// feed the body's bytes as they come; `now` is the time of their arrival, in seconds from the
// request's start. Not thread-safe; one per response.
class ChunkStream {
public:
    explicit ChunkStream(RequestRecord& record) : m_record(record) {}

    // Corrupt for a malformed event, IoError for an error the server reports in the stream.
    Status feed(std::string_view bytes, double now);
    // Corrupt when the stream carried no chunk; sets generatedTokens.
    Status finish();

private:
    Status event(const agent::SseEvent& event, double now);

    RequestRecord& m_record;
    agent::SseParser m_parser;
    std::vector<agent::SseEvent> m_events;
    int m_chunks = 0;
    int m_outputChunks = 0;  // chunks with content, reasoning or a tool call
    int m_usageCompletionTokens = -1;
};

// Runs the workload: one thread per session, each sending its turns one after another. A
// session stops at its first failed request (its history cannot go on without the reply).
// InvalidArgument for options that cannot run (bad endpoint, counts below 1).
Result<AgentLoadReport> runAgentLoad(const AgentLoadOptions& options);

// The report as text lines, or as one JSON object.
void printReport(const AgentLoadOptions& options, const AgentLoadReport& report, std::ostream& out);
std::string reportJson(const AgentLoadOptions& options, const AgentLoadReport& report);

// The whole program: parses the command line (`args` without the program name), runs, prints.
// Returns the exit status: 0, 1 when any request failed, 2 for a bad command line.
int agentLoadMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace iris::bench
