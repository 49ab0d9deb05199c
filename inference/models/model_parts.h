#pragma once
// The parts a language model's forward pass is written from: batch check, embedding lookup,
// KV write, dense paged attention and output logits here; RopeTables (rope_tables.h), GatedFfn
// (gated_ffn.h), MixtureOfExperts (mixture_of_experts.h) and the products (LinearRunner,
// linear.h) beside them. An architecture file
// (decoder.cpp for the Qwen2 family, minimax_m3_model.cpp) composes them and keeps only what is
// particular to it.
//
// These parts are where a second backend (CUDA) plugs in, once for every model: their
// interfaces speak of batches, layers, caches and activation buffers, not of CPU kernels. They
// run on the CPU today and take its ThreadPool; activations are host f32 arrays, row-major, one
// row per batch token.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/status.h"
#include "inference/gguf/gguf_file.h"
#include "inference/kv_cache.h"
#include "inference/models/linear.h"
#include "inference/models/model.h"
#include "inference/thread_pool.h"
#include "kernels/attention.h"

namespace iris::inference {

// Growable f32 scratch that keeps its capacity between forward passes; returns its data.
float* growScratch(std::vector<float>& buffer, std::int64_t size);

// Calls fn(begin, end) on pieces of [0, items), items of `width` values each: on the pool's
// threads when there are enough values to pay for a parallelFor (a prefill chunk's rows), else
// on this thread in one call (a decode step's few rows). For passes whose items are computed
// each on its own, so that the bits are the same either way.
void parallelItems(ThreadPool& pool, std::int64_t items, std::int64_t width,
                   const std::function<void(std::int64_t begin, std::int64_t end)>& fn);

// x[i] += y[i] for i < n: a residual connection; the second form through parallelItems.
void addResidual(float* x, const float* y, std::int64_t n);
void addResidual(float* x, const float* y, std::int64_t n, ThreadPool& pool);

// RMSNorm of `rows` rows of `width` values (kernels::rmsNorm, rows packed), through
// parallelItems.
void rmsNormRows(const float* x, const float* w, float* y, std::int64_t rows, std::int64_t width,
                 float eps, ThreadPool& pool);

// InvalidArgument when `cache` was not made with config's geometry (Model::kvCacheOptions, with
// room for MSA indexer keys when the model has them), a token id is outside the vocabulary, or
// a token's KV slot was not reserved.
Status checkBatch(std::span<const TokenInput> batch, const KvCache& cache,
                  const ModelConfig& config);

// x (tokens x hidden): each token's row of `table` ({hidden, vocab}, any computable type),
// dequantised; a token's injected embedding (an image token) replaces its row.
void embedTokens(std::span<const TokenInput> batch, const GgufTensor& table, std::int64_t hidden,
                 float* x);

// Writes each token's K and V (tokens x kvHeads * headDim, f32) into its slot of `layer`,
// rounded to f16 in an f16 cache, and its MSA indexer key (tokens x indexerDim, kept f32) when
// indexKeys is not null; the second form splits the tokens between the threads (parallelItems).
void writeKv(int layer, std::span<const TokenInput> batch, const float* k, const float* v,
             const float* indexKeys, KvCache& cache);
void writeKv(int layer, std::span<const TokenInput> batch, const float* k, const float* v,
             const float* indexKeys, KvCache& cache, ThreadPool& pool);

// The paged K/V of `layer` as the CPU attention kernels read them, through `sequence`'s block
// table (attendDense's view, and MiniMax-M3's sparse kernels').
kernels::PagedKv pagedKv(const KvCache& cache, int layer, SequenceId sequence);

// Causal dense attention: each token's `heads` query heads (q: tokens x heads x headDim) attend
// to its sequence's slots [0, slot] of `layer` (written for the whole batch first), softmax
// scale 1/sqrt(headDim); out like q. One task per tile of kernels::attendRows: a KV group's query
// heads for up to attendRowsTile() / group consecutive tokens of one sequence, which read the
// group's K and V rows once; the threads take the tiles longest first. A token's result does
// not depend on its tile or its thread (kernels/attention.h).
void attendDense(int layer, std::span<const TokenInput> batch, const float* q, int heads,
                 const KvCache& cache, ThreadPool& pool, float* out);

// Appends vocab logits for every token with wantLogits, in batch order, to `logits`: x's row
// (tokens x hidden) through the final RMSNorm (`norm`, `eps`) and the output projection.
// `rows` is scratch kept between calls.
void appendLogits(std::span<const TokenInput> batch, const float* x, const float* norm, float eps,
                  const Linear& output, LinearRunner& runner, ThreadPool& pool,
                  std::vector<float>& rows, std::vector<float>& logits);

// The vocabulary size from token_embd.weight ({hiddenSize, vocabulary}): NotFound or Corrupt
// naming the file and tensor.
Result<std::int64_t> readVocabularySize(const GgufFile& file, std::int64_t hiddenSize);

}  // namespace iris::inference
