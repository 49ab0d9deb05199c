#include "inference/scheduler.h"

#include <algorithm>
#include <cassert>
#include <cstdio>

#include "base/clock.h"

namespace iris::inference {

// ---- GenerationHandle -------------------------------------------------------------------------

GenerationHandle::Poll GenerationHandle::next(TokenEvent& event,
                                              std::chrono::milliseconds timeout) {
    std::unique_lock lock(m_mutex);
    m_changed.wait_for(lock, timeout, [&] { return !m_events.empty() || m_result.has_value(); });
    if (!m_events.empty()) {
        event = std::move(m_events.front());
        m_events.pop_front();
        return Poll::Token;
    }
    return m_result ? Poll::Finished : Poll::Timeout;
}

void GenerationHandle::cancel() {
    std::lock_guard lock(m_mutex);
    m_cancelled = true;
}

bool GenerationHandle::cancelled() const {
    std::lock_guard lock(m_mutex);
    return m_cancelled;
}

Result<GenerateResult> GenerationHandle::result() {
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [&] { return m_result.has_value(); });
    return *m_result;
}

std::optional<double> GenerationHandle::timeToFirstToken() const {
    std::lock_guard lock(m_mutex);
    return m_firstToken;
}

void GenerationHandle::push(TokenEvent event) {
    {
        std::lock_guard lock(m_mutex);
        if (!m_firstToken) m_firstToken = secondsSince(m_submitted);
        m_events.push_back(std::move(event));
    }
    m_changed.notify_all();
}

void GenerationHandle::finish(Result<GenerateResult> result) {
    {
        std::lock_guard lock(m_mutex);
        m_result = std::move(result);
    }
    m_changed.notify_all();
}

// ---- Scheduler::Sequence ----------------------------------------------------------------------

// A request as the scheduler thread carries it. Its slots are the prompt's, then one per token
// generated; the first `computed` have K/V in the cache (in sequence `kv`), the rest wait to be
// fed. While decoding exactly one waits: the token sampled last.
struct Scheduler::Sequence {
    Sequence(std::shared_ptr<GenerationHandle> h, GenerateRequest r, PromptSlots p,
             const Tokenizer& tokenizer)
        : handle(std::move(h)),
          request(std::move(r)),
          promptSlots(std::int64_t(p.items.size())),
          slots(std::move(p)),
          sampler(request.sampling),
          decoder(tokenizer),
          history(request.prompt) {}

    std::shared_ptr<GenerationHandle> handle;
    GenerateRequest request;
    std::int64_t promptSlots;
    PromptSlots slots;  // grows by the generated tokens (imageOf -1)
    Sampler sampler;
    TokenDecoder decoder;
    std::vector<std::int32_t> history;  // prompt and generated tokens, for the penalties
    GenerateResult result;
    std::size_t streamed = 0;  // bytes of result.text sent as events

    SequenceId kv = -1;                    // -1 while it holds no KV (waiting)
    std::int64_t computed = 0;             // slots with K/V in the cache
    std::vector<Sha256Digest> blockNames;  // of the full blocks computed so far, in order
    // Per request image: its embeddings; null when not needed (its slots are computed) or, where
    // `awaiting`, not made yet (an ImageEncode is under way).
    std::vector<std::shared_ptr<const std::vector<float>>> images;
    std::vector<bool> awaiting;
    std::size_t published = 0;  // of blockNames, those named in the cache
    bool everAdmitted = false;
    Clock::time_point admittedAt;
    std::optional<Clock::time_point> firstLogits;
    bool done = false;  // a stop condition holds
    Status failure;     // the step that ran it failed

    std::int64_t pending() const { return std::int64_t(slots.items.size()) - computed; }
};

// An image in the vision tower, a stage per step.
struct Scheduler::ImageEncode {
    std::shared_ptr<const ImagePatches> image;
    std::unique_ptr<VisionEncoding> encoding;
    double seconds = 0;  // in its stages so far
};

