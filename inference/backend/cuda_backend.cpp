#include "inference/backend/cuda_backend.h"

#if !IRIS_HAVE_CUDA

namespace iris::inference {

Result<std::unique_ptr<DecoderBackend>> makeCudaBackend(const ModelConfig&, const ModelBackend&) {
    return Status::unsupported(
        "this build of Iris has no CUDA (configure with IRIS_CUDA=ON and nvcc); use --device cpu");
}

}  // namespace iris::inference

#else

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <utility>

#include <cuda_runtime_api.h>

#include "inference/backend/step_plan.h"
#include "inference/models/rope_tables.h"
#include "kernels/cuda/attention_decode.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kv_store.cuh"
#include "kernels/cuda/matmul_decode.cuh"
#include "kernels/cuda/matmul_prefill.cuh"
#include "kernels/cuda/moe.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/sampling.cuh"
#include "kernels/cuda/sparse_select.cuh"
#include "kernels/sparse_attention.h"

namespace iris::inference {
namespace {

namespace kc = kernels::cuda;

std::string mib(std::int64_t bytes) {
    return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

// A device allocation that frees itself; grows (contents dropped) when asked for more. Growing
// waits for the stream first, since launches queued before may still read the old memory.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { cudaFree(m_data); }
    cudaError_t reserve(std::int64_t bytes, cudaStream_t stream) {
        if (bytes <= m_bytes) return cudaSuccess;
        if (const cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) return e;
        cudaFree(m_data);
        m_data = nullptr;
        m_bytes = 0;
        if (const cudaError_t e = cudaMalloc(&m_data, std::size_t(bytes)); e != cudaSuccess) {
            cudaGetLastError();  // reported here, not again at a later launch
            m_data = nullptr;
            return e;
        }
        m_bytes = bytes;
        return cudaSuccess;
    }
    void* get() const { return m_data; }
    std::int64_t bytes() const { return m_bytes; }
    template <class T>
    T* as() const {
        return static_cast<T*>(m_data);
    }

private:
    void* m_data = nullptr;
    std::int64_t m_bytes = 0;
};

// Page-locked host memory for the per-step uploads: copies from it are truly asynchronous, so it
// is rewritten only after the stream drained (begin() synchronises first).
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    ~PinnedBuffer() { cudaFreeHost(m_data); }
    cudaError_t reserve(std::int64_t bytes) {
        if (bytes <= m_bytes) return cudaSuccess;
        cudaFreeHost(m_data);
        m_data = nullptr;
        m_bytes = 0;
        if (const cudaError_t e = cudaMallocHost(&m_data, std::size_t(bytes)); e != cudaSuccess) {
            m_data = nullptr;
            return e;
        }
        m_bytes = bytes;
        return cudaSuccess;
    }
    std::byte* get() const { return static_cast<std::byte*>(m_data); }

private:
    void* m_data = nullptr;
    std::int64_t m_bytes = 0;
};

// Where each per-step array sits in the staging buffer (and in its device twin), in bytes.
struct StepLayout {
    std::int64_t ids = 0, kvRows = 0, lengths = 0, cos = 0, sin = 0, tables = 0, images = 0,
                 total = 0;
};

class CudaBackend final : public DecoderBackend, public KvPoolMirror {
public:
    CudaBackend(const ModelConfig& config, const ModelBackend& where)
        : m_config(config),
          m_device(where.device),
          m_maxTokens(std::max<std::int64_t>(1, where.maxBatchTokens)) {}
    ~CudaBackend() override {
        // The model may be destroyed on another thread than the one that ran it; the runtime's
        // current device is per thread.
        cudaSetDevice(m_device);
        // Queued work may still use the buffers the members free after this body.
        if (m_stream != nullptr) {
            cudaStreamSynchronize(m_stream);
            cudaStreamDestroy(m_stream);
        }
        for (void* p : m_weightAllocations)
            cudaFree(p);
    }

    Status init();

    std::string name() const override { return "cuda:" + std::to_string(m_device); }

    Status beginLoading(std::int64_t weightBytes) override;
    Status adoptLinear(Linear& w) override;
    Status adoptVector(const float*& v, std::int64_t n) override;
    Status adoptEmbedding(const GgufTensor& table, std::int64_t width) override;
    Status adoptExperts(ExpertLayer& layer) override;
    Status finishLoading() override;
    Status bindCache(KvCache& cache) override;

    Status begin(std::span<const TokenInput> batch, KvCache& cache, const ModelConfig& config,
                 ThreadPool& pool) override;
    float* scratch(Activations which, std::int64_t count) override;
    void embed(float* x) override;
    void rmsNorm(const float* x, const float* w, float* y, std::int64_t rows, std::int64_t width,
                 float eps) override {
        check(kc::rmsNorm(x, width, w, y, width, rows, width, eps, m_stream), "rms_norm");
    }
    void linear(std::initializer_list<LinearRunner::Target> targets, const float* x,
                std::int64_t rows) override;
    void rope(float* x, int heads, int headDim) override {
        check(kc::ropeNeox(x, m_tokens, std::ptrdiff_t(heads) * headDim, heads, headDim,
                           m_config.ropeDims, stepArray<float>(m_layout.cos),
                           stepArray<float>(m_layout.sin), m_stream),
              "rope");
    }
    void writeKv(int layer, const float* k, const float* v, const float* indexKeys) override;
    void attend(int layer, const float* q, int heads, float* out) override;
    void attendSparse(int layer, const float* q, const float* indexQ, int heads,
                      const SparseAttention& msa, float* out, BlockChoices* chosen) override;
    void gatedActivation(GateActivation kind, float* gate, const float* up,
                         std::int64_t n) override {
        const kc::Activation a =
            kind == GateActivation::SwiGlu ? kc::Activation::SwiGlu : kc::Activation::SwiGluOai;
        check(kc::activate(a, gate, up, gate, n, m_stream), "activation");
    }
    void addResidual(float* x, const float* y, std::int64_t n) override {
        check(kc::addInPlace(x, y, n, m_stream), "residual add");
    }
    void zero(float* x, std::int64_t n) override {
        check(cudaMemsetAsync(x, 0, std::size_t(n) * sizeof(float), m_stream), "zero fill");
    }
    void mixtureOfExperts(const ExpertLayer& layer, const ExpertRouting& routing,
                          GateActivation activation, const float* x, std::int64_t rows, float* y,
                          int* experts, float* weights) override;
    void download(const float* from, std::int64_t n, float* to) override {
        check(cudaMemcpyAsync(to, from, std::size_t(n) * sizeof(float), cudaMemcpyDeviceToHost,
                              m_stream),
              "download");
        check(cudaStreamSynchronize(m_stream), "download");
    }
    Status finish(const float* x, const float* norm, float eps, const Linear& output,
                  std::vector<float>& logits) override;
    bool samplesOnDevice() const override { return true; }
    Status finishCandidates(const float* x, const float* norm, float eps, const Linear& output,
                            std::span<const CandidateRequest> requests,
                            Candidates& candidates) override;

