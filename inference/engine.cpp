#include "inference/engine.h"

#include <algorithm>
#include <chrono>

namespace iris::inference {
namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

const char* stopReasonName(StopReason reason) {
    switch (reason) {
        case StopReason::EndOfGeneration:
            return "end of generation";
        case StopReason::StopString:
            return "stop string";
        case StopReason::MaxTokens:
            return "token limit";
        case StopReason::ContextFull:
            return "context full";
        case StopReason::Cancelled:
            return "cancelled";
    }
    return "?";
}

Result<std::unique_ptr<Engine>> Engine::load(const std::filesystem::path& modelPath,
                                             const EngineOptions& options) {
    if (options.contextSize <= 0 || options.maxSessions <= 0 || options.threads <= 0 ||
        options.prefillChunk <= 0) {
        return Status::invalidArgument(
            "context size, sessions, threads and prefill chunk must be positive");
    }
    std::unique_ptr<Engine> engine(new Engine());
    engine->m_options = options;
    Result<GgufFile> file = GgufFile::open(modelPath);
    if (!file) return file.status();
    engine->m_file = std::move(*file);
    Result<std::unique_ptr<Model>> model = createModel(*engine->m_file);
    if (!model) return model.status();
    engine->m_model = std::move(*model);
    Result<Tokenizer> tokenizer = Tokenizer::fromGguf(*engine->m_file);
    if (!tokenizer) return tokenizer.status();
    engine->m_tokenizer = std::move(*tokenizer);
    Result<ChatTemplate> chat = ChatTemplate::forModel(*engine->m_file);
    if (!chat) return chat.status();
    engine->m_chatTemplate = *chat;
    if (engine->m_tokenizer->vocabSize() > engine->m_model->config().vocabSize) {
        return Status::corrupt(modelPath.string() + ": the tokenizer has " +
                               std::to_string(engine->m_tokenizer->vocabSize()) +
                               " tokens but the model only " +
                               std::to_string(engine->m_model->config().vocabSize));
    }
    const std::int64_t blocksPerContext =
        (options.contextSize + options.kvBlockSize - 1) / options.kvBlockSize;
    // One spare block per session: a forked, partly filled block is copied before it is written.
    Result<KvCache> cache = KvCache::create(engine->m_model->kvCacheOptions(
        (blocksPerContext + 1) * options.maxSessions, options.kvBlockSize, options.kvType));
    if (!cache) return cache.status();
    engine->m_cache = std::move(*cache);
    engine->m_pool = std::make_unique<ThreadPool>(options.threads);
    return engine;
}

Result<std::unique_ptr<Session>> Engine::newSession() {
    if (m_openSessions >= m_options.maxSessions) {
        return Status::outOfRange("all " + std::to_string(m_options.maxSessions) +
                                  " sessions are in use");
    }
    ++m_openSessions;
    return std::unique_ptr<Session>(new Session(*this, m_cache->newSequence()));
}

Session::~Session() {
    m_engine.m_cache->release(m_sequence);
    --m_engine.m_openSessions;
}

// Runs `tokens` after m_tokens through the model in prefill chunks; logits of the last token.
Status Session::feed(std::span<const std::int32_t> tokens, std::vector<float>& logits) {
    KvCache& cache = *m_engine.m_cache;
    logits.clear();
    std::vector<TokenInput> batch;
    for (std::size_t begin = 0; begin < tokens.size();
         begin += std::size_t(m_engine.m_options.prefillChunk)) {
        const std::size_t end =
            std::min(tokens.size(), begin + std::size_t(m_engine.m_options.prefillChunk));
        const std::int64_t first = std::int64_t(m_tokens.size());
        IRIS_RETURN_IF_ERROR(cache.extend(m_sequence, first + std::int64_t(end - begin)));
        batch.clear();
        for (std::size_t i = begin; i < end; ++i) {
            const std::int64_t slot = first + std::int64_t(i - begin);
            const auto p = std::int32_t(slot);
            batch.push_back({tokens[i], m_sequence, slot, {p, p, p, 0}, i + 1 == tokens.size()});
        }
        const Status status = m_engine.m_model->forward(batch, cache, *m_engine.m_pool, logits);
        if (!status.isOk()) {
            cache.truncate(m_sequence, first);
            return status;
        }
        m_tokens.insert(m_tokens.end(), tokens.begin() + std::ptrdiff_t(begin),
                        tokens.begin() + std::ptrdiff_t(end));
    }
    return {};
}

Result<GenerateResult> Session::generate(const GenerateRequest& request) {
    const EngineOptions& options = m_engine.m_options;
    const Tokenizer& tokenizer = *m_engine.m_tokenizer;
    GenerateResult result;
    result.promptTokens = std::int64_t(request.prompt.size());
    if (request.prompt.empty()) return Status::invalidArgument("empty prompt");
    if (result.promptTokens > options.contextSize) {
        return Status::outOfRange("the prompt has " + std::to_string(result.promptTokens) +
                                  " tokens, more than the context of " +
                                  std::to_string(options.contextSize) +
                                  " (raise the context size)");
    }
    // Keep the K/V of the longest shared prefix; at least the last prompt token is run again so
    // that there are logits to sample from.
    std::size_t shared = 0;
    while (shared < m_tokens.size() && shared + 1 < request.prompt.size() &&
           m_tokens[shared] == request.prompt[shared]) {
        ++shared;
    }
    m_engine.m_cache->truncate(m_sequence, std::int64_t(shared));
    m_tokens.resize(shared);
    result.reusedTokens = std::int64_t(shared);

    auto start = std::chrono::steady_clock::now();
    std::vector<float> logits;
    IRIS_RETURN_IF_ERROR(feed(std::span(request.prompt).subspan(shared), logits));
    result.prefillSeconds = secondsSince(start);

    start = std::chrono::steady_clock::now();
    Sampler sampler(request.sampling);
    TokenDecoder decoder(tokenizer);
    std::vector<std::int32_t> history = request.prompt;
    for (;;) {
        if (std::int64_t(result.tokens.size()) >= request.maxTokens) {
            result.stop = StopReason::MaxTokens;
            break;
        }
        const std::int32_t token = sampler.sample(logits, history);
        if (tokenizer.isEndOfGeneration(token)) {
            result.stop = StopReason::EndOfGeneration;
            break;
        }
        result.tokens.push_back(token);
        history.push_back(token);
        const std::string piece = decoder.feed(token);
        const std::size_t before = result.text.size();
        result.text += piece;
        bool stopped = false;
        for (const std::string& stop : request.stopStrings) {
            // Search only where a new match can be: from the last stop.size() - 1 old bytes on.
            const std::size_t from = before >= stop.size() ? before - stop.size() + 1 : 0;
            const std::size_t at = stop.empty() ? std::string::npos : result.text.find(stop, from);
            if (at != std::string::npos) {
                result.text.resize(at);
                stopped = true;
            }
        }
        if (stopped) {
            result.stop = StopReason::StopString;
            break;
        }
        if (request.onToken && !request.onToken(token, piece)) {
            result.stop = StopReason::Cancelled;
            break;
        }
        if (std::int64_t(result.tokens.size()) >= request.maxTokens) {  // no need to run it
            result.stop = StopReason::MaxTokens;
            break;
        }
        if (std::int64_t(m_tokens.size()) + 1 > options.contextSize) {
            result.stop = StopReason::ContextFull;
            break;
        }
        const std::int32_t next[] = {token};
        IRIS_RETURN_IF_ERROR(feed(next, logits));
    }
    if (result.stop != StopReason::StopString) result.text += decoder.flush();
    result.decodeSeconds = secondsSince(start);
    return result;
}

}  // namespace iris::inference