// ---- Scheduler --------------------------------------------------------------------------------

Scheduler::Scheduler(std::unique_ptr<Engine> engine, SchedulerOptions options)
    : m_engine(std::move(engine)), m_options(options) {}

Result<std::unique_ptr<Scheduler>> Scheduler::start(std::unique_ptr<Engine> engine,
                                                    SchedulerOptions options) {
    if (engine == nullptr) return Status::invalidArgument("no engine");
    if (options.maxRunning <= 0) options.maxRunning = engine->options().maxSessions;
    if (options.stepTokens <= 0) options.stepTokens = engine->options().prefillChunk;
    options.stepTokens = std::max<std::int64_t>(options.stepTokens, options.maxRunning);
    if (options.maxWaiting < 0) return Status::invalidArgument("maxWaiting must not be negative");
    const KvCache& cache = engine->cache();
    const std::int64_t blockSize = cache.options().blockSize;
    const std::int64_t contextBlocks = (engine->options().contextSize + blockSize - 1) / blockSize;
    if (cache.options().blocks < contextBlocks + 1) {
        return Status::invalidArgument("the KV pool of " + std::to_string(cache.options().blocks) +
                                       " blocks cannot hold one context of " +
                                       std::to_string(engine->options().contextSize) + " tokens");
    }
    // The disk tier saves blocks from the host pool; with the model on a GPU the K/V live in
    // the device pool (KvPoolMirror), so saving them needs a download path that is not written
    // yet (docs/gpu-backend.md section 3).
    if (options.kvDisk.enabled() && engine->deviceName() != "cpu") {
        const std::string device = engine->deviceName();
        return Status::unsupported(
            "the KV disk tier (--kv-disk-gb) is not available with the model on " + device +
            " yet; use --device cpu");
    }
    std::unique_ptr<Scheduler> scheduler(new Scheduler(std::move(engine), options));
    if (options.prefixCache)
        scheduler->m_disk = openKvDiskStore(*scheduler->m_engine, scheduler->m_options.kvDisk);
    {
        std::lock_guard lock(scheduler->m_mutex);
        scheduler->m_stats.kvBlocks = cache.options().blocks;
    }
    scheduler->m_thread = std::thread([s = scheduler.get()] { s->loop(); });
    return scheduler;
}

Scheduler::~Scheduler() {
    shutdown();
    if (m_thread.joinable()) m_thread.join();
}

void Scheduler::shutdown() {
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_all();
}

SchedulerStats Scheduler::stats() const {
    std::lock_guard lock(m_mutex);
    return m_stats;
}

Result<std::shared_ptr<GenerationHandle>> Scheduler::submit(GenerateRequest request) {
    IRIS_RETURN_IF_ERROR(m_engine->checkRequest(request));
    PromptSlots slots =
        layOutPrompt(request.prompt, request.images, m_engine->model().config().multimodalRope);
    const auto promptTokens = std::int64_t(slots.items.size());
    const std::int64_t context = m_engine->options().contextSize;
    if (promptTokens > context) {
        return Status::outOfRange("the prompt has " + std::to_string(promptTokens) +
                                  " tokens, more than the context of " + std::to_string(context));
    }
    auto handle = std::make_shared<GenerationHandle>();
    auto sequence = std::make_unique<Sequence>(handle, std::move(request), std::move(slots),
                                               m_engine->tokenizer());
    sequence->request.onToken = nullptr;  // tokens go to the handle
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping) return Status::unavailable("the engine is shutting down");
        const int queued = m_stats.waiting + int(m_submitted.size());
        if (queued >= m_options.maxWaiting) {
            return Status::unavailable(std::to_string(queued) +
                                       " requests are waiting already; try again later");
        }
        ++m_stats.requests;
        m_submitted.push_back(std::move(sequence));
    }
    m_wake.notify_all();
    return handle;
}