    // KvPoolMirror: stream-ordered, so a forward pass queued after sees the copy.
    void copyBlock(std::int32_t from, std::int32_t to) override;
    void blockFilled(std::int32_t block) override;

private:
    // Keeps the first failure of the pass (reported by finish()).
    void check(cudaError_t error, const char* what) {
        if (error != cudaSuccess && m_error.isOk())
            m_error =
                Status::internal(name() + ": " + what + " failed: " + cudaGetErrorString(error));
    }
    Status fail(cudaError_t error, const std::string& what) const {
        return Status::internal(name() + ": " + what + ": " + cudaGetErrorString(error));
    }
    Result<void*> upload(const void* host, std::int64_t bytes, const char* what);
    // The final norm and output product of the tokens with wantLogits, into m_logits; how many.
    std::int64_t logitRows(const float* x, const float* norm, float eps, const Linear& output);
    // Waits for the step and returns its first error.
    Status endStep();
    Status adoptStack(ExpertStack& stack);
    // A buffer used only within one operation: grown (waiting for the stream) when too small.
    template <class T>
    T* within(DeviceBuffer& buffer, std::int64_t bytes, const char* what) {
        check(buffer.reserve(std::max<std::int64_t>(bytes, 256), m_stream), what);
        return buffer.bytes() >= bytes ? buffer.as<T>() : nullptr;
    }
    Status prepareStep(std::span<const TokenInput> batch, KvCache& cache);
    Status reserveScratch(std::int64_t tokens, std::int64_t attentionBytes, std::int64_t logitRows);
    template <class T>
    T* stepArray(std::int64_t offset) const {
        return reinterpret_cast<T*>(m_stepDevice.as<std::byte>() + offset);
    }
    std::int64_t kvLayerBytes() const;  // one layer's K (or V) pool
    void* poolLayer(int layer, bool value) const {
        return m_pool.as<std::byte>() +
               (2 * std::int64_t(layer) + (value ? 1 : 0)) * kvLayerBytes();
    }
    // `layer`'s K and V in the device pool, read through `tables`.
    kernels::PagedKv pagedKv(int layer, const std::int32_t* tables) const {
        return {poolLayer(layer, false),
                poolLayer(layer, true),
                tables,
                m_kv.blockSize,
                m_kv.kvHeads,
                m_kv.headDim,
                m_kv.type};
    }
    // MSA index keys: f32, [block][row][indexerDim] per layer from indexerFirstLayer on.
    std::int64_t indexLayerBytes() const {
        return m_kv.blocks * m_kv.blockSize * std::int64_t(m_kv.indexerDim) * 4;
    }
    float* indexLayer(int layer) const {
        return reinterpret_cast<float*>(m_indexKeys.as<std::byte>() +
                                        (layer - m_kv.indexerFirstLayer) * indexLayerBytes());
    }
    int indexedLayers() const {
        return m_kv.indexerDim > 0 ? m_kv.layers - m_kv.indexerFirstLayer : 0;
    }

    ModelConfig m_config;
    int m_device = 0;
    std::int64_t m_maxTokens;
    cudaStream_t m_stream = nullptr;
    Status m_error;

    // Weights: one allocation per tensor; the host address maps to the device copy so that tied
    // embeddings (output = token_embd) are uploaded once.
    std::vector<void*> m_weightAllocations;
    std::unordered_map<const void*, void*> m_uploaded;
    std::int64_t m_weightBytes = 0, m_uploadedBytes = 0;
    kernels::TensorType m_embeddingType = kernels::TensorType::F32;
    const void* m_embedding = nullptr;
    std::int64_t m_decodeBytes = 0;  // the largest product's decode scratch
    // The widest input of a product back to the hidden size: an FFN's (or expert's) width,
    // which the Gate and Up buffers hold per token.
    std::int64_t m_ffnWidth = 0;

    // The KV pool for the bound cache: per layer K then V, KvCache's layout.
    KvCache* m_cache = nullptr;
    KvCacheOptions m_kv;
    DeviceBuffer m_pool, m_indexKeys;

    // Activations and the step's scratch.
    std::array<DeviceBuffer, std::size_t(Activations::Count)> m_buffers;
    std::int64_t m_capacityTokens = 0;
    DeviceBuffer m_decodeScratch, m_attentionScratch, m_logits, m_selected;
    // Scratch of the MSA and MoE operations, grown on first use of a larger batch.
    DeviceBuffer m_sparse, m_sparseScratch, m_moe, m_groupedScratch;
    // One launch of the sparse attention's kernels: tokens [first, first + tokens), whose
    // tables are at table + i * stride, the longest attending to maxLength positions.
    struct SparseLaunch {
        std::int64_t first, tokens;
        const std::int32_t* table;
        std::ptrdiff_t stride;
        std::int64_t maxLength;
    };
    std::vector<SparseLaunch> m_launches;
    std::vector<std::int32_t> m_hostChoice;  // downloaded choices for a trace
    // Sampling's device half: penalties up, candidates (ids, then logits' bits) down.
    DeviceBuffer m_penalties, m_candidates, m_candidateScratch;
    std::vector<std::int32_t> m_penaltyHost, m_candidateHost;
    PinnedBuffer m_stepHost;
    DeviceBuffer m_stepDevice;
    StepLayout m_layout;

