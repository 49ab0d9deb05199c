#pragma once
// The inference engine as the rest of Iris uses it: a model file loaded with its tokenizer and
// chat template, a KV cache and compute threads, and sessions (conversations) that generate.
// A session keeps its tokens' K/V, so the next turn of a conversation computes only what is new
// after the longest prefix it shares with the previous turn.
//
// Images (Qwen2.5-VL, UI-TARS-1.5, MiniMax-M3): with a vision projector
// (EngineOptions::mmprojPath) a prompt may hold images between its tokens. The engine
// preprocesses them (prepareImage), runs the vision tower once per distinct image (embeddings
// are cached by the image's SHA-256, least recently used first out), feeds the embeddings in
// place of token embeddings and gives them M-RoPE positions (docs: qwen25vl.md §3.2). KV slots
// and rotary positions are kept apart: after an image of gh x gw merged tokens starting at
// position s, text resumes at s + max(gh, gw) while the KV slots advance by gh * gw. A decoder
// without M-RoPE (MiniMax-M3) gives each image embedding the next 1-D position. Prefix reuse
// compares images by hash, token by token.
//
// Not thread-safe: one thread drives an Engine and its sessions (the agent's worker thread);
// the engine's own compute threads do the parallel work inside each call. Sessions hold a
// reference to their Engine and must be destroyed first.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/sha256.h"
#include "base/status.h"
#include "inference/backend/device.h"
#include "inference/chat_template.h"
#include "inference/gguf/gguf_file.h"
#include "inference/kv_cache.h"
#include "inference/kv_tiers.h"
#include "inference/models/model.h"
#include "inference/prompt_layout.h"
#include "inference/sampler.h"
#include "inference/thread_pool.h"
#include "inference/tokenizer/tokenizer.h"
#include "inference/vision/image_positions.h"
#include "inference/vision/image_preprocess.h"
#include "inference/vision/vision_model.h"

namespace iris::inference {

struct EngineOptions {
    // Where the language model runs (inference/backend/device.h): auto takes CUDA when it can and
    // notes why not otherwise (Engine::deviceNote()).
    DeviceChoice device{};
    int threads = ThreadPool::hardwareThreads();
    std::int64_t contextSize = 4096;  // tokens per session
    int maxSessions = 1;              // KV cache room for this many full contexts
    kernels::TensorType kvType = kernels::TensorType::F16;
    int kvBlockSize = 16;
    std::int64_t prefillChunk = 512;  // tokens per forward pass while reading a prompt
    // The model's vision projector GGUF (llama.cpp's "mmproj"); empty for text only.
    std::filesystem::path mmprojPath;
    // Smart-resize budget and filter for images (patch, merge, mean and std come from the
    // projector file). 0: the tower's default, llama.cpp's for its projector (VisionConfig:
    // 8 to 4096 merged tokens of 28 x 28 pixels for Qwen2.5-VL, 8 to 576 for MiniMax-M3).
    std::int64_t imageMinPixels = 0;
    std::int64_t imageMaxPixels = 0;
    ResampleFilter imageFilter = ResampleFilter::Bicubic;
    // Image embeddings kept by hash, least recently used out first: bytes of floats. A 1080p
    // screenshot is 2691 tokens, 38.6 MB at UI-TARS-7B's width 3584; 0 keeps none.
    std::int64_t imageCacheBytes = std::int64_t(512) << 20;
    // Every layer attends densely, also where the architecture attends sparsely (MiniMax-M3's
    // MSA layers): for comparisons. IRIS_DENSE_ATTENTION=1 in the environment does the same.
    bool denseAttention = false;
    // Called on the loading thread as load() advances with the fraction of the work done: rising,
    // and 1 exactly once, when the engine is ready (never after an error). The work is counted in
    // weight bytes (the model's, then the projector's), each once when read in and once when
    // built into the model or tower. With a callback, load() reads every weight page in itself,
    // so that the bar follows the disk and the first step does not stall on it; without one,
    // pages come in on first use.
    std::function<void(double fraction)> onLoadProgress;
    // How the vision tower multiplies (vision_model.h): Auto is whichever of bf16 and f32
    // kernels::gemmBf16Faster measured faster on this CPU.
    VisionPrecision visionPrecision = VisionPrecision::Auto;
    // The chat template to render, instead of the one the file's tokenizer.chat_template (or
    // architecture) implies: what a model catalogue says of a model it knows.
    std::optional<ChatTemplateKind> chatTemplate;
    // KV tiers for MiniMax-M3's sparse layers (inference/kv_tiers.h): with computeBytes > 0 the
    // pool keeps only that much of their K/V, the rest goes to host memory and disk, and a
    // decode step brings in the blocks its sparse attention selects. Other models refuse it.
    KvTierOptions kvTiers{};
};

enum class StopReason { EndOfGeneration, StopString, MaxTokens, ContextFull, Cancelled };
const char* stopReasonName(StopReason reason);

// Cuts `text` before the first stop string that the bytes from `before` on complete; whether
// one did. Searches only where a new match can be: from the last stop.size() - 1 old bytes on.
bool cutAtStopString(std::string& text, std::size_t before, std::span<const std::string> stops);
// How many bytes at the end of `text` could still become the start of a stop string: a stream
// holds them back until the next token decides.
std::size_t stopStringHoldback(std::string_view text, std::span<const std::string> stops);

struct GenerateRequest {
    std::vector<std::int32_t> prompt;  // the whole conversation so far, as token ids
    std::vector<PromptImage> images;   // in offset order; equal offsets keep their order
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
    std::int64_t promptTokens = 0;  // text tokens plus image tokens
    std::int64_t reusedTokens = 0;  // prompt tokens whose K/V came from the previous turn
    std::int64_t imageTokens = 0;   // of promptTokens, those images produced
    int imagesEncoded = 0;          // images the vision tower ran for (others came from cache)
    double encodeSeconds = 0;       // in the vision tower (part of prefillSeconds)
    double prefillSeconds = 0;
    double decodeSeconds = 0;
};

class Engine;

class Session {
public:
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Generates a continuation of `request.prompt` with its images. OutOfRange when the prompt
    // does not fit in the context; InvalidArgument for token ids outside the vocabulary or an
    // image offset past the prompt; Unsupported for images when no projector is loaded.
    Result<GenerateResult> generate(const GenerateRequest& request);