Result<GenerateResult> Scheduler::generate(const GenerateRequest& request,
                                           const std::atomic<bool>* cancel) {
    Result<std::shared_ptr<GenerationHandle>> submitted = submit(request);
    if (!submitted) return submitted.status();
    GenerationHandle& handle = **submitted;
    TokenEvent event;
    for (;;) {
        switch (handle.next(event, std::chrono::milliseconds(20))) {
            case GenerationHandle::Poll::Token:
                if (request.onToken && !request.onToken(event.token, event.text)) handle.cancel();
                break;
            case GenerationHandle::Poll::Finished:
                return handle.result();
            case GenerationHandle::Poll::Timeout:
                break;
        }
        if (cancel != nullptr && cancel->load()) handle.cancel();
    }
}

// ---- the scheduler thread ---------------------------------------------------------------------

void Scheduler::loop() {
    for (;;) {
        bool stopping = false;
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, [&] {
                return m_stopping || !m_submitted.empty() || !m_running.empty() ||
                       !m_waiting.empty();
            });
            for (std::unique_ptr<Sequence>& sequence : m_submitted)
                m_waiting.push_back(std::move(sequence));
            m_submitted.clear();
            // submit() counts m_stats.waiting plus m_submitted against maxWaiting: the requests
            // just moved must stay counted, or a submit() during this step would see neither.
            m_stats.waiting = int(m_waiting.size());
            stopping = m_stopping;
        }
        if (stopping) {
            for (auto* queue : {&m_running, &m_waiting}) {
                for (const std::unique_ptr<Sequence>& sequence : *queue)
                    sequence->handle->cancel();
            }
        }
        dropCancelled();
        if (stopping) {
            publishStats(0);
            return;
        }
        admit();
        {
            std::lock_guard lock(m_mutex);
            m_stats.waiting = int(m_waiting.size());
            m_stats.running = int(m_running.size());
        }
        advanceImages();
        publishStats(step());
    }
}

void Scheduler::publishStats(std::int64_t generated) {
    const KvCache& cache = m_engine->cache();
    // The KV tiers' disk failure, once, through the disk tier's warning channel (else stderr).
    const KvTiers* tiers = m_engine->kvTiers();
    if (tiers != nullptr && !m_tierWarned && !tiers->diskWarning().empty()) {
        m_tierWarned = true;
        if (m_options.kvDisk.onWarning) {
            m_options.kvDisk.onWarning(tiers->diskWarning());
        } else {
            std::fprintf(stderr, "warning: %s\n", tiers->diskWarning().c_str());
        }
    }
    std::lock_guard lock(m_mutex);
    m_stats.generatedTokens += generated;
    m_stats.evictions = cache.evictions();
    m_stats.kvBlocksUsed = cache.usedBlocks();
    m_stats.kvBlocksCached = cache.cachedBlocks();
    m_stats.waiting = int(m_waiting.size());
    m_stats.running = int(m_running.size());
    if (m_disk) m_stats.disk = m_disk->stats();
    if (tiers != nullptr) m_stats.tiers = tiers->stats();
}

// Requests whose clients cancelled end now, with what they have.
void Scheduler::dropCancelled() {
    for (auto* queue : {&m_running, &m_waiting}) {
        for (std::size_t i = 0; i < queue->size();) {
            if (!(*queue)[i]->handle->cancelled()) {
                ++i;
                continue;
            }
            std::unique_ptr<Sequence> sequence = std::move((*queue)[i]);
            queue->erase(queue->begin() + std::ptrdiff_t(i));
            sequence->result.stop = StopReason::Cancelled;
            finish(*sequence, Status::ok());
        }
    }
}