    // The pass in progress.
    std::span<const TokenInput> m_batch;
    std::int64_t m_tokens = 0;
    StepPlan m_plan;
    RopeTables m_rope;
};

Status CudaBackend::init() {
    if (const cudaError_t e = cudaSetDevice(m_device); e != cudaSuccess)
        return fail(e, "cannot use the device");
    if (const cudaError_t e = cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking);
        e != cudaSuccess)
        return fail(e, "cannot create a stream");
    return {};
}

Status CudaBackend::beginLoading(std::int64_t weightBytes) {
    m_weightBytes = weightBytes;
    std::size_t free = 0, total = 0;
    if (const cudaError_t e = cudaMemGetInfo(&free, &total); e != cudaSuccess)
        return fail(e, "cannot read the free device memory");
    if (weightBytes > std::int64_t(free)) {
        return Status::outOfRange(name() + ": the weights need " + mib(weightBytes) + " but only " +
                                  mib(std::int64_t(free)) + " of " + mib(std::int64_t(total)) +
                                  " are free; use a smaller quantization or --device cpu");
    }
    return {};
}

Result<void*> CudaBackend::upload(const void* host, std::int64_t bytes, const char* what) {
    if (auto it = m_uploaded.find(host); it != m_uploaded.end()) return it->second;
    void* device = nullptr;
    if (const cudaError_t e = cudaMalloc(&device, std::size_t(bytes)); e != cudaSuccess) {
        cudaGetLastError();  // an allocation failure must not surface at a later launch
        std::size_t free = 0, total = 0;
        cudaMemGetInfo(&free, &total);
        return Status::outOfRange(name() + ": out of device memory uploading " + what + " (" +
                                  mib(bytes) + "; " + mib(m_uploadedBytes) + " of the weights' " +
                                  mib(m_weightBytes) + " uploaded, " + mib(std::int64_t(free)) +
                                  " free); use a smaller quantization or --device cpu");
    }
    m_weightAllocations.push_back(device);
    // Synchronous copy from the file's mapping: loading happens once, and the mapping's pages
    // are pageable memory an asynchronous copy could not overlap anyway.
    if (const cudaError_t e = cudaMemcpy(device, host, std::size_t(bytes), cudaMemcpyHostToDevice);
        e != cudaSuccess)
        return fail(e, std::string("uploading ") + what);
    m_uploaded.emplace(host, device);
    m_uploadedBytes += bytes;
    return device;
}

Status CudaBackend::adoptLinear(Linear& w) {
    if (!kc::decodeSupports(w.type)) {
        return Status::unsupported(name() + ": weights of type " +
                                   std::string(kernels::tensorTypeInfo(w.type).name) +
                                   " have no CUDA product; use --device cpu");
    }
    if (w.in % 32 != 0) {
        return Status::unsupported(name() + ": a product over " + std::to_string(w.in) +
                                   " inputs is not a multiple of 32, which the CUDA products "
                                   "need; use --device cpu");
    }
    Result<void*> data = upload(w.data, kernels::rowBytes(w.type, w.in) * w.out, "a weight matrix");
    if (!data) return data.status();
    w.data = *data;
    w.packed = nullptr;
    if (w.bias != nullptr) {
        Result<void*> bias = upload(w.bias, w.out * std::int64_t(sizeof(float)), "a bias");
        if (!bias) return bias.status();
        w.bias = static_cast<const float*>(*bias);
    }
    m_decodeBytes =
        std::max(m_decodeBytes, kc::decodeScratchBytes(w.type, kc::kMaxDecodeRows, w.in));
    if (w.out == m_config.hiddenSize) m_ffnWidth = std::max(m_ffnWidth, w.in);
    return {};
}

Status CudaBackend::adoptStack(ExpertStack& stack) {
    if (!kc::decodeSupports(stack.type) || stack.in % 32 != 0) {
        return Status::unsupported(
            name() + ": experts of type " + std::string(kernels::tensorTypeInfo(stack.type).name) +
            " over " + std::to_string(stack.in) + " inputs have no CUDA product; use --device cpu");
    }
    Result<void*> data = upload(stack.data, stack.bytes(), "an expert stack");
    if (!data) return data.status();
    stack.data = *data;
    return {};
}

Status CudaBackend::adoptExperts(ExpertLayer& layer) {
    if (layer.router.out > kc::kMaxExperts) {
        return Status::unsupported(name() + ": " + std::to_string(layer.router.out) +
                                   " experts; the CUDA routing takes " +
                                   std::to_string(kc::kMaxExperts) + " at most; use --device cpu");
    }
    IRIS_RETURN_IF_ERROR(adoptLinear(layer.router));
    if (layer.routerBias != nullptr)
        IRIS_RETURN_IF_ERROR(adoptVector(layer.routerBias, layer.router.out));
    for (ExpertStack* stack : {&layer.gate, &layer.up, &layer.down})
        IRIS_RETURN_IF_ERROR(adoptStack(*stack));
    m_ffnWidth = std::max(m_ffnWidth, layer.down.in);
    return {};
}

Status CudaBackend::adoptVector(const float*& v, std::int64_t n) {
    Result<void*> data = upload(v, n * std::int64_t(sizeof(float)), "a norm vector");
    if (!data) return data.status();
    v = static_cast<const float*>(*data);
    return {};
}

Status CudaBackend::adoptEmbedding(const GgufTensor& table, std::int64_t width) {
    if (!kc::decodeSupports(table.type) || (!isFloatType(table.type) && width % 32 != 0)) {
        return Status::unsupported(name() + ": the token embedding's type " +
                                   std::string(kernels::tensorTypeInfo(table.type).name) +
                                   " has no CUDA lookup; use --device cpu");
    }
    Result<void*> data =
        upload(table.data.data(), std::int64_t(table.data.size()), "the token embedding");
    if (!data) return data.status();
    m_embedding = *data;
    m_embeddingType = table.type;
    return {};
}

Status CudaBackend::finishLoading() {
    // One scratch for every decode product (they run one after another on the stream).
    if (const cudaError_t e =
            m_decodeScratch.reserve(std::max<std::int64_t>(m_decodeBytes, 256), m_stream);
        e != cudaSuccess)
        return fail(e, "allocating the product scratch (" + mib(m_decodeBytes) + ")");
    return reserveScratch(m_maxTokens, 0, 1);
}

