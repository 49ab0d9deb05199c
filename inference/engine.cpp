#include "inference/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>
#include <system_error>

#include "base/clock.h"

namespace iris::inference {
namespace {

// EngineOptions::onLoadProgress in bytes of work; reports only when the per-mille value rises,
// so that a caller posting each report to a GUI thread is not flooded.
class LoadProgress {
public:
    LoadProgress(const std::function<void(double)>& report, std::uint64_t total)
        : m_report(report), m_total(std::max<std::uint64_t>(total, 1)) {}

    // A milestone (the end of a phase) is reported whatever the step.
    void add(std::uint64_t bytes, bool milestone = false) {
        if (!m_report) return;
        m_done = std::min(m_done + bytes, m_total);
        const double fraction = double(m_done) / double(m_total);
        // 1 is finish()'s alone: all bytes done is not yet a ready engine.
        if (m_done == m_total || fraction <= m_reported) return;
        if (!milestone && fraction - m_reported < 1e-3) return;
        m_reported = fraction;
        m_report(fraction);
    }
    void reach(std::uint64_t done) { add(done > m_done ? done - m_done : 0, true); }
    void finish() {
        if (m_report) m_report(1.0);
    }

private:
    const std::function<void(double)>& m_report;
    std::uint64_t m_total;
    std::uint64_t m_done = 0;
    double m_reported = 0;
};

std::uint64_t tensorBytes(const GgufFile& file) {
    std::uint64_t bytes = 0;
    for (const GgufTensor& tensor : file.tensors())
        bytes += tensor.data.size();
    return bytes;
}

// Touches every page of the file's tensors so that the OS reads them in now, in slices small
// enough for a smooth bar over a file of many GB.
void readWeightsIn(const GgufFile& file, LoadProgress& progress) {
    constexpr std::size_t kPage = 4096;  // the smallest page size: no page is skipped
    constexpr std::size_t kSlice = std::size_t(4) << 20;
    for (const GgufTensor& tensor : file.tensors()) {
        const auto* bytes = reinterpret_cast<const volatile unsigned char*>(tensor.data.data());
        for (std::size_t begin = 0; begin < tensor.data.size(); begin += kSlice) {
            const std::size_t end = std::min(tensor.data.size(), begin + kSlice);
            for (std::size_t at = begin; at < end; at += kPage)
                static_cast<void>(bytes[at]);  // a volatile read: never optimised away
            progress.add(end - begin);
        }
    }
    progress.add(0, true);
}

}  // namespace

bool cutAtStopString(std::string& text, std::size_t before, std::span<const std::string> stops) {
    bool stopped = false;
    for (const std::string& stop : stops) {
        const std::size_t from = before >= stop.size() ? before - stop.size() + 1 : 0;
        const std::size_t at = stop.empty() ? std::string::npos : text.find(stop, from);
        if (at != std::string::npos) {
            text.resize(at);
            stopped = true;
        }
    }
    return stopped;
}

std::size_t stopStringHoldback(std::string_view text, std::span<const std::string> stops) {
    std::size_t held = 0;
    for (const std::string& stop : stops) {
        if (stop.empty()) continue;
        for (std::size_t k = std::min(stop.size() - 1, text.size()); k > held; --k) {
            if (text.ends_with(std::string_view(stop).substr(0, k))) {
                held = k;
                break;
            }
        }
    }
    return held;
}

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
    return load(modelPath, options, nullptr);
}

Status Engine::createModelOnDevice() {
    Result<std::string> arch = m_file->getString("general.architecture");
    if (!arch) return arch.status();
    const DeviceChoice& choice = m_options.device;
    Result<ResolvedDevice> where = resolveDevice(
        choice, *arch,
        choice.kind == DeviceKind::Cpu ? CudaAvailability{} : probeCuda(choice.index));
    if (!where) return where.status().withContext(m_file->name() + ": ");
    m_deviceNote = where->note;
    if (where->cuda) {
        const ModelBackend backend{true, where->index, m_options.prefillChunk};
        Result<std::unique_ptr<Model>> model = createModel(*m_file, backend);
        if (model) {
            m_model = std::move(*model);
            m_deviceName = "cuda:" + std::to_string(where->index);
            return {};
        }
        // auto falls back only where the CUDA path does not take this model's shapes or types;
        // running out of device memory stays an error (the user has a GPU and should hear).
        if (choice.kind != DeviceKind::Auto || model.status().code() != StatusCode::Unsupported)
            return model.status();
        m_deviceNote = "running on the CPU: " + model.status().message();
    }
    Result<std::unique_ptr<Model>> model = createModel(*m_file);
    if (!model) return model.status();
    m_model = std::move(*model);
    m_deviceName = "cpu";
    return {};
}