// Admits waiting requests, first come first served, while there are running places and (unless
// nothing runs) KV room for the rest of the prompt. A request whose next prompt block another
// running sequence is computing now waits for it and lets those behind it go first: agents that
// start together with one system prompt compute it once.
void Scheduler::admit() {
    for (std::size_t i = 0; i < m_waiting.size() && int(m_running.size()) < m_options.maxRunning;) {
        const Result<Admission> placed = place(*m_waiting[i]);
        if (placed && *placed == Admission::NoRoom) return;  // it stays first in line
        if (placed && *placed == Admission::Deferred) {
            ++i;
            continue;
        }
        std::unique_ptr<Sequence> taken = std::move(m_waiting[i]);
        m_waiting.erase(m_waiting.begin() + std::ptrdiff_t(i));
        if (!placed) {
            finish(*taken, placed.status());
            continue;
        }
        m_running.push_back(std::move(taken));
    }
}

// Extends sequence.blockNames to the first `count` full blocks of its slots.
void Scheduler::nameBlocks(Sequence& sequence, std::size_t count) const {
    const std::size_t blockSize = std::size_t(m_engine->cache().options().blockSize);
    const PromptSlots& slots = sequence.slots;
    for (std::size_t b = sequence.blockNames.size(); b < count; ++b) {
        sequence.blockNames.push_back(
            blockName(b == 0 ? Sha256Digest{} : sequence.blockNames[b - 1],
                      std::span(slots.items).subspan(b * blockSize, blockSize),
                      std::span(slots.positions).subspan(b * blockSize, blockSize)));
    }
}

// Whether a running sequence has the block named `name` among those it is still to compute.
bool Scheduler::computing(const Sha256Digest& name) const {
    for (const std::unique_ptr<Sequence>& running : m_running) {
        for (std::size_t b = running->published; b < running->blockNames.size(); ++b) {
            if (running->blockNames[b] == name) return true;
        }
    }
    return false;
}

// Gives `sequence` a KV sequence with the longest cached prefix of its slots, and the
// embeddings of the images it still has to read.
Result<Scheduler::Admission> Scheduler::place(Sequence& sequence) {
    KvCache& cache = m_engine->cache();
    const std::int64_t blockSize = cache.options().blockSize;
    const auto slots = std::int64_t(sequence.slots.items.size());
    sequence.kv = cache.newSequence();
    // Whole blocks only, and never the last slot: its logits are needed.
    const auto reusable = std::size_t((slots - 1) / blockSize);
    std::size_t matched = 0;
    if (m_options.prefixCache) {
        nameBlocks(sequence, std::size_t(slots / blockSize));
        for (; matched < reusable; ++matched) {
            const std::int32_t block = cache.findBlock(sequence.blockNames[matched]);
            if (block < 0) break;
            cache.appendCached(sequence.kv, block);
        }
        // Missed in memory: the disk tier, unless a running sequence is computing the block.
        if (m_disk && matched < reusable && !computing(sequence.blockNames[matched])) {
            matched += m_disk->restore(
                cache, sequence.kv,
                std::span(sequence.blockNames).subspan(matched, reusable - matched));
        }
    }
    const std::int64_t needed = (slots + blockSize - 1) / blockSize - std::int64_t(matched);
    const bool deferred = matched < reusable && computing(sequence.blockNames[matched]);
    if (deferred || (needed > cache.freeBlocks() && !m_running.empty())) {
        cache.release(sequence.kv);
        sequence.kv = -1;
        return deferred ? Admission::Deferred : Admission::NoRoom;
    }
    sequence.computed = std::int64_t(matched) * blockSize;
    sequence.published = matched;
    if (!sequence.everAdmitted) {
        sequence.everAdmitted = true;
        sequence.result.reusedTokens = sequence.computed;
        sequence.admittedAt = Clock::now();
    }
    {
        std::lock_guard lock(m_mutex);
        if (m_options.prefixCache) ++m_stats.prefixLookups;
        m_stats.prefixHitTokens += sequence.computed;
    }
    IRIS_RETURN_IF_ERROR(requestImages(sequence));
    return Admission::Placed;
}