std::int64_t CudaBackend::kvLayerBytes() const {
    return m_kv.blocks * m_kv.blockSize * std::int64_t(m_kv.kvHeads) * m_kv.headDim *
           kernels::rowBytes(m_kv.type, 1);
}

Status CudaBackend::bindCache(KvCache& cache) {
    // The same address with our mirror attached is the cache already bound (a new cache at the
    // address of a destroyed one has no mirror and is bound afresh; the old one is not touched).
    if (m_cache == &cache && cache.mirror() == this) return {};
    if (cache.residency() != nullptr) {
        return Status::unsupported(name() +
                                   ": KV tiers keep the cache in host memory; they are not "
                                   "available with --device cuda");
    }
    if (const cudaError_t e = cudaSetDevice(m_device); e != cudaSuccess)
        return fail(e, "cannot use the device");
    m_cache = nullptr;
    m_kv = cache.options();
    const std::int64_t bytes =
        2 * std::int64_t(m_kv.layers) * kvLayerBytes() + indexedLayers() * indexLayerBytes();
    if (m_pool.reserve(2 * std::int64_t(m_kv.layers) * kvLayerBytes(), m_stream) != cudaSuccess ||
        m_indexKeys.reserve(std::max<std::int64_t>(indexedLayers() * indexLayerBytes(), 256),
                            m_stream) != cudaSuccess) {
        std::size_t free = 0, total = 0;
        cudaMemGetInfo(&free, &total);
        return Status::outOfRange(name() + ": the KV cache needs " + mib(bytes) + " but only " +
                                  mib(std::int64_t(free)) +
                                  " of device memory are free after the weights; use a smaller "
                                  "--ctx-size or a smaller quantization");
    }
    m_cache = &cache;
    cache.setMirror(this);
    return {};
}

void CudaBackend::copyBlock(std::int32_t from, std::int32_t to) {
    check(cudaSetDevice(m_device), "selecting the device");  // called on the scheduler's thread
    const std::int64_t block = kvLayerBytes() / m_kv.blocks;
    for (int layer = 0; layer < m_kv.layers; ++layer) {
        for (bool value : {false, true}) {
            std::byte* base = static_cast<std::byte*>(poolLayer(layer, value));
            check(cudaMemcpyAsync(base + to * block, base + from * block, std::size_t(block),
                                  cudaMemcpyDeviceToDevice, m_stream),
                  "KV copy on write");
        }
    }
    const std::int64_t keys = indexLayerBytes() / m_kv.blocks;
    for (int layer = m_kv.layers - indexedLayers(); layer < m_kv.layers; ++layer) {
        auto* base = reinterpret_cast<std::byte*>(indexLayer(layer));
        check(cudaMemcpyAsync(base + to * keys, base + from * keys, std::size_t(keys),
                              cudaMemcpyDeviceToDevice, m_stream),
              "index key copy on write");
    }
}

void CudaBackend::blockFilled(std::int32_t blockId) {
    check(cudaSetDevice(m_device), "selecting the device");
    const std::int64_t block = kvLayerBytes() / m_kv.blocks;
    for (int layer = 0; layer < m_kv.layers; ++layer) {
        for (bool value : {false, true}) {
            const auto* host = static_cast<const std::byte*>(value ? m_cache->values(layer)
                                                                   : m_cache->keys(layer));
            std::byte* base = static_cast<std::byte*>(poolLayer(layer, value));
            // Synchronous: the host pool's pages may be written again once this returns.
            check(cudaMemcpy(base + blockId * block, host + blockId * block, std::size_t(block),
                             cudaMemcpyHostToDevice),
                  "KV block upload");
        }
    }
    const std::int64_t keys = indexLayerBytes() / m_kv.blocks;
    for (int layer = m_kv.layers - indexedLayers(); layer < m_kv.layers; ++layer) {
        const auto* host = reinterpret_cast<const std::byte*>(m_cache->indexKeys(layer));
        auto* base = reinterpret_cast<std::byte*>(indexLayer(layer));
        check(cudaMemcpy(base + blockId * keys, host + blockId * keys, std::size_t(keys),
                         cudaMemcpyHostToDevice),
              "index key block upload");
    }
}

Status CudaBackend::reserveScratch(std::int64_t tokens, std::int64_t attentionBytes,
                                   std::int64_t logitRows) {
    const ModelConfig& c = m_config;
    const std::int64_t f = sizeof(float);
    const std::int64_t ffn = std::max(c.ffnSize, m_ffnWidth);
    const std::int64_t sizes[] = {tokens * c.hiddenSize,
                                  tokens * c.hiddenSize,  // X, Norm
                                  tokens * c.heads * c.headDim,
                                  tokens * c.kvHeads * c.headDim,  // Q, K
                                  tokens * c.kvHeads * c.headDim,
                                  tokens * c.heads * c.headDim,  // V, Attention
                                  tokens * ffn,
                                  tokens * ffn,  // Gate, Up
                                  tokens * c.kvHeads * c.indexerDim,
                                  tokens * c.indexerDim,   // IndexQ, IndexK
                                  tokens * c.hiddenSize};  // Out
    static_assert(std::size(sizes) == std::size_t(Activations::Count));
    std::int64_t total = 0;
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
        total += sizes[i] * f;
        if (const cudaError_t e =
                m_buffers[i].reserve(std::max<std::int64_t>(sizes[i] * f, 256), m_stream);
            e != cudaSuccess)
            return fail(e, "allocating activations for " + std::to_string(tokens) + " tokens (" +
                               mib(total) + ")");
    }
    m_capacityTokens = std::max(m_capacityTokens, tokens);
    if (const cudaError_t e =
            m_attentionScratch.reserve(std::max<std::int64_t>(attentionBytes, 256), m_stream);
        e != cudaSuccess)
        return fail(e, "allocating attention scratch (" + mib(attentionBytes) + ")");
    if (const cudaError_t e = m_selected.reserve(logitRows * c.hiddenSize * f, m_stream);
        e != cudaSuccess)
        return fail(e, "allocating the logit rows");
    if (const cudaError_t e = m_logits.reserve(logitRows * c.vocabSize * f, m_stream);
        e != cudaSuccess)
        return fail(e, "allocating logits for " + std::to_string(logitRows) + " tokens (" +
                           mib(logitRows * c.vocabSize * f) + ")");
    return {};
}

