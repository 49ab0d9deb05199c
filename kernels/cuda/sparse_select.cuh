#pragma once
// MiniMax sparse attention's block selection on the GPU (the CPU contract is in
// kernels/sparse_attention.h): the indexer's max-pooled block scores for a decode step of many
// sequences, then each (sequence, KV group)'s top-k blocks with the local blocks forced, ready
// for attendSelectedBlocks (attention_decode.cuh).

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/sparse_attention.h"

namespace iris::kernels::cuda {

// scores[(s * groups + r) * maxBlocks + b] = max over positions t of block b, t < lengths[s],
// of q[s, r] . key_s[t] (unscaled), for b < selectionBlocks(lengths[s], selectionBlock); -inf
// for the blocks after that, up to maxBlocks (which must hold every sequence's blocks). q: (seqs, groups, keys.dim) f32; keys.blockTable:
// sequence s's table at + s * tableStride. keys.dim a multiple of 32, at most 256; groups <= 16.
cudaError_t indexerBlockScores(const float* q, int seqs, int groups, const PagedIndexKeys& keys,
                               std::ptrdiff_t tableStride, const std::int32_t* lengths,
                               int selectionBlock, int maxBlocks, float* scores,
                               cudaStream_t stream);

// Scratch selectTopBlocks needs.
std::int64_t selectTopBlocksScratchBytes(int rows, int maxBlocks, int topK);

// selectTopBlocks (kernels/sparse_attention.h) for every row r = s * groups + g of `scores`:
// up to topK (<= 256) blocks of the row's selectionBlocks(lengths[s], selectionBlock), the last
// localBlocks forced, ascending at selected + r * topK, their number at counts[r].
cudaError_t selectTopBlocks(const float* scores, int seqs, int groups, const std::int32_t* lengths,
                            int selectionBlock, int maxBlocks, int topK, int localBlocks,
                            std::int32_t* selected, std::int32_t* counts, void* scratch,
                            cudaStream_t stream);

}  // namespace iris::kernels::cuda
