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
#include "kernels/cuda/rms_norm.cuh"

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
    void writeKv(int layer, const float* k, const float* v) override;
    void attend(int layer, const float* q, int heads, float* out) override;
    void gatedActivation(GateActivation kind, float* gate, const float* up,
                         std::int64_t n) override {
        const kc::Activation a =
            kind == GateActivation::SwiGlu ? kc::Activation::SwiGlu : kc::Activation::SwiGluOai;
        check(kc::activate(a, gate, up, gate, n, m_stream), "activation");
    }
    void addResidual(float* x, const float* y, std::int64_t n) override {
        check(kc::addInPlace(x, y, n, m_stream), "residual add");
    }
    Status finish(const float* x, const float* norm, float eps, const Linear& output,
                  std::vector<float>& logits) override;

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

    // The KV pool for the bound cache: per layer K then V, KvCache's layout.
    KvCache* m_cache = nullptr;
    KvCacheOptions m_kv;
    DeviceBuffer m_pool;

    // Activations and the step's scratch.
    std::array<DeviceBuffer, std::size_t(Activations::Count)> m_buffers;
    std::int64_t m_capacityTokens = 0;
    DeviceBuffer m_decodeScratch, m_attentionScratch, m_logits, m_selected;
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
    const std::int64_t bytes = 2 * std::int64_t(m_kv.layers) * kvLayerBytes();
    if (m_pool.reserve(bytes, m_stream) != cudaSuccess) {
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
}

Status CudaBackend::reserveScratch(std::int64_t tokens, std::int64_t attentionBytes,
                                   std::int64_t logitRows) {
    const ModelConfig& c = m_config;
    const std::int64_t f = sizeof(float);
    const std::int64_t sizes[] = {tokens * c.hiddenSize,
                                  tokens * c.hiddenSize,  // X, Norm
                                  tokens * c.heads * c.headDim,
                                  tokens * c.kvHeads * c.headDim,  // Q, K
                                  tokens * c.kvHeads * c.headDim,
                                  tokens * c.heads * c.headDim,  // V, Attention
                                  tokens * c.ffnSize,
                                  tokens * c.ffnSize};  // Gate, Up
    static_assert(std::size(sizes) == std::size_t(Activations::Count));
    std::int64_t total = 0;
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
        total += sizes[i] * f;
        if (const cudaError_t e = m_buffers[i].reserve(sizes[i] * f, m_stream); e != cudaSuccess)
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

void CudaBackend::writeKv(int layer, const float* k, const float* v) {
    check(kc::storeKvRows(k, v, m_tokens, std::int64_t(m_kv.kvHeads) * m_kv.headDim,
                          stepArray<std::int64_t>(m_layout.kvRows), m_kv.type,
                          poolLayer(layer, false), poolLayer(layer, true), m_stream),
          "KV store");
}

void CudaBackend::attend(int layer, const float* q, int heads, float* out) {
    const float scale = 1.0f / std::sqrt(float(m_kv.headDim));
    const std::int32_t* tables = stepArray<std::int32_t>(m_layout.tables);
    const std::int32_t* lengths = stepArray<std::int32_t>(m_layout.lengths);
    kernels::PagedKv kv{poolLayer(layer, false),
                        poolLayer(layer, true),
                        tables,
                        m_kv.blockSize,
                        m_kv.kvHeads,
                        m_kv.headDim,
                        m_kv.type};
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

Status CudaBackend::finish(const float* x, const float* norm, float eps, const Linear& output,
                           std::vector<float>& logits) {
    const std::int64_t D = m_config.hiddenSize, V = output.out;
    float* selected = m_selected.as<float>();
    std::int64_t count = 0;
    for (std::int64_t t = 0; t < m_tokens; ++t) {
        if (!m_batch[std::size_t(t)].wantLogits) continue;
        rmsNorm(x + t * D, norm, selected + count * D, 1, D, eps);
        ++count;
    }
    const std::size_t offset = logits.size();
    if (count > 0) {
        linear({{&output, m_logits.as<float>()}}, selected, count);
        logits.resize(offset + std::size_t(count * V));
        check(cudaMemcpyAsync(logits.data() + offset, m_logits.get(),
                              std::size_t(count * V) * sizeof(float), cudaMemcpyDeviceToHost,
                              m_stream),
              "logits download");
    }
    // The step's one synchronisation: the logits are in `logits` (pageable memory, so the copy
    // above may have returned before it landed) and any failed launch has reported.
    check(cudaStreamSynchronize(m_stream), "the step");
    m_batch = {};
    // Also what failed between passes (a copy on write) is reported here, once.
    Status result = std::exchange(m_error, Status());
    if (!result.isOk()) logits.resize(offset);
    return result;
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