Status CudaBackend::prepareStep(std::span<const TokenInput> batch, KvCache& cache) {
    m_plan = planStep(batch, cache);
    const StepPlan& p = m_plan;
    const std::int64_t D = m_config.hiddenSize;
    // Byte offsets of the step's arrays, each 256-byte aligned as the kernels' loads like.
    const auto align = [](std::int64_t bytes) { return (bytes + 255) / 256 * 256; };
    const auto bytesOf = [](const auto& v) { return std::int64_t(v.size() * sizeof(v[0])); };
    StepLayout& l = m_layout;
    l.ids = 0;
    l.kvRows = align(l.ids + bytesOf(p.ids));
    l.lengths = align(l.kvRows + bytesOf(p.kvRows));
    l.cos = align(l.lengths + bytesOf(p.lengths));
    l.sin = align(l.cos + std::int64_t(m_rope.cosines().size_bytes()));
    l.tables = align(l.sin + std::int64_t(m_rope.sines().size_bytes()));
    l.images = align(l.tables + bytesOf(p.tables));
    l.total = align(l.images + std::int64_t(p.imageRows.size()) * D * 4);
    if (const cudaError_t e = m_stepHost.reserve(l.total); e != cudaSuccess)
        return fail(e, "allocating " + mib(l.total) + " of pinned host memory");
    if (const cudaError_t e = m_stepDevice.reserve(l.total, m_stream); e != cudaSuccess)
        return fail(e, "allocating the step's device arrays");
    std::byte* h = m_stepHost.get();
    std::memcpy(h + l.ids, p.ids.data(), std::size_t(bytesOf(p.ids)));
    std::memcpy(h + l.kvRows, p.kvRows.data(), std::size_t(bytesOf(p.kvRows)));
    std::memcpy(h + l.lengths, p.lengths.data(), std::size_t(bytesOf(p.lengths)));
    std::memcpy(h + l.cos, m_rope.cosines().data(), m_rope.cosines().size_bytes());
    std::memcpy(h + l.sin, m_rope.sines().data(), m_rope.sines().size_bytes());
    std::memcpy(h + l.tables, p.tables.data(), std::size_t(bytesOf(p.tables)));
    // Image rows are copied out of the caller's buffers now: the upload is asynchronous.
    for (std::size_t i = 0; i < p.imageRows.size(); ++i) {
        const float* source = batch[std::size_t(p.imageRows[i])].embedding;
        std::memcpy(h + l.images + std::int64_t(i) * D * 4, source, std::size_t(D) * 4);
    }
    return {};
}

Status CudaBackend::begin(std::span<const TokenInput> batch, KvCache& cache,
                          const ModelConfig& config, ThreadPool&) {
    // The pass may run on another thread than the load (the scheduler's): the device is a
    // per-thread setting of the runtime.
    if (const cudaError_t e = cudaSetDevice(m_device); e != cudaSuccess)
        return fail(e, "cannot use the device");
    IRIS_RETURN_IF_ERROR(bindCache(cache));
    // The previous pass ended synchronised, but a copy on write queued since may still run; the
    // pinned step buffer is rewritten below.
    if (const cudaError_t e = cudaStreamSynchronize(m_stream); e != cudaSuccess)
        return fail(e, "an earlier step failed");
    m_batch = batch;
    m_tokens = std::int64_t(batch.size());
    m_rope.build(batch, config);
    IRIS_RETURN_IF_ERROR(prepareStep(batch, cache));
    const std::int64_t H = m_config.heads, hd = m_config.headDim;
    std::int64_t attentionBytes = 0;
    if (m_plan.decode) {
        attentionBytes =
            kc::attendDecodeScratchBytes(int(m_tokens), int(H), int(hd), m_plan.maxLength);
    } else {
        for (const StepRun& run : m_plan.runs)
            attentionBytes = std::max(
                attentionBytes,
                kc::attendDecodeScratchBytes(int(run.tokens), int(H), int(hd), run.maxLength));
    }
    std::int64_t logitRows = 0;
    for (const TokenInput& in : batch)
        logitRows += in.wantLogits ? 1 : 0;
    IRIS_RETURN_IF_ERROR(reserveScratch(std::max(m_tokens, m_capacityTokens), attentionBytes,
                                        std::max<std::int64_t>(logitRows, 1)));
    // One upload of everything the step reads per token, from pinned memory.
    if (const cudaError_t e =
            cudaMemcpyAsync(m_stepDevice.get(), m_stepHost.get(), std::size_t(m_layout.total),
                            cudaMemcpyHostToDevice, m_stream);
        e != cudaSuccess)
        return fail(e, "uploading the step");
    return {};
}

float* CudaBackend::scratch(Activations which, std::int64_t count) {
    DeviceBuffer& buffer = m_buffers[std::size_t(which)];
    // begin() sized every buffer for the batch; a larger request is a bug in the model, and null
    // makes every kernel given it refuse to run rather than write past the buffer.
    if (count * std::int64_t(sizeof(float)) > buffer.bytes()) {
        check(cudaErrorInvalidValue, "activation buffer request beyond the batch's size");
        return nullptr;
    }
    return buffer.as<float>();
}

void CudaBackend::embed(float* x) {
    const std::int64_t D = m_config.hiddenSize;
    check(kc::embeddingRows(m_embeddingType, m_embedding, m_config.vocabSize, D,
                            stepArray<std::int32_t>(m_layout.ids), m_tokens, x, D, m_stream),
          "embedding lookup");
    // Image tokens: their vision-tower rows, uploaded with the step, replace the lookup; one
    // copy per run of consecutive image rows (an image's tokens are consecutive).
    const float* images = stepArray<float>(m_layout.images);
    const std::vector<std::int64_t>& rows = m_plan.imageRows;
    for (std::size_t i = 0; i < rows.size();) {
        std::size_t n = 1;
        while (i + n < rows.size() && rows[i + n] == rows[i] + std::int64_t(n))
            ++n;
        check(
            cudaMemcpyAsync(x + rows[i] * D, images + std::int64_t(i) * D,
                            n * std::size_t(D) * sizeof(float), cudaMemcpyDeviceToDevice, m_stream),
            "image embedding copy");
        i += n;
    }
}