    // The tokens whose K/V the session holds, one per KV slot; an image's tokens appear as -1.
    const std::vector<std::int32_t>& cachedTokens() const { return m_tokens; }
    // The rotary position of each of them (t, h, w, e), and the position the next token gets.
    const std::vector<TokenPosition>& cachedPositions() const { return m_positions; }
    std::int32_t nextPosition() const { return m_nextPosition; }

private:
    friend class Engine;
    // What a prefill injects in place of token embeddings: one pointer per slot (null for
    // text), into the images' embeddings, which `held` keeps alive.
    struct InjectedEmbeddings {
        std::vector<std::shared_ptr<const std::vector<float>>> held;  // per request image
        std::vector<const float*> perSlot;
    };
    Session(Engine& engine, SequenceId sequence) : m_engine(engine), m_sequence(sequence) {}
    // The phases of generate(), in order (Engine::checkRequest first).
    std::size_t reusePrefix(std::span<const SlotItem> items);
    Status embedImages(const GenerateRequest& request, const PromptSlots& prompt, std::size_t from,
                       InjectedEmbeddings& out, GenerateResult& result);
    // What a forward pass leaves the sampler: the last slot's logits or, when the model samples
    // on its device and `request` is set, the candidates it asks for.
    struct NextToken {
        std::vector<float> logits;
        std::optional<CandidateRequest> request;
        Candidates candidates;
    };
    Status decode(const GenerateRequest& request, Sampler& sampler, NextToken& next,
                  GenerateResult& result);
    Status feed(std::span<const SlotItem> items, std::span<const TokenPosition> positions,
                std::span<const std::int32_t> nextPositions,
                std::span<const float* const> embeddings, NextToken& next);
    void truncate(std::size_t length);

    Engine& m_engine;
    SequenceId m_sequence;
    std::vector<std::int32_t> m_tokens;
    std::vector<SlotItem> m_items;
    std::vector<TokenPosition> m_positions;
    std::vector<std::int32_t> m_nextPositions;  // running position after each slot
    std::int32_t m_nextPosition = 0;
};

// What a device keeps for `sampler` after `history` (Model::forwardCandidates); only for a
// sampler whose candidatesNeeded() is above 0.
CandidateRequest candidateRequest(const Sampler& sampler, std::span<const std::int32_t> history);

class Engine {
public:
    // Loads a GGUF model: maps the file, checks it, reads the tokenizer and the chat template,
    // allocates the KV cache. Errors name the file and what is wrong with it.
    static Result<std::unique_ptr<Engine>> load(const std::filesystem::path& modelPath,
                                                const EngineOptions& options);

    // Loads with a vision tower made by the caller (tests, or a tower loaded elsewhere) in place
    // of options.mmprojPath; the same pairing checks apply.
    static Result<std::unique_ptr<Engine>> load(const std::filesystem::path& modelPath,
                                                const EngineOptions& options,
                                                std::unique_ptr<VisionModel> vision);

    // A new, empty conversation. OutOfRange when maxSessions are already open.
    Result<std::unique_ptr<Session>> newSession();