// Points `sequence` at the embeddings of every image with slots still to read: from the engine's
// cache, or (awaiting) from the image's encode, queued here unless one is under way already.
Status Scheduler::requestImages(Sequence& sequence) {
    const PromptSlots& slots = sequence.slots;
    const std::size_t count = sequence.request.images.size();
    sequence.images.assign(count, nullptr);
    sequence.awaiting.assign(count, false);
    std::vector<bool> seen(count, false);
    for (std::size_t i = std::size_t(sequence.computed); i < slots.items.size(); ++i) {
        const std::int32_t image = slots.imageOf[i];
        if (image < 0 || seen[std::size_t(image)]) continue;
        seen[std::size_t(image)] = true;
        const std::shared_ptr<const ImagePatches>& patches =
            sequence.request.images[std::size_t(image)].image;
        sequence.images[std::size_t(image)] = m_engine->cachedImageEmbeddings(patches->hash);
        if (sequence.images[std::size_t(image)] != nullptr) continue;
        sequence.awaiting[std::size_t(image)] = true;
        const bool underWay = std::any_of(m_encodes.begin(), m_encodes.end(), [&](const auto& e) {
            return e.image->hash == patches->hash;
        });
        if (underWay) continue;
        Result<std::unique_ptr<VisionEncoding>> begun = m_engine->vision()->beginEncode(*patches);
        if (!begun) return begun.status();
        m_encodes.push_back({patches, std::move(*begun)});
    }
    return {};
}

// Runs one stage of the oldest image encode that a sequence still needs: a running one awaits
// it, or a preempted one will when readmitted (it then finds the encode under way, or done and
// in the engine's cache, instead of starting over). Encodes no one needs (their requesters were
// cancelled) are dropped. Once complete, the embeddings go to the engine's cache and to every
// sequence awaiting them; the first of those counts the encode as its own.
void Scheduler::advanceImages() {
    const auto waiters = [&](const Sha256Digest& hash) {
        std::vector<std::pair<Sequence*, std::size_t>> found;
        for (const std::unique_ptr<Sequence>& sequence : m_running) {
            for (std::size_t i = 0; i < sequence->awaiting.size(); ++i) {
                if (sequence->awaiting[i] && sequence->request.images[i].image->hash == hash)
                    found.emplace_back(sequence.get(), i);
            }
        }
        return found;
    };
    const auto preemptedNeeding = [&](const Sha256Digest& hash) -> Sequence* {
        for (const std::unique_ptr<Sequence>& sequence : m_waiting) {
            if (!sequence->everAdmitted) continue;
            for (const PromptImage& image : sequence->request.images)
                if (image.image->hash == hash) return sequence.get();
        }
        return nullptr;
    };
    while (!m_encodes.empty() && waiters(m_encodes.front().image->hash).empty() &&
           preemptedNeeding(m_encodes.front().image->hash) == nullptr)
        m_encodes.pop_front();
    if (m_encodes.empty()) return;
    ImageEncode& encode = m_encodes.front();
    const auto start = Clock::now();
    encode.encoding->advance(m_engine->pool());
    encode.seconds += secondsSince(start);
    if (!encode.encoding->done()) return;
    Result<std::shared_ptr<const std::vector<float>>> made =
        m_engine->keepImageEmbeddings(*encode.image, encode.encoding->takeEmbeddings());
    const std::vector<std::pair<Sequence*, std::size_t>> awaiting = waiters(encode.image->hash);
    for (auto [sequence, i] : awaiting) {
        sequence->awaiting[i] = false;
        if (made)
            sequence->images[i] = *made;
        else
            sequence->failure = made.status();
    }
    Sequence* owner =
        awaiting.empty() ? preemptedNeeding(encode.image->hash) : awaiting.front().first;
    if (made && owner != nullptr) {
        ++owner->result.imagesEncoded;
        owner->result.encodeSeconds += encode.seconds;
    }
    m_encodes.pop_front();
}