void CudaBackend::linear(std::initializer_list<LinearRunner::Target> targets, const float* x,
                         std::int64_t rows) {
    for (const LinearRunner::Target& target : targets) {
        const Linear& w = *target.weights;
        // A decode step's few rows are bound by reading W once; more rows go to tensor cores.
        if (rows <= kc::kMaxDecodeRows) {
            check(kc::matmulDecode(w.type, w.data, w.out, w.in, x, w.in, rows, target.y, w.out,
                                   m_decodeScratch.get(), m_stream),
                  "decode product");
        } else {
            check(kc::matmulPrefill(w.type, w.data, w.out, w.in, x, w.in, rows, target.y, w.out,
                                    m_stream),
                  "prefill product");
        }
        if (w.bias != nullptr)
            check(kc::addBias(target.y, w.bias, rows, w.out, m_stream), "bias add");
    }
}

void CudaBackend::writeKv(int layer, const float* k, const float* v, const float* indexKeys) {
    check(kc::storeKvRows(k, v, m_tokens, std::int64_t(m_kv.kvHeads) * m_kv.headDim,
                          stepArray<std::int64_t>(m_layout.kvRows), m_kv.type,
                          poolLayer(layer, false), poolLayer(layer, true), m_stream),
          "KV store");
    if (indexKeys != nullptr) {  // K only, kept f32 as the CPU keeps them
        check(kc::storeKvRows(indexKeys, nullptr, m_tokens, m_kv.indexerDim,
                              stepArray<std::int64_t>(m_layout.kvRows), kernels::TensorType::F32,
                              indexLayer(layer), nullptr, m_stream),
              "index key store");
    }
}

void CudaBackend::attend(int layer, const float* q, int heads, float* out) {
    const float scale = 1.0f / std::sqrt(float(m_kv.headDim));
    const std::int32_t* tables = stepArray<std::int32_t>(m_layout.tables);
    const std::int32_t* lengths = stepArray<std::int32_t>(m_layout.lengths);
    kernels::PagedKv kv = pagedKv(layer, tables);
    if (m_plan.decode) {  // one token per sequence: one launch, run r's table at r * stride
        check(kc::attendDecode(q, int(m_tokens), heads, kv, m_plan.tableStride, lengths,
                               m_plan.maxLength, scale, out, m_attentionScratch.get(), m_stream),
              "decode attention");
        return;
    }
    const std::int64_t row = std::int64_t(heads) * m_kv.headDim;
    for (std::size_t r = 0; r < m_plan.runs.size(); ++r) {
        const StepRun& run = m_plan.runs[r];
        kv.blockTable = tables + std::int64_t(r) * m_plan.tableStride;
        check(kc::attendPrefill(q + run.first * row, int(run.tokens), heads, kv,
                                lengths + run.first, run.maxLength, scale, out + run.first * row,
                                m_attentionScratch.get(), m_stream),
              "prefill attention");
    }
}

// Decode: one launch of each kernel for the whole batch (sequence s's table at s * stride).
// Prefill: each run of one sequence's tokens is a batch of its own whose "sequences" are its
// tokens, all reading the run's one table (stride 0) to their own lengths.
void CudaBackend::attendSparse(int layer, const float* q, const float* indexQ, int heads,
                               const SparseAttention& msa, float* out, BlockChoices* chosen) {
    const int G = m_kv.kvHeads, topK = std::max(msa.topK, 1), S = msa.blockSize;
    const float scale = 1.0f / std::sqrt(float(m_kv.headDim));
    const std::int32_t* tables = stepArray<std::int32_t>(m_layout.tables);
    const std::int32_t* lengths = stepArray<std::int32_t>(m_layout.lengths);
    std::vector<SparseLaunch>& launches = m_launches;  // kept: no allocation per step
    launches.clear();
    if (m_plan.decode) {
        launches.push_back({0, m_tokens, tables, m_plan.tableStride, m_plan.maxLength});
    } else {
        for (std::size_t r = 0; r < m_plan.runs.size(); ++r) {
            const StepRun& run = m_plan.runs[r];
            launches.push_back({run.first, run.tokens,
                                tables + std::int64_t(r) * m_plan.tableStride, 0, run.maxLength});
        }
    }
    // Per token and group: the block scores (the longest range's blocks), the choice, its count.
    std::int64_t maxBlocks = 0, maxTokens = 0;
    for (const SparseLaunch& l : launches) {
        maxBlocks = std::max(maxBlocks, kernels::selectionBlocks(l.maxLength, S));
        maxTokens = std::max(maxTokens, l.tokens);
    }
    const std::int64_t rows = m_tokens * G, scoresBytes = rows * maxBlocks * 4,
                       selectedBytes = rows * topK * 4;
    std::byte* space = within<std::byte>(m_sparse, scoresBytes + selectedBytes + rows * 4,
                                         "sparse attention scratch");
    const std::int64_t scratchBytes =
        std::max(kc::selectTopBlocksScratchBytes(int(maxTokens * G), int(maxBlocks), topK),
                 kc::attendSelectedScratchBytes(int(maxTokens), heads, m_kv.headDim, topK, S));
    void* scratch = within<std::byte>(m_sparseScratch, scratchBytes, "sparse attention scratch");
    if (space == nullptr || scratch == nullptr) return;
    auto* scores = reinterpret_cast<float*>(space);
    auto* selected = reinterpret_cast<std::int32_t*>(space + scoresBytes);
    auto* counts = reinterpret_cast<std::int32_t*>(space + scoresBytes + selectedBytes);
    const std::int64_t row = std::int64_t(heads) * m_kv.headDim;
    for (const SparseLaunch& l : launches) {
        const int seqs = int(l.tokens);
        const int blocks = int(kernels::selectionBlocks(l.maxLength, S));
        const kernels::PagedIndexKeys keys{indexLayer(layer), l.table, m_kv.blockSize,
                                           msa.indexDim};
        const kernels::PagedKv runKv = pagedKv(layer, l.table);
        std::int32_t* runSelected = selected + l.first * G * topK;
        std::int32_t* runCounts = counts + l.first * G;
        check(kc::indexerBlockScores(indexQ + l.first * G * msa.indexDim, seqs, G, keys, l.stride,
                                     lengths + l.first, S, blocks, scores, m_stream),
              "indexer block scores");
        check(kc::selectTopBlocks(scores, seqs, G, lengths + l.first, S, blocks, topK,
                                  msa.localBlocks, runSelected, runCounts, scratch, m_stream),
              "block selection");
        check(kc::attendSelectedBlocks(q + l.first * row, seqs, heads, runKv, l.stride,
                                       lengths + l.first, runSelected, runCounts, topK, S, scale,
                                       out + l.first * row, scratch, m_stream),
              "sparse attention");
    }
    if (chosen == nullptr) return;
    m_hostChoice.resize(std::size_t(rows * (topK + 1)));
    check(cudaMemcpyAsync(m_hostChoice.data(), selected, std::size_t(selectedBytes + rows * 4),
                          cudaMemcpyDeviceToHost, m_stream),
          "block choice download");
    check(cudaStreamSynchronize(m_stream), "block choice download");
    chosen->assign(std::size_t(m_tokens), std::vector<std::vector<std::int32_t>>(std::size_t(G)));
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::int32_t* first = m_hostChoice.data() + r * topK;
        const std::int32_t count = m_hostChoice[std::size_t(rows * topK + r)];
        (*chosen)[std::size_t(r / G)][std::size_t(r % G)].assign(first, first + count);
    }
}