Result<std::unique_ptr<Engine>> Engine::load(const std::filesystem::path& modelPath,
                                             const EngineOptions& options,
                                             std::unique_ptr<VisionModel> vision) {
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
    // The projector's size before it is opened: an estimate (its metadata counts too) that keeps
    // the bar from jumping back when the projector turns out to be large.
    std::error_code sizeError;
    const std::uint64_t projectorBytes =
        vision == nullptr && !options.mmprojPath.empty() && options.onLoadProgress
            ? std::uint64_t(std::filesystem::file_size(options.mmprojPath, sizeError))
            : 0;
    const std::uint64_t modelBytes = tensorBytes(*engine->m_file);
    LoadProgress progress(options.onLoadProgress,
                          2 * (modelBytes + (sizeError ? 0 : projectorBytes)));
    if (options.onLoadProgress) readWeightsIn(*engine->m_file, progress);
    IRIS_RETURN_IF_ERROR(engine->createModelOnDevice());
    if (options.denseAttention) engine->m_model->setDenseAttention(true);
    Result<Tokenizer> tokenizer = Tokenizer::fromGguf(*engine->m_file);
    if (!tokenizer) return tokenizer.status();
    engine->m_tokenizer = std::move(*tokenizer);
    Result<ChatTemplate> chat = options.chatTemplate
                                    ? Result<ChatTemplate>(ChatTemplate(*options.chatTemplate))
                                    : ChatTemplate::forModel(*engine->m_file);
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
    if (options.kvTiers.computeBytes > 0) {
        Result<std::unique_ptr<KvTiers>> tiers =
            KvTiers::attach(*engine->m_cache, options.kvTiers, engine->m_pool.get());
        if (!tiers) return tiers.status().withContext(modelPath.string() + ": ");
        engine->m_tiers = std::move(*tiers);
    }
    // A device backend allocates its KV pool now, so that too small a GPU is a load error.
    IRIS_RETURN_IF_ERROR(
        engine->m_model->bindCache(*engine->m_cache).withContext(modelPath.string() + ": "));
    progress.reach(2 * modelBytes);

    const std::int64_t hidden = engine->m_model->config().hiddenSize;
    std::string projectorName = "the vision tower";
    if (vision == nullptr && !options.mmprojPath.empty()) {
        const std::string mmproj = options.mmprojPath.string();
        projectorName = mmproj;
        Result<GgufFile> projector = GgufFile::open(options.mmprojPath);
        if (!projector) return projector.status();
        engine->m_projectorFile = std::move(*projector);
        const GgufFile& projectorFile = *engine->m_projectorFile;
        const Result<std::string> arch = projectorFile.getString("general.architecture");
        if (!arch || *arch != "clip") {
            return Status::invalidArgument(
                mmproj + ": not a vision projector (general.architecture is " +
                (arch ? "'" + *arch + "'" : std::string("missing")) +
                ", expected 'clip'); pass the model's mmproj GGUF with --mmproj");
        }
        // Checked before the tower loads so that a wrong pair is named as such.
        const Result<std::int64_t> width = projectorFile.getInteger("clip.vision.projection_dim");
        if (width && *width != hidden) {
            return Status::invalidArgument(
                mmproj + " and " + modelPath.string() + " are not a pair: the projector makes " +
                std::to_string(*width) +
                "-wide embeddings (clip.vision.projection_dim) but the language model is " +
                std::to_string(hidden) + " wide (embedding_length)");
        }
        if (options.onLoadProgress) readWeightsIn(projectorFile, progress);
        Result<std::unique_ptr<VisionModel>> loaded = VisionModel::load(projectorFile);
        if (!loaded) return loaded.status();
        vision = std::move(*loaded);
        vision->setPrecision(resolveVisionPrecision(options.visionPrecision));
    }
    if (vision != nullptr) {
        if (vision->config().projectionDim != hidden) {
            return Status::invalidArgument(projectorName + " and " + modelPath.string() +
                                           " are not a pair: the projector makes " +
                                           std::to_string(vision->config().projectionDim) +
                                           "-wide embeddings but the language model is " +
                                           std::to_string(hidden) + " wide");
        }
        engine->m_vision = std::move(vision);
    }
    progress.finish();
    return engine;
}