    // The checks every generation makes before it starts: InvalidArgument for an empty prompt,
    // a token id outside the vocabulary, an image out of order or past the prompt;
    // Unsupported for images when no projector is loaded.
    Status checkRequest(const GenerateRequest& request) const;

    // Whether images can be given (a projector is loaded), and its tower.
    bool hasVision() const { return m_vision != nullptr; }
    const VisionModel* vision() const { return m_vision.get(); }
    const GgufFile* projectorFile() const { return m_projectorFile ? &*m_projectorFile : nullptr; }
    // The preprocessing the tower expects with this engine's options.
    ImagePreprocessOptions imageOptions() const;
    // Decodes (PNG or JPEG) and preprocesses an image for a prompt. Unsupported without a
    // projector; InvalidArgument for undecodable bytes.
    Result<std::shared_ptr<const ImagePatches>> prepareImage(
        std::span<const std::uint8_t> encoded) const;
    Result<std::shared_ptr<const ImagePatches>> prepareImage(const RgbImage& image) const;

    // The tower's output for `image`, from the cache when an image with the same hash was
    // encoded recently. `encoded` (optional) is set when the tower ran.
    Result<std::shared_ptr<const std::vector<float>>> imageEmbeddings(const ImagePatches& image,
                                                                      bool* encoded = nullptr);
    std::size_t cachedImageCount() const { return m_imageCache.size(); }
    // The two halves of imageEmbeddings for a caller that runs the tower itself (the serving
    // scheduler, a stage at a time): the cached embeddings of the image with this hash (made most
    // recently used), or null; and embeddings made from `image` by vision()->beginEncode, checked
    // against its token count and put in the cache.
    std::shared_ptr<const std::vector<float>> cachedImageEmbeddings(const Sha256Digest& hash);
    Result<std::shared_ptr<const std::vector<float>>> keepImageEmbeddings(
        const ImagePatches& image, std::vector<float> embeddings);

    // Cuts `tokens` at each occurrence of `placeholder` (e.g. <|image_pad|>, which the chat
    // template writes once per image) and puts images[i] in place of the i-th. InvalidArgument
    // when the counts differ.
    static Result<GenerateRequest> splitAtPlaceholders(
        std::span<const std::int32_t> tokens, std::int32_t placeholder,
        std::span<const std::shared_ptr<const ImagePatches>> images);

    const GgufFile& file() const { return *m_file; }
    const Model& model() const { return *m_model; }
    const Tokenizer& tokenizer() const { return *m_tokenizer; }
    const ChatTemplate& chatTemplate() const { return *m_chatTemplate; }
    const EngineOptions& options() const { return m_options; }
    // The parts under the sessions, for tools that drive the model directly (iris bench). A
    // sequence such a tool creates in the cache must be released before sessions need the room.
    ThreadPool& pool() { return *m_pool; }
    KvCache& cache() { return *m_cache; }
    // The KV tiers (nullptr without EngineOptions::kvTiers).
    const KvTiers* kvTiers() const { return m_tiers.get(); }
    Model& mutableModel() { return *m_model; }
    // Puts the language model behind what `wrap` makes of it (tests that run the engine on a
    // model with another interface, such as sampling on a simulated device). Before any session
    // or scheduler runs.
    void wrapModel(const std::function<std::unique_ptr<Model>(std::unique_ptr<Model>)>& wrap) {
        m_model = wrap(std::move(m_model));
    }
    // Where the language model runs: "cpu" or "cuda:N".
    const std::string& deviceName() const { return m_deviceName; }
    // With --device auto on the CPU: the one line that says why not CUDA (empty otherwise), for
    // the commands to print.
    const std::string& deviceNote() const { return m_deviceNote; }

private:
    friend class Session;
    Engine() = default;

    // The language model on the device EngineOptions::device resolves to.
    Status createModelOnDevice();

    EngineOptions m_options;
    std::string m_deviceName = "cpu", m_deviceNote;
    std::optional<GgufFile> m_file;
    std::unique_ptr<Model> m_model;
    std::optional<Tokenizer> m_tokenizer;
    std::optional<ChatTemplate> m_chatTemplate;
    std::unique_ptr<ThreadPool> m_pool;
    std::optional<KvCache> m_cache;
    std::unique_ptr<KvTiers> m_tiers;  // after m_cache: detaches from it first
    int m_openSessions = 0;
    std::optional<GgufFile> m_projectorFile;
    std::unique_ptr<VisionModel> m_vision;
    struct CachedImage {
        Sha256Digest hash;
        std::shared_ptr<const std::vector<float>> embeddings;
    };
    std::vector<CachedImage> m_imageCache;  // most recently used last
    std::int64_t m_imageCacheBytes = 0;
};

}  // namespace iris::inference
