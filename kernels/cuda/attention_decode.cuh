#pragma once
// CUDA decode attention over the paged KV cache: one query token per sequence, any number of
// sequences (a decode step of the serving engine), grouped-query heads, on device pointers.
//
//   out[s, h] = sum_{t < lengths[s]} softmax_t(scale * q[s, h] . K_s[t, g]) V_s[t, g],
//   g = h / (heads / kvHeads)
//
// K and V are laid out as kernels/attention.h's PagedKv says (the pointers in device memory),
// sequence s's block table at blockTables + s * tableStride. Long contexts are split into chunks
// of kDecodeChunk tokens that run in parallel, each leaving its maximum score, its sum of
// exponentials and its unnormalised output, and a second kernel combines the chunks
// (FlashDecoding): one sequence at 128k tokens still fills the GPU.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/attention.h"

namespace iris::kernels::cuda {

inline constexpr int kDecodeChunk = 256;

// Device scratch for attendDecode: the chunks' partial results for `seqs` sequences of at most
// `maxLength` tokens.
std::int64_t attendDecodeScratchBytes(int seqs, int heads, int headDim, std::int64_t maxLength);

// As above. q, out: (seqs, heads, headDim) f32; lengths: seqs int32 (each <= maxLength; a
// sequence of length 0 gets zeros). kv.type F16 or F32, kv.headDim <= 256 and a multiple of 32,
// heads a multiple of kv.kvHeads with at most 16 query heads per KV head. Returns
// cudaErrorInvalidValue for anything else, else the launches' error. Asynchronous.
cudaError_t attendDecode(const float* q, int seqs, int heads, const PagedKv& kv,
                         std::ptrdiff_t tableStride, const std::int32_t* lengths,
                         std::int64_t maxLength, float scale, float* out, void* scratch,
                         cudaStream_t stream);

// Causal attention of a prefill chunk of one sequence, correctness first: query token i (q + i *
// heads * headDim) attends to positions [0, lengths[i]) through the one block table kv.blockTable,
// each token walked like a decoding sequence of its own (every token reads its K/V range again;
// a tiled FlashAttention kernel that shares K/V between a chunk's tokens is still to come).
// Scratch: attendDecodeScratchBytes(tokens, heads, headDim, maxLength), which grows with tokens
// times context (a 2048-token chunk at 128k tokens, 28 heads of 128: about 15 GB), so this is
// for short contexts until the tiled kernel exists.
cudaError_t attendPrefill(const float* q, int tokens, int heads, const PagedKv& kv,
                          const std::int32_t* lengths, std::int64_t maxLength, float scale,
                          float* out, void* scratch, cudaStream_t stream);

// MiniMax sparse attention's decode step: as attendDecode, but (sequence s, KV head g) attends
// only to the counts[s * kvHeads + g] selection blocks listed, ascending, at
// blocks + (s * kvHeads + g) * maxBlocks (selectTopBlocks' output), block b being positions
// [b * selectionBlock, (b + 1) * selectionBlock) cut at lengths[s]. With every block listed it
// is attendDecode.
std::int64_t attendSelectedScratchBytes(int seqs, int heads, int headDim, int maxBlocks,
                                        int selectionBlock);
cudaError_t attendSelectedBlocks(const float* q, int seqs, int heads, const PagedKv& kv,
                                 std::ptrdiff_t tableStride, const std::int32_t* lengths,
                                 const std::int32_t* blocks, const std::int32_t* counts,
                                 int maxBlocks, int selectionBlock, float scale, float* out,
                                 void* scratch, cudaStream_t stream);

}  // namespace iris::kernels::cuda