ImagePreprocessOptions Engine::imageOptions() const {
    ImagePreprocessOptions out;
    out.filter = m_options.imageFilter;
    if (m_vision != nullptr) {
        const VisionConfig& c = m_vision->config();
        out.minPixels = c.minPixels;
        out.maxPixels = c.maxPixels;
        out.patchSize = c.patchSize;
        out.mergeSize = c.mergeSize;
        out.mean = c.imageMean;
        out.std = c.imageStd;
    }
    if (m_options.imageMinPixels > 0) out.minPixels = m_options.imageMinPixels;
    if (m_options.imageMaxPixels > 0) out.maxPixels = m_options.imageMaxPixels;
    return out;
}

Result<std::shared_ptr<const ImagePatches>> Engine::prepareImage(const RgbImage& image) const {
    if (m_vision == nullptr) {
        return Status::unsupported("this model has no vision tower loaded (pass --mmproj)");
    }
    Result<ImagePatches> patches = preprocessImage(image, imageOptions());
    if (!patches) return patches.status();
    return std::shared_ptr<const ImagePatches>(std::make_shared<ImagePatches>(std::move(*patches)));
}

Result<std::shared_ptr<const ImagePatches>> Engine::prepareImage(
    std::span<const std::uint8_t> encoded) const {
    if (m_vision == nullptr) {
        return Status::unsupported("this model has no vision tower loaded (pass --mmproj)");
    }
    Result<RgbImage> image = decodeImage(encoded);
    if (!image) return image.status();
    return prepareImage(*image);
}

Result<std::shared_ptr<const std::vector<float>>> Engine::imageEmbeddings(const ImagePatches& image,
                                                                          bool* encoded) {
    if (encoded) *encoded = false;
    if (m_vision == nullptr) {
        return Status::unsupported("this model has no vision tower loaded (pass --mmproj)");
    }
    if (std::shared_ptr<const std::vector<float>> hit = cachedImageEmbeddings(image.hash))
        return hit;
    std::vector<float> embeddings;
    IRIS_RETURN_IF_ERROR(m_vision->encode(image, *m_pool, embeddings));
    if (encoded) *encoded = true;
    return keepImageEmbeddings(image, std::move(embeddings));
}

std::shared_ptr<const std::vector<float>> Engine::cachedImageEmbeddings(const Sha256Digest& hash) {
    for (std::size_t i = 0; i < m_imageCache.size(); ++i) {
        if (m_imageCache[i].hash == hash) {
            CachedImage hit = std::move(m_imageCache[i]);
            m_imageCache.erase(m_imageCache.begin() + std::ptrdiff_t(i));
            m_imageCache.push_back(hit);
            return hit.embeddings;
        }
    }
    return nullptr;
}

Result<std::shared_ptr<const std::vector<float>>> Engine::keepImageEmbeddings(
    const ImagePatches& image, std::vector<float> made) {
    const std::size_t expected = std::size_t(image.tokenCount() * m_vision->config().projectionDim);
    if (made.size() != expected) {
        return Status::internal("the vision tower made " + std::to_string(made.size()) +
                                " values for an image of " + std::to_string(image.tokenCount()) +
                                " tokens, expected " + std::to_string(expected));
    }
    auto embeddings = std::make_shared<const std::vector<float>>(std::move(made));
    const auto bytes = std::int64_t(embeddings->size() * sizeof(float));
    if (bytes <= m_options.imageCacheBytes) {
        while (m_imageCacheBytes + bytes > m_options.imageCacheBytes) {
            m_imageCacheBytes -=
                std::int64_t(m_imageCache.front().embeddings->size() * sizeof(float));
            m_imageCache.erase(m_imageCache.begin());
        }
        m_imageCache.push_back({image.hash, embeddings});
        m_imageCacheBytes += bytes;
    }
    return embeddings;
}