// The router's product, the routing, then each (token, chosen expert) pair's gate and up
// products, the activation and the down product over only the chosen experts' rows, and their
// weighted sum added to y.
void CudaBackend::mixtureOfExperts(const ExpertLayer& layer, const ExpertRouting& routing,
                                   GateActivation activation, const float* x, std::int64_t rows,
                                   float* y, int* experts, float* weights) {
    const std::int64_t E = routing.experts, k = routing.used, F = layer.gate.out,
                       D = layer.down.out, pairs = rows * k;
    // Layout of the MoE scratch: logits, then ids, weights, gate/up rows and down rows.
    const std::int64_t logitsBytes = rows * E * 4, idsBytes = pairs * 4, weightsBytes = pairs * 4,
                       ffnBytes = pairs * F * 4, downBytes = pairs * D * 4;
    std::byte* space = within<std::byte>(
        m_moe, logitsBytes + idsBytes + weightsBytes + 2 * ffnBytes + downBytes, "expert scratch");
    const std::int64_t groupedBytes =
        std::max({kc::decodeScratchBytes(layer.gate.type, rows, layer.gate.in),
                  kc::decodeScratchBytes(layer.up.type, rows, layer.up.in),
                  kc::decodeScratchBytes(layer.down.type, pairs, layer.down.in)});
    void* grouped = within<std::byte>(m_groupedScratch, groupedBytes, "expert product scratch");
    if (space == nullptr || grouped == nullptr) return;
    auto* logits = reinterpret_cast<float*>(space);
    auto* ids = reinterpret_cast<std::int32_t*>(space + logitsBytes);
    auto* routed = reinterpret_cast<float*>(space + logitsBytes + idsBytes);
    auto* gate = reinterpret_cast<float*>(space + logitsBytes + idsBytes + weightsBytes);
    float* up = gate + pairs * F;
    float* down = up + pairs * F;
    linear({{&layer.router, logits}}, x, rows);
    check(kc::routeSigmoid(logits, rows, int(E), E, layer.routerBias, int(k),
                           routing.normaliseWeights, routing.scale, ids, routed, m_stream),
          "expert routing");
    for (const auto& [stack, target] : {std::pair{&layer.gate, gate}, std::pair{&layer.up, up}}) {
        check(kc::matmulDecodeGrouped(stack->type, stack->data, stack->experts, stack->out,
                                      stack->in, x, stack->in, rows, ids, int(k), target,
                                      stack->out, grouped, m_stream),
              "expert product");
    }
    gatedActivation(activation, gate, up, pairs * F);
    // Pair p's activation row goes to its own expert: one row per pair, ids in pair order.
    check(kc::matmulDecodeGrouped(layer.down.type, layer.down.data, layer.down.experts, D, F, gate,
                                  F, pairs, ids, 1, down, D, grouped, m_stream),
          "expert product");
    check(kc::addWeightedExperts(y, D, down, D, routed, rows, int(k), D, m_stream), "expert sum");
    if (experts == nullptr || weights == nullptr) return;
    static_assert(sizeof(int) == sizeof(std::int32_t));
    check(cudaMemcpyAsync(experts, ids, std::size_t(idsBytes), cudaMemcpyDeviceToHost, m_stream),
          "routing download");
    check(cudaMemcpyAsync(weights, routed, std::size_t(weightsBytes), cudaMemcpyDeviceToHost,
                          m_stream),
          "routing download");
    check(cudaStreamSynchronize(m_stream), "routing download");
}

std::int64_t CudaBackend::logitRows(const float* x, const float* norm, float eps,
                                    const Linear& output) {
    const std::int64_t D = m_config.hiddenSize;
    float* selected = m_selected.as<float>();
    std::int64_t count = 0;
    for (std::int64_t t = 0; t < m_tokens; ++t) {
        if (!m_batch[std::size_t(t)].wantLogits) continue;
        rmsNorm(x + t * D, norm, selected + count * D, 1, D, eps);
        ++count;
    }
    if (count > 0) linear({{&output, m_logits.as<float>()}}, selected, count);
    return count;
}

Status CudaBackend::endStep() {
    // The step's one synchronisation: what was copied back has landed and any failed launch
    // has reported.
    check(cudaStreamSynchronize(m_stream), "the step");
    m_batch = {};
    // Also what failed between passes (a copy on write) is reported here, once.
    return std::exchange(m_error, Status());
}

