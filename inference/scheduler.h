#pragma once
// The serving engine: one Engine's model and KV cache driven by one thread for any number of
// clients (agent sessions, an evaluation's parallel tasks, the GUI, `iris serve`'s HTTP clients).
//
// Design
// - Clients submit GenerateRequests from any thread; the scheduler thread owns the model, the KV
//   cache, the vision tower and its embedding cache. Nothing else touches them while it runs.
// - Each step builds one forward batch under a token budget (stepTokens): first one decode token
//   for every running sequence, then prefill chunks of the running sequences still reading their
//   prompts, oldest first. A long new prompt therefore delays the decoding sequences by one chunk
//   per step, never by its whole length (chunked prefill). Sequences join when admitted and leave
//   when they finish, at any step (continuous batching). Admission is first come, first served,
//   up to maxRunning sequences.
// - A step that reads the end of a prompt may stop there, leaving the rest of its budget unused
//   (endStepAtPromptEnd): the sequence's first token then comes a whole chunk sooner, and each
//   prompt still being read behind it waits one more step, the decode tokens and the fixed cost
//   of a step (stepOverheadTokens). The step ends where that lowers the sum of the first-token
//   times: of four agents started together on one system prompt, the second gets its first
//   token about 0.5 s sooner on a 2-core CPU, while many short prompts behind many decoders
//   still share steps.
// - Prefix cache: every full KV block is named by a hash chain (SHA-256 over the parent block's
//   name and the block's tokens, image hashes and rotary positions) and, once written, published
//   in the cache under that name. A new request walks its prompt's chain and takes every leading
//   block it finds by reference (read-only, shared), computing only the rest; at least its last
//   prompt token is computed, for the logits. A request whose next block a running sequence is
//   computing at that moment waits for it (those behind it may go first), so that agents started
//   together with one system prompt compute it once. Blocks that no sequence holds stay cached
//   and are evicted least recently used first, only when the pool needs room. Because the name
//   covers the positions, M-RoPE after images is exact; MiniMax-M3's indexer keys live in the
//   same block ids as K and V, so they come along.
// - KV pressure: when a step cannot get a block, the most recently admitted running sequence is
//   preempted: its blocks are released (its full blocks stay in the prefix cache, so a resume
//   usually finds most of them) and it goes back to the front of the queue with the tokens it has
//   generated; when readmitted it recomputes what is missing and continues, with its sampler's
//   state intact. Recompute was chosen over copying blocks to host memory: with the prefix cache
//   the recomputed part is usually only the evicted tail, it needs no second memory pool, and it
//   is the same code path as admission. A request that could never fit (more blocks than the
//   whole pool, or more tokens than the context) is refused at submit().
// - Disk tier (optional, SchedulerOptions::kvDisk; inference/kv_disk_store.h): every block is
//   also saved to disk under its name when it is published, and a request whose chain misses
//   in memory looks on disk next, reading the run of blocks found back into the pool when the
//   measured read rate beats the measured prefill rate. Saved on publish rather than on
//   eviction from the pool: a block is on disk as soon as it is computed, so saved sessions
//   survive a crash or a killed process, and shutdown has nothing to flush; the price is
//   writing blocks that are never evicted (to the page cache: 12 KiB a token on a 0.5B model).
// - Batch invariance: each token's computation (its matrix rows, its attention over its own
//   sequence) does not depend on what else is in the batch or how its prompt was chunked, so
//   greedy decoding gives the same tokens alone, batched, preempted or from cached blocks
//   (tests/inference/scheduler_test.cpp checks it bit for bit against Session::generate).
// - Images: the vision tower runs on the scheduler thread too, one stage (the patch embedding,
//   one block, the projector) per step, between forward passes, once per distinct image (the
//   engine caches embeddings by image hash). A sequence prefills up to the first image still in
//   the tower and waits there; the others decode meanwhile, so a screenshot delays them by one
//   stage per step, never by its whole encode. One thread keeps the model, the tower and the
//   pool free of locks, and on a machine with few cores a second thread encoding at the same
//   time would only take the decoders' cores.
// - Streaming: each submitted request has a GenerationHandle; the scheduler thread appends
//   TokenEvents to it and the client reads them on its own thread. cancel() from any thread takes
//   effect at the next step.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "inference/engine.h"
#include "inference/kv_disk_store.h"

