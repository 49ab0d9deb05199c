#pragma once
// The inference engine as the rest of Iris uses it: a model file loaded with its tokenizer and
// chat template, a KV cache and compute threads, and sessions (conversations) that generate.
// A session keeps its tokens' K/V, so the next turn of a conversation computes only what is new
// after the longest prefix it shares with the previous turn.
//
// Not thread-safe: one thread drives an Engine and its sessions (the agent's worker thread);
// the engine's own compute threads do the parallel work inside each call. Sessions hold a
// reference to their Engine and must be destroyed first.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inference/chat_template.h"
#include "inference/gguf/gguf_file.h"
#include "inference/kv_cache.h"
#include "inference/models/model.h"
#include "inference/sampler.h"
#include "inference/status.h"
#include "inference/thread_pool.h"
#include "inference/tokenizer/tokenizer.h"

namespace iris::inference {

struct EngineOptions {
    int threads = ThreadPool::hardwareThreads();
    std::int64_t contextSize = 4096;  // tokens per session
    int maxSessions = 1;              // KV cache room for this many full contexts
    kernels::TensorType kvType = kernels::TensorType::F16;
    int kvBlockSize = 16;
    std::int64_t prefillChunk = 512;  // tokens per forward pass while reading a prompt
};

enum class StopReason { EndOfGeneration, StopString, MaxTokens, ContextFull, Cancelled };
const char* stopReasonName(StopReason reason);

struct GenerateRequest {
    std::vector<std::int32_t> prompt;  // the whole conversation so far, as token ids
    SamplingParams sampling;
    std::int64_t maxTokens = 256;
    std::vector<std::string> stopStrings;  // generation ends before the first occurrence
    // Called with each new token and the text it completes (possibly empty: a character can
    // span tokens). Return false to cancel.
    std::function<bool(std::int32_t token, std::string_view text)> onToken;
};

struct GenerateResult {
    std::vector<std::int32_t> tokens;  // generated, without the end-of-generation token
    std::string text;                  // their text, cut before a stop string
    StopReason stop = StopReason::MaxTokens;
    std::int64_t promptTokens = 0;
    std::int64_t reusedTokens = 0;  // prompt tokens whose K/V came from the previous turn
    double prefillSeconds = 0;
    double decodeSeconds = 0;
};

class Engine;

class Session {
public:
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Generates a continuation of `request.prompt`. OutOfRange when the prompt does not fit in
    // the context; InvalidArgument for token ids outside the vocabulary.
    Result<GenerateResult> generate(const GenerateRequest& request);

    // The tokens whose K/V the session holds.
    const std::vector<std::int32_t>& cachedTokens() const { return m_tokens; }

private:
    friend class Engine;
    Session(Engine& engine, SequenceId sequence) : m_engine(engine), m_sequence(sequence) {}
    Status feed(std::span<const std::int32_t> tokens, std::vector<float>& logits);

    Engine& m_engine;
    SequenceId m_sequence;
    std::vector<std::int32_t> m_tokens;
};

class Engine {
public:
    // Loads a GGUF model: maps the file, checks it, reads the tokenizer and the chat template,
    // allocates the KV cache. Errors name the file and what is wrong with it.
    static Result<std::unique_ptr<Engine>> load(const std::filesystem::path& modelPath,
                                                const EngineOptions& options);

    // A new, empty conversation. OutOfRange when maxSessions are already open.
    Result<std::unique_ptr<Session>> newSession();

    const GgufFile& file() const { return *m_file; }
    const Model& model() const { return *m_model; }
    const Tokenizer& tokenizer() const { return *m_tokenizer; }
    const ChatTemplate& chatTemplate() const { return *m_chatTemplate; }
    const EngineOptions& options() const { return m_options; }
    // The parts under the sessions, for tools that drive the model directly (iris bench). A
    // sequence such a tool creates in the cache must be released before sessions need the room.
    ThreadPool& pool() { return *m_pool; }
    KvCache& cache() { return *m_cache; }
    Model& mutableModel() { return *m_model; }

private:
    friend class Session;
    Engine() = default;

    EngineOptions m_options;
    std::optional<GgufFile> m_file;
    std::unique_ptr<Model> m_model;
    std::optional<Tokenizer> m_tokenizer;
    std::optional<ChatTemplate> m_chatTemplate;
    std::unique_ptr<ThreadPool> m_pool;
    std::optional<KvCache> m_cache;
    int m_openSessions = 0;
};

}  // namespace iris::inference