Status CudaBackend::finish(const float* x, const float* norm, float eps, const Linear& output,
                           std::vector<float>& logits) {
    const std::int64_t V = output.out, count = logitRows(x, norm, eps, output);
    const std::size_t offset = logits.size();
    if (count > 0) {
        logits.resize(offset + std::size_t(count * V));
        check(cudaMemcpyAsync(logits.data() + offset, m_logits.get(),
                              std::size_t(count * V) * sizeof(float), cudaMemcpyDeviceToHost,
                              m_stream),
              "logits download");
    }
    Status result = endStep();
    if (!result.isOk()) logits.resize(offset);
    return result;
}

// The logits stay on the device: each row's penalties (all rows' token ids, then their
// counts, in one upload), then the k best of every row for the largest k asked (a row's own
// k best are the first of them), and only those come back.
Status CudaBackend::finishCandidates(const float* x, const float* norm, float eps,
                                     const Linear& output,
                                     std::span<const CandidateRequest> requests,
                                     Candidates& candidates) {
    const std::int64_t V = output.out, count = logitRows(x, norm, eps, output);
    // A malformed request is the caller's error to report; the step still ends cleanly.
    if (count != std::int64_t(requests.size())) {
        static_cast<void>(endStep());
        return Status::invalidArgument(name() + ": " + std::to_string(requests.size()) +
                                       " sampling requests for " + std::to_string(count) +
                                       " tokens that want logits");
    }
    if (count == 0) return endStep();
    int keep = 1;
    std::int64_t penalised = 0;
    for (const CandidateRequest& r : requests) {
        if (r.keep < 1 || r.keep > kc::kMaxCandidates || r.keep > V) {
            static_cast<void>(endStep());
            return Status::invalidArgument(name() + ": " + std::to_string(r.keep) +
                                           " candidates asked; 1 to " +
                                           std::to_string(kc::kMaxCandidates) + " are kept");
        }
        keep = std::max(keep, r.keep);
        penalised += std::int64_t(r.penalties.size());
    }
    float* logits = m_logits.as<float>();
    if (penalised > 0) {
        m_penaltyHost.clear();
        for (const CandidateRequest& r : requests)
            for (const auto& [id, n] : r.penalties)
                m_penaltyHost.push_back(id);
        for (const CandidateRequest& r : requests)
            for (const auto& [id, n] : r.penalties)
                m_penaltyHost.push_back(n);
        auto* device = within<std::int32_t>(m_penalties, penalised * 8, "penalty upload");
        if (device != nullptr) {
            // From pageable memory: the call returns once the bytes are staged, so the vector
            // may change afterwards.
            check(cudaMemcpyAsync(device, m_penaltyHost.data(), std::size_t(penalised * 8),
                                  cudaMemcpyHostToDevice, m_stream),
                  "penalty upload");
            std::int64_t at = 0;
            for (std::size_t r = 0; r < requests.size(); ++r) {
                const CandidateRequest& q = requests[r];
                const int n = int(q.penalties.size());
                if (n == 0) continue;
                check(kc::applyPenalties(logits + std::int64_t(r) * V, device + at,
                                         device + penalised + at, n, q.repetition, q.presence,
                                         q.frequency, m_stream),
                      "penalties");
                at += n;
            }
        }
    }
    const std::int64_t kept = count * keep;
    auto* best = within<std::byte>(m_candidates, kept * 8, "candidates");
    void* scratch = within<std::byte>(
        m_candidateScratch, kc::topCandidatesScratchBytes(int(count), V, keep), "candidates");
    if (best != nullptr && scratch != nullptr) {
        auto* ids = reinterpret_cast<std::int32_t*>(best);
        auto* values = reinterpret_cast<float*>(best + kept * 4);
        check(kc::topCandidates(logits, int(count), V, V, keep, ids, values, scratch, m_stream),
              "top candidates");
        m_candidateHost.resize(std::size_t(kept * 2));
        check(cudaMemcpyAsync(m_candidateHost.data(), best, std::size_t(kept * 8),
                              cudaMemcpyDeviceToHost, m_stream),
              "candidates download");
    }
    Status result = endStep();
    if (!result.isOk()) return result;
    for (std::size_t r = 0; r < requests.size(); ++r) {
        const std::int32_t* ids = m_candidateHost.data() + std::int64_t(r) * keep;
        const std::int32_t* bits = m_candidateHost.data() + kept + std::int64_t(r) * keep;
        for (int i = 0; i < requests[r].keep; ++i) {
            float value = 0.0f;
            std::memcpy(&value, bits + i, sizeof(float));
            candidates.ids.push_back(ids[i]);
            candidates.logits.push_back(value);
        }
    }
    return {};
}

}  // namespace

Result<std::unique_ptr<DecoderBackend>> makeCudaBackend(const ModelConfig& c,
                                                        const ModelBackend& where) {
    const std::string device = "cuda:" + std::to_string(where.device);
    // What the kernels take (attention_decode.cuh, matmul_*.cuh, elementwise.cuh).
    if (c.headDim % 32 != 0 || c.headDim > 256) {
        return Status::unsupported(device + ": head size " + std::to_string(c.headDim) +
                                   " is not a multiple of 32 up to 256, which the CUDA attention "
                                   "needs; use --device cpu");
    }
    if (c.indexerDim > 0 && (c.indexerDim % 32 != 0 || c.indexerDim > 256 || c.kvHeads > 16)) {
        return Status::unsupported(device + ": sparse attention with index keys of " +
                                   std::to_string(c.indexerDim) + " values and " +
                                   std::to_string(c.kvHeads) +
                                   " KV groups; the CUDA indexer takes multiples of 32 up to 256 "
                                   "and 16 groups at most; use --device cpu");
    }
    if (c.heads / c.kvHeads > 16) {
        return Status::unsupported(device + ": " + std::to_string(c.heads / c.kvHeads) +
                                   " query heads per KV head; the CUDA attention takes 16 at most; "
                                   "use --device cpu");
    }
    auto backend = std::make_unique<CudaBackend>(c, where);
    IRIS_RETURN_IF_ERROR(backend->init());
    return std::unique_ptr<DecoderBackend>(std::move(backend));
}

}  // namespace iris::inference

#endif  // IRIS_HAVE_CUDA