// Of the next `n` slots of `sequence`, how many come before the first image still in the tower.
std::int64_t Scheduler::readySlots(const Sequence& sequence, std::int64_t n) const {
    for (std::int64_t j = sequence.computed; j < sequence.computed + n; ++j) {
        const std::int32_t image = sequence.slots.imageOf[std::size_t(j)];
        if (image >= 0 && sequence.awaiting[std::size_t(image)]) return j - sequence.computed;
    }
    return n;
}

bool endStepAtPromptEnd(std::int64_t tokensAfter, std::int64_t promptsBehind,
                        std::int64_t decodersNext, std::int64_t overheadTokens) {
    return overheadTokens > 0 && tokensAfter > promptsBehind * (decodersNext + overheadTokens);
}

// endStepAtPromptEnd for the running sequence at `index`, whose chunk in this step ends its
// prompt: the prompt tokens the running sequences after it could still take of `budget`, and
// every sequence still reading a prompt behind it (running or waiting).
bool Scheduler::endsStepHere(std::size_t index, std::int64_t decodersNext,
                             std::int64_t budget) const {
    std::int64_t after = 0, behind = std::int64_t(m_waiting.size());
    for (std::size_t j = index + 1; j < m_running.size(); ++j) {
        const std::int64_t pending = m_running[j]->pending();
        if (pending <= 1) continue;  // decoding
        ++behind;
        after += pending;
    }
    return endStepAtPromptEnd(std::min(after, budget), behind, decodersNext,
                              m_options.stepOverheadTokens);
}

// Sends the most recently admitted running sequence back to the front of the queue, freeing its
// blocks (its full ones stay cached under their names).
void Scheduler::preemptLatest() {
    std::unique_ptr<Sequence> victim = std::move(m_running.back());
    m_running.pop_back();
    m_engine->cache().release(victim->kv);
    victim->kv = -1;
    victim->computed = 0;
    victim->images.clear();
    victim->awaiting.clear();
    m_waiting.push_front(std::move(victim));
    std::lock_guard lock(m_mutex);
    ++m_stats.preemptions;
}

// One forward pass: a decode token for every running sequence that has one waiting, then
// prefill chunks, oldest sequence first, under the step's token budget. Returns the tokens
// generated.
std::int64_t Scheduler::step() {
    KvCache& cache = m_engine->cache();
    std::int64_t decoders = 0;
    for (const std::unique_ptr<Sequence>& sequence : m_running)
        decoders += sequence->pending() == 1 ? 1 : 0;
    std::int64_t prefillBudget = m_options.stepTokens - decoders;
    std::vector<TokenInput> batch;
    std::vector<std::pair<Sequence*, std::int64_t>> parts;
    for (std::size_t i = 0; i < m_running.size(); ++i) {
        Sequence& sequence = *m_running[i];
        if (!sequence.failure.isOk()) continue;
        const std::int64_t n = readySlots(
            sequence, sequence.pending() == 1 ? 1 : std::min(sequence.pending(), prefillBudget));
        if (n <= 0) continue;
        bool preempted = false;
        Status extended;
        while (!(extended = cache.extend(sequence.kv, sequence.computed + n)).isOk() &&
               extended.code() == StatusCode::OutOfRange) {
            preempted = m_running.back().get() == &sequence;
            preemptLatest();
            if (preempted) break;
        }
        if (preempted) break;  // it was the latest: nothing after it
        if (!extended.isOk()) {  // KV tiers could not read a page back: this request fails
            sequence.failure = extended;
            continue;
        }
        if (sequence.pending() != 1) {
            prefillBudget -= n;
            if (n == sequence.pending() && prefillBudget > 0 &&
                endsStepHere(i, decoders + 1, prefillBudget))
                prefillBudget = 0;  // the decoders behind it still take their token
        }
        appendInputs(sequence, n, batch);
        parts.emplace_back(&sequence, n);
    }
    if (batch.empty()) {
        endFinished();  // those whose image failed
        return 0;
    }
    m_logits.clear();
    m_candidates = {};
    const auto started = Clock::now();
    const bool onDevice = requestCandidates(parts);
    Model& model = m_engine->mutableModel();
    const Status status =
        onDevice ? model.forwardCandidates(batch, cache, m_engine->pool(), m_requests, m_candidates)
                 : model.forward(batch, cache, m_engine->pool(), m_logits);
    if (m_disk && status.isOk())
        m_disk->noteCompute(std::int64_t(batch.size()), secondsSince(started));
    {
        std::lock_guard lock(m_mutex);
        ++m_stats.steps;
        m_stats.forwardTokens += std::int64_t(batch.size());
    }
    std::int64_t generated = 0;
    const std::size_t vocabulary = std::size_t(m_engine->model().config().vocabSize);
    std::size_t row = 0, offset = 0;
    for (auto [sequence, n] : parts) {
        if (!status.isOk()) {
            sequence->failure = status;
            continue;
        }
        sequence->computed += n;
        publishBlocks(*sequence);
        if (sequence->pending() != 0) continue;
        const std::size_t before = sequence->result.tokens.size();
        if (!sequence->firstLogits) sequence->firstLogits = Clock::now();
        if (onDevice) {
            const auto keep = std::size_t(m_requests[row].keep);
            takeToken(*sequence, sequence->sampler.sampleCandidates(
                                     std::span(m_candidates.ids).subspan(offset, keep),
                                     std::span(m_candidates.logits).subspan(offset, keep)));
            offset += keep;
            ++row;
        } else {
            takeToken(*sequence, sequence->sampler.sample(
                                     std::span(m_logits).subspan(row++ * vocabulary, vocabulary),
                                     sequence->history));
        }
        generated += std::int64_t(sequence->result.tokens.size() - before);
    }
    endFinished();
    return generated;
}