namespace iris::inference {

struct SchedulerOptions {
    // Sequences decoding or prefilling at once; 0: the engine's maxSessions.
    int maxRunning = 0;
    // Tokens in one forward pass (decode tokens plus prefill chunks); 0: the engine's
    // prefillChunk. At least maxRunning, so that every running sequence decodes each step.
    std::int64_t stepTokens = 0;
    // What one more forward pass costs beyond its tokens (streaming the weights, the threads'
    // handovers, the output rows), in prompt tokens' worth: on the CPU a step of a few decode
    // tokens takes as long as 15-20 prompt tokens (Qwen2.5-0.5B, 2 threads). 0: never end a
    // step early (see endStepAtPromptEnd).
    std::int64_t stepOverheadTokens = 16;
    // Requests waiting beyond this many are refused with Unavailable (HTTP 429).
    int maxWaiting = 1024;
    // Reuse full KV blocks across requests by content.
    bool prefixCache = true;
    // The disk tier under the prefix cache (off unless a folder and a budget are given; needs
    // prefixCache). A folder that cannot be made is warned about and the tier left off.
    KvDiskStoreOptions kvDisk = {};
};

// Counters since start() (monotonic) and the state now. Read with Scheduler::stats().
struct SchedulerStats {
    std::int64_t requests = 0;         // submitted and accepted
    std::int64_t finished = 0;         // done: stopped, cancelled or failed
    std::int64_t promptTokens = 0;     // of finished requests, text plus image tokens
    std::int64_t generatedTokens = 0;  // streamed to clients
    std::int64_t prefixLookups = 0;    // admissions that looked up the prefix cache
    std::int64_t prefixHitTokens = 0;  // prompt tokens whose K/V came from the cache
    std::int64_t evictions = 0;        // cached blocks reused for other content
    std::int64_t preemptions = 0;      // running sequences sent back to the queue for room
    std::int64_t steps = 0;            // forward passes
    std::int64_t forwardTokens = 0;    // tokens run through the model (prefill and decode)
    std::int64_t kvBlocks = 0;         // pool size
    std::int64_t kvBlocksUsed = 0;     // held by running sequences
    std::int64_t kvBlocksCached = 0;   // held by no sequence, kept for their content
    int waiting = 0;
    int running = 0;
    KvDiskStats disk;  // the disk tier (zeros when off)
    KvTierStats tiers;  // MiniMax-M3's KV tiers (zeros when off): bytes moved, resident bytes
};

// Whether a step that has just read the end of one prompt should take no more prompt tokens:
// the next `tokensAfter` prompt tokens would delay that sequence's first token, while ending the
// step here makes each of the `promptsBehind` sequences still reading a prompt wait for one more
// step of `decodersNext` decode tokens plus `overheadTokens`. True when the first outweighs the
// second (all counted in prompt tokens' worth of time), which lowers the sum of first-token times.
bool endStepAtPromptEnd(std::int64_t tokensAfter, std::int64_t promptsBehind,
                        std::int64_t decodersNext, std::int64_t overheadTokens);

// One streamed token: its id and the text it completes (possibly empty: a character can span
// tokens; text past a stop string is never sent).
struct TokenEvent {
    std::int32_t token = 0;
    std::string text;
};

// A submitted request as its client sees it. Thread-safe.
class GenerationHandle {
public:
    enum class Poll { Token, Finished, Timeout };

    // The next streamed token, waiting up to `timeout`: Token (in `event`), Finished (every
    // token has been read; result() is ready) or Timeout.
    Poll next(TokenEvent& event, std::chrono::milliseconds timeout);
    // Stops the generation at the next step; the result then says StopReason::Cancelled (with
    // the tokens made so far). Safe to call at any time, also after the end.
    void cancel();
    bool cancelled() const;
    // Blocks until the request is done; its tokens and counters, or why it failed.
    Result<GenerateResult> result();
    // Seconds from submit() to the first token (nullopt before it).
    std::optional<double> timeToFirstToken() const;

private:
    friend class Scheduler;
    void push(TokenEvent event);
    void finish(Result<GenerateResult> result);