Result<GenerateRequest> Engine::splitAtPlaceholders(
    std::span<const std::int32_t> tokens, std::int32_t placeholder,
    std::span<const std::shared_ptr<const ImagePatches>> images) {
    GenerateRequest out;
    std::size_t next = 0;
    for (std::int32_t token : tokens) {
        if (token != placeholder) {
            out.prompt.push_back(token);
            continue;
        }
        if (next >= images.size()) break;
        out.images.push_back({out.prompt.size(), images[next++]});
    }
    const auto placeholders = std::size_t(std::count(tokens.begin(), tokens.end(), placeholder));
    if (placeholders != images.size()) {
        return Status::invalidArgument("the prompt has " + std::to_string(placeholders) +
                                       " image placeholders for " + std::to_string(images.size()) +
                                       " images");
    }
    return out;
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

void Session::truncate(std::size_t length) {
    m_engine.m_cache->truncate(m_sequence, std::int64_t(length));
    m_tokens.resize(length);
    m_items.resize(length);
    m_positions.resize(length);
    m_nextPositions.resize(length);
    m_nextPosition = length == 0 ? 0 : m_nextPositions.back();
}

CandidateRequest candidateRequest(const Sampler& sampler, std::span<const std::int32_t> history) {
    const SamplingParams& p = sampler.params();
    return {sampler.candidatesNeeded(), p.repetitionPenalty, p.presencePenalty, p.frequencyPenalty,
            sampler.penaltyCounts(history)};
}

// Runs `items` after the session's slots through the model in prefill chunks; leaves the last
// one's logits in `next` (or its candidates, when next.request is set). positions[i] is item i's
// rotary position; embeddings[i] its injected vector (image tokens).
Status Session::feed(std::span<const SlotItem> items, std::span<const TokenPosition> positions,
                     std::span<const std::int32_t> nextPositions,
                     std::span<const float* const> embeddings, NextToken& next) {
    KvCache& cache = *m_engine.m_cache;
    next.logits.clear();
    next.candidates = {};
    std::vector<TokenInput> batch;
    const std::size_t chunk = std::size_t(m_engine.m_options.prefillChunk);
    for (std::size_t begin = 0; begin < items.size(); begin += chunk) {
        const std::size_t end = std::min(items.size(), begin + chunk);
        const std::int64_t first = std::int64_t(m_items.size());
        IRIS_RETURN_IF_ERROR(cache.extend(m_sequence, first + std::int64_t(end - begin)));
        batch.clear();
        for (std::size_t i = begin; i < end; ++i) {
            TokenInput in;
            in.token = items[i].isImage() ? 0 : items[i].token;
            in.sequence = m_sequence;
            in.slot = first + std::int64_t(i - begin);
            in.position = positions[i];
            in.wantLogits = i + 1 == items.size();
            in.embedding = embeddings[i];
            batch.push_back(in);
        }
        Model& model = *m_engine.m_model;
        const Status status =
            next.request && end == items.size()
                ? model.forwardCandidates(batch, cache, *m_engine.m_pool,
                                          std::span(&*next.request, 1), next.candidates)
                : model.forward(batch, cache, *m_engine.m_pool, next.logits);
        if (!status.isOk()) {
            cache.truncate(m_sequence, first);
            return status;
        }
        for (std::size_t i = begin; i < end; ++i) {
            m_items.push_back(items[i]);
            m_tokens.push_back(items[i].isImage() ? -1 : items[i].token);
            m_positions.push_back(positions[i]);
            m_nextPositions.push_back(m_nextPosition = nextPositions[i]);
        }
    }
    return {};
}

Status Engine::checkRequest(const GenerateRequest& request) const {
    if (request.prompt.empty() && request.images.empty())
        return Status::invalidArgument("empty prompt");
    const std::int64_t vocabulary = m_model->config().vocabSize;
    for (std::size_t i = 0; i < request.prompt.size(); ++i) {
        if (request.prompt[i] < 0 || request.prompt[i] >= vocabulary) {
            return Status::invalidArgument(
                "prompt token " + std::to_string(i) + " is " + std::to_string(request.prompt[i]) +
                ", outside the vocabulary of " + std::to_string(vocabulary));
        }
    }
    for (std::size_t j = 0; j < request.images.size(); ++j) {
        const PromptImage& image = request.images[j];
        if (image.image == nullptr)
            return Status::invalidArgument("image " + std::to_string(j) + " is empty");
        if (image.offset > request.prompt.size() ||
            (j > 0 && image.offset < request.images[j - 1].offset)) {
            return Status::invalidArgument("image " + std::to_string(j) + " has offset " +
                                           std::to_string(image.offset) +
                                           ", out of order or past the prompt's " +
                                           std::to_string(request.prompt.size()) + " tokens");
        }
        if (!hasVision()) {
            return Status::unsupported("this model has no vision tower loaded (pass --mmproj)");
        }
    }
    return {};
}

// Keeps the K/V of the longest shared prefix (images compared by hash); at least the last
// prompt item is run again so that there are logits to sample from. Returns the prefix length.
std::size_t Session::reusePrefix(std::span<const SlotItem> items) {
    std::size_t shared = 0;
    while (shared < m_items.size() && shared + 1 < items.size() && m_items[shared] == items[shared])
        ++shared;
    truncate(shared);
    return shared;
}

// Embeddings of the images that are not wholly in the reused prefix (slots from `from` on).
Status Session::embedImages(const GenerateRequest& request, const PromptSlots& prompt,
                            std::size_t from, InjectedEmbeddings& out, GenerateResult& result) {
    out.held.assign(request.images.size(), nullptr);
    out.perSlot.assign(prompt.items.size(), nullptr);
    const std::int64_t hidden = m_engine.m_model->config().hiddenSize;
    for (std::size_t i = from; i < prompt.items.size(); ++i) {
        if (prompt.imageOf[i] < 0) continue;
        auto& held = out.held[std::size_t(prompt.imageOf[i])];
        if (held == nullptr) {
            const auto encodeStart = Clock::now();
            bool encoded = false;
            Result<std::shared_ptr<const std::vector<float>>> got = m_engine.imageEmbeddings(
                *request.images[std::size_t(prompt.imageOf[i])].image, &encoded);
            if (!got) return got.status();
            held = std::move(*got);
            if (encoded) {
                ++result.imagesEncoded;
                result.encodeSeconds += secondsSince(encodeStart);
            }
        }
        out.perSlot[i] = held->data() + std::int64_t(prompt.items[i].imageToken) * hidden;
    }
    return {};
}

// Samples from `next` (the prompt's last slot), then feeds each token back until a stop.
Status Session::decode(const GenerateRequest& request, Sampler& sampler, NextToken& next,
                       GenerateResult& result) {
    const Tokenizer& tokenizer = *m_engine.m_tokenizer;
    const auto start = Clock::now();
    TokenDecoder decoder(tokenizer);
    std::vector<std::int32_t> history = request.prompt;
    for (;;) {
        if (std::int64_t(result.tokens.size()) >= request.maxTokens) {
            result.stop = StopReason::MaxTokens;
            break;
        }
        const std::int32_t token =
            next.request ? sampler.sampleCandidates(next.candidates.ids, next.candidates.logits)
                         : sampler.sample(next.logits, history);
        if (tokenizer.isEndOfGeneration(token)) {
            result.stop = StopReason::EndOfGeneration;
            break;
        }
        result.tokens.push_back(token);
        history.push_back(token);
        const std::string piece = decoder.feed(token);
        const std::size_t before = result.text.size();
        result.text += piece;
        if (cutAtStopString(result.text, before, request.stopStrings)) {
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
        if (std::int64_t(m_items.size()) + 1 > m_engine.m_options.contextSize) {
            result.stop = StopReason::ContextFull;
            break;
        }
        const SlotItem slot[] = {{token, -1, {}}};
        const TokenPosition position[] = {textPosition(m_nextPosition)};
        const float* const noEmbedding[] = {nullptr};
        const std::int32_t after[] = {m_nextPosition + 1};
        if (next.request) next.request->penalties = sampler.penaltyCounts(history);
        IRIS_RETURN_IF_ERROR(feed(slot, position, after, noEmbedding, next));
    }
    if (result.stop != StopReason::StopString) result.text += decoder.flush();
    result.decodeSeconds = secondsSince(start);
    return {};
}

Result<GenerateResult> Session::generate(const GenerateRequest& request) {
    IRIS_RETURN_IF_ERROR(m_engine.checkRequest(request));
    const PromptSlots prompt =
        layOutPrompt(request.prompt, request.images, m_engine.m_model->config().multimodalRope);
    GenerateResult result;
    result.imageTokens = prompt.imageTokens;
    result.promptTokens = std::int64_t(prompt.items.size());
    if (prompt.items.empty())
        return Status::invalidArgument("empty prompt (images without tokens)");
    const std::int64_t contextSize = m_engine.m_options.contextSize;
    if (result.promptTokens > contextSize) {
        return Status::outOfRange("the prompt has " + std::to_string(result.promptTokens) +
                                  " tokens, more than the context of " +
                                  std::to_string(contextSize) + " (raise the context size)");
    }
    const std::size_t shared = reusePrefix(prompt.items);
    result.reusedTokens = std::int64_t(shared);

    const auto start = Clock::now();
    InjectedEmbeddings images;
    IRIS_RETURN_IF_ERROR(embedImages(request, prompt, shared, images, result));
    // A model sampling on its device sends back each step's candidates instead of its logits
    // (Model::forwardCandidates) when the sampler's chain starts from a few.
    Sampler sampler(request.sampling);
    NextToken next;
    if (m_engine.m_model->samplesOnDevice() && sampler.candidatesNeeded() > 0)
        next.request = candidateRequest(sampler, request.prompt);
    IRIS_RETURN_IF_ERROR(feed(std::span(prompt.items).subspan(shared),
                              std::span(prompt.positions).subspan(shared),
                              std::span(prompt.nextPositions).subspan(shared),
                              std::span(images.perSlot).subspan(shared), next));
    result.prefillSeconds = secondsSince(start);

    IRIS_RETURN_IF_ERROR(decode(request, sampler, next, result));
    return result;
}

}  // namespace iris::inference