void Scheduler::appendInputs(const Sequence& sequence, std::int64_t n,
                             std::vector<TokenInput>& batch) const {
    const std::int64_t hidden = m_engine->model().config().hiddenSize;
    const PromptSlots& slots = sequence.slots;
    for (std::int64_t j = sequence.computed; j < sequence.computed + n; ++j) {
        const SlotItem& item = slots.items[std::size_t(j)];
        TokenInput in;
        in.token = item.isImage() ? 0 : item.token;
        in.sequence = sequence.kv;
        in.slot = j;
        in.position = slots.positions[std::size_t(j)];
        in.wantLogits = j + 1 == std::int64_t(slots.items.size());
        if (item.isImage()) {
            in.embedding = sequence.images[std::size_t(slots.imageOf[std::size_t(j)])]->data() +
                           std::int64_t(item.imageToken) * hidden;
        }
        batch.push_back(in);
    }
}

// Names the blocks `sequence` has filled since the last call, so that later requests find them.
void Scheduler::publishBlocks(Sequence& sequence) {
    if (!m_options.prefixCache) return;
    const std::size_t full = std::size_t(sequence.computed / m_engine->cache().options().blockSize);
    nameBlocks(sequence, full);
    for (std::size_t b = sequence.published; b < full; ++b) {
        m_engine->cache().nameBlock(sequence.kv, b, sequence.blockNames[b]);
        if (m_disk) {
            m_disk->save(sequence.blockNames[b], m_engine->cache(),
                         m_engine->cache().blockTable(sequence.kv)[b]);
        }
    }
    sequence.published = std::max(sequence.published, full);
}

bool Scheduler::requestCandidates(const std::vector<std::pair<Sequence*, std::int64_t>>& parts) {
    m_requests.clear();
    if (!m_engine->model().samplesOnDevice()) return false;
    for (const auto& [sequence, n] : parts) {
        if (sequence->pending() != n) continue;  // no logits this step
        if (sequence->sampler.candidatesNeeded() == 0)
            return false;  // its chain needs every logit: all of them come back
        m_requests.push_back(candidateRequest(sequence->sampler, sequence->history));
    }
    return true;
}