    mutable std::mutex m_mutex;
    std::condition_variable m_changed;
    std::deque<TokenEvent> m_events;
    std::optional<Result<GenerateResult>> m_result;
    std::chrono::steady_clock::time_point m_submitted = std::chrono::steady_clock::now();
    std::optional<double> m_firstToken;
    bool m_cancelled = false;
};

class Scheduler {
public:
    // Takes the engine (which must have no open Session) and starts the scheduler thread.
    static Result<std::unique_ptr<Scheduler>> start(std::unique_ptr<Engine> engine,
                                                    SchedulerOptions options = {});
    // Cancels what is queued or running (their results say Cancelled) and joins the thread.
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Queues `request` (its onToken is not called: read the handle). Checked at once:
    // InvalidArgument for a bad token id or image offset, Unsupported for images without a
    // projector, OutOfRange (with both numbers) for a prompt over the context or over the whole
    // KV pool, Unavailable when maxWaiting requests wait already or the scheduler is stopping.
    Result<std::shared_ptr<GenerationHandle>> submit(GenerateRequest request);

    // submit() and wait, calling request.onToken on this thread as tokens come (returning false
    // cancels): the drop-in for Session::generate. `cancel` (optional) is polled too, so another
    // thread can stop the wait.
    Result<GenerateResult> generate(const GenerateRequest& request,
                                    const std::atomic<bool>* cancel = nullptr);

    // Stops admitting; requests in flight are cancelled at the next step. submit() then says
    // Unavailable. The destructor calls it.
    void shutdown();

    SchedulerStats stats() const;
    const SchedulerOptions& options() const { return m_options; }
    // The loaded model, tokenizer, chat template and image preprocessing (their const parts
    // are safe from any thread; the mutable parts belong to the scheduler thread).
    const Engine& engine() const { return *m_engine; }

private:
    struct Sequence;
    struct ImageEncode;
    Scheduler(std::unique_ptr<Engine> engine, SchedulerOptions options);
    void loop();
    // The scheduler thread's phases (scheduler.cpp).
    void dropCancelled();
    void admit();
    enum class Admission { Placed, NoRoom, Deferred };
    Result<Admission> place(Sequence& sequence);
    void nameBlocks(Sequence& sequence, std::size_t count) const;
    bool computing(const Sha256Digest& name) const;
    Status requestImages(Sequence& sequence);
    void advanceImages();
    std::int64_t readySlots(const Sequence& sequence, std::int64_t n) const;
    std::int64_t step();
    bool endsStepHere(std::size_t index, std::int64_t decodersNext, std::int64_t budget) const;
    void preemptLatest();
    void appendInputs(const Sequence& sequence, std::int64_t n,
                      std::vector<TokenInput>& batch) const;
    void publishBlocks(Sequence& sequence);
    // Sampling's first half on the model's device, when it can and every sequence taking a
    // token this step can start from candidates: fills m_requests (one per such sequence, in
    // `parts` order) and returns true.
    bool requestCandidates(const std::vector<std::pair<Sequence*, std::int64_t>>& parts);
    // Appends the token sampled for `sequence` (unless it already has maxTokens) and streams
    // it; marks the sequence done when a stop condition holds.
    void takeToken(Sequence& sequence, std::int32_t token);
    void endFinished();
    void finish(Sequence& sequence, const Status& failure);
    void publishStats(std::int64_t generated);

    std::unique_ptr<Engine> m_engine;
    SchedulerOptions m_options;
    std::unique_ptr<KvDiskStore> m_disk;  // null when the disk tier is off
    bool m_tierWarned = false;            // the KV tiers' disk warning went out

    mutable std::mutex m_mutex;  // guards the submissions, m_stopping and m_stats
    std::condition_variable m_wake;
    std::vector<std::unique_ptr<Sequence>> m_submitted;
    bool m_stopping = false;
    SchedulerStats m_stats;

    // The scheduler thread's own state.
    std::deque<std::unique_ptr<Sequence>> m_waiting;
    std::deque<std::unique_ptr<Sequence>> m_running;  // in admission order
    std::deque<ImageEncode> m_encodes;                // oldest first
    std::vector<float> m_logits;
    std::vector<CandidateRequest> m_requests;  // with the model sampling on its device
    Candidates m_candidates;
    std::thread m_thread;
};

}  // namespace iris::inference
