#pragma once
// The tensor layouts of the workloads the builders emit: which global tensor each named slot of
// each rank holds (see tensor_layout.hpp). They follow the builders' slot names and shapes:
//
// ring attention (ARCHITECTURE.md §4.1; global sequence order, dump layout of issue 5):
//   q, out, dout, dq [b, S, H, d]; kv, dkv [2, b, S, H_kv, d] (k then v); lse [b, H, S];
//   rank r holds the tokens rank_tokens(r) (zigzag: chunks r and 2N-1-r) on the S axis.
//   Inputs: q, kv, dout (backward) and, for a backward-only pass, out and lse.
// tensor-parallel linear (ARCHITECTURE.md §4.3): X [T, D_in], W [D_out, D_in] (fill scale
// 1/sqrt(D_in)),
//   b [D_out], Y and dY [T, D_out], dX [T, D_in], dW [D_out, D_in], db [D_out]. Column: rank r
//   holds rows r*D_out/t.. of W, b, dW, db and those columns of Y, dY; row: columns r*D_in/t.. of
//   X, W, dX, dW. With sequence parallelism (t > 1) the activations outside the pair (column: X,
//   dX; row: Y, dY) are split by token rows; otherwise every rank holds them whole.
// pipeline (schedules/pipeline.hpp): x, dout, y, dx [m, tokens, hidden] (microbatch i at index i
//   of axis 0), w, dw [stages x chunks, hidden, hidden] (global stage s at index s; w's fill scale
//   1/sqrt(hidden)). Rank r holds "w c<c>" and "dw c<c>" for each chunk c (its global stage);
//   the rank of global stage 0 holds "x mb<i> c<c>" (input) and "dx mb<i> c<c>"; the rank of the
//   last global stage holds "dy mb<i> c<c>" (dout, input: the loss is sum(dout * y)) and
//   "y mb<i> c<c>".
#include "schedules/pipeline.hpp"
#include "schedules/ring_attention.hpp"
#include "schedules/tp_linear.hpp"
#include "validate/tensors/tensor_layout.hpp"

namespace meshsim {

TensorLayout ring_attention_layout(const RingAttentionConfig& config);
TensorLayout tp_linear_layout(const TpLinearConfig& config);
TensorLayout pipeline_layout(const PipelineConfig& config);

}  // namespace meshsim