// The token sampled from the last slot's logits (or candidates), as Session::decode does.
void Scheduler::takeToken(Sequence& sequence, std::int32_t token) {
    GenerateResult& result = sequence.result;
    const GenerateRequest& request = sequence.request;
    if (std::int64_t(result.tokens.size()) >= request.maxTokens) {
        result.stop = StopReason::MaxTokens;
        sequence.done = true;
        return;
    }
    if (m_engine->tokenizer().isEndOfGeneration(token)) {
        result.stop = StopReason::EndOfGeneration;
        sequence.done = true;
        return;
    }
    result.tokens.push_back(token);
    sequence.history.push_back(token);
    const std::size_t before = result.text.size();
    result.text += sequence.decoder.feed(token);
    if (cutAtStopString(result.text, before, request.stopStrings)) {
        result.stop = StopReason::StopString;
        sequence.done = true;
        return;
    }
    const std::size_t ready =
        result.text.size() - stopStringHoldback(result.text, request.stopStrings);
    TokenEvent event{token, {}};
    if (ready > sequence.streamed) {
        event.text = result.text.substr(sequence.streamed, ready - sequence.streamed);
        sequence.streamed = ready;
    }
    sequence.handle->push(std::move(event));
    if (std::int64_t(result.tokens.size()) >= request.maxTokens) {
        result.stop = StopReason::MaxTokens;
        sequence.done = true;
        return;
    }
    PromptSlots& slots = sequence.slots;
    if (std::int64_t(slots.items.size()) + 1 > m_engine->options().contextSize) {
        result.stop = StopReason::ContextFull;
        sequence.done = true;
        return;
    }
    const std::int32_t position = slots.nextPositions.back();
    slots.items.push_back({token, -1, {}});
    slots.positions.push_back(textPosition(position));
    slots.nextPositions.push_back(position + 1);
    slots.imageOf.push_back(-1);
}

// Ends the running sequences that are done or failed.
void Scheduler::endFinished() {
    for (std::size_t i = 0; i < m_running.size();) {
        Sequence& sequence = *m_running[i];
        if (!sequence.done && sequence.failure.isOk()) {
            ++i;
            continue;
        }
        std::unique_ptr<Sequence> ended = std::move(m_running[i]);
        m_running.erase(m_running.begin() + std::ptrdiff_t(i));
        finish(*ended, ended->failure);
    }
}

// Releases the sequence's KV and hands the client its result (or `failure`).
void Scheduler::finish(Sequence& sequence, const Status& failure) {
    if (sequence.kv >= 0) m_engine->cache().release(sequence.kv);
    sequence.kv = -1;
    GenerateResult& result = sequence.result;
    if (result.stop != StopReason::StopString) result.text += sequence.decoder.flush();
    result.promptTokens = sequence.promptSlots;
    result.imageTokens = sequence.slots.imageTokens;
    const auto end = Clock::now();
    if (sequence.firstLogits) {
        result.prefillSeconds = secondsBetween(sequence.admittedAt, *sequence.firstLogits);
        result.decodeSeconds = secondsBetween(*sequence.firstLogits, end);
    }
    {
        // Before the client hears of it: its blocks and place are counted as released.
        std::lock_guard lock(m_mutex);
        ++m_stats.finished;
        m_stats.promptTokens += result.promptTokens;
        m_stats.kvBlocksUsed = m_engine->cache().usedBlocks();
        m_stats.kvBlocksCached = m_engine->cache().cachedBlocks();
        m_stats.waiting = int(m_waiting.size());  // it has left its queue already
        m_stats.running = int(m_running.size());
        if (m_disk) m_stats.disk = m_disk->stats();
        if (const KvTiers* tiers = m_engine->kvTiers()) m_stats.tiers = tiers->stats();
    }
    if (failure.isOk())
        sequence.handle->finish(std::move(result));
    else
        sequence.handle->finish(failure);
}

}  // namespace iris::inference
