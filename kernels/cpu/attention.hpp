#pragma once
// Attention blocks on the CPU: the forward and backward of one (query rows) x (key rows) block of
// scaled dot-product attention with a mask, and the log-sum-exp merge of partial results. These
// are the Program's attention_fwd, attention_bwd and lse_merge kernels; ring attention runs one
// block per ring step and merges them.
//
// Conventions (the same as the validate mode's --dump files and FlashAttention):
//  - q, out, dout, dq: [batch, tokens, heads_q, head_dim]; k, v, dk, dv: [batch, tokens, heads_kv,
//    head_dim]; lse: [batch, heads_q, tokens], natural log.
//  - scores s_ij = scale * q_i . k_j with scale = 1/sqrt(head_dim) unless given; query head h uses
//    K/V head floor(h * heads_kv / heads_q).
//  - a block names its query rows and key rows as RowSpans: rows of the q (k/v) buffer and the
//    global sequence positions they hold. The causal mask compares positions: key j is visible to
//    query i when position(j) <= position(i).
//  - out_i = sum_j P_ij v_j with P_ij = exp(s_ij - lse_i), lse_i = log sum_j exp(s_ij) over the
//    visible keys of the block; a query that sees no key gets out = 0 and lse = -inf.
// Math in float32 (float64 when any of q, k, v is fp64); bf16/fp16 operands are converted on load
// and results rounded once on store. The block is computed in tiles with the online softmax
// (FlashAttention-2's order), and the tile products go through BLAS.
#include <vector>

#include "kernels/attention_math.hpp"
#include "kernels/cpu/convert.hpp"
#include "kernels/views.hpp"

namespace meshsim::kernels::cpu {

struct AttentionBlock {
  Mask mask = Mask::none;
  std::vector<RowSpan> q;  // query rows: rows of q, out, lse, dout, dq
  std::vector<RowSpan> k;  // key rows: rows of k, v, dk, dv
  double scale = 0.0;      // softmax scale; 0: 1/sqrt(head_dim)
};

// Writes out and lse for the block's query rows (other rows are not touched). out may be any
// storage type (the ring builders use fp32 accumulators); lse fp32 or fp64.
void attention_forward(const AttentionBlock& block, const HeadsView& q, const HeadsView& k,
                       const HeadsView& v, const HeadsView& out, const LseView& lse);

// The block's gradients in FlashAttention's recomputation form, given the *final* out and lse of
// the query rows (merged over all key blocks, so the block's share of the gradient is exact):
//   D_i = sum_d dout_i * out_i,  P_ij = exp(s_ij - lse_i),
//   dv_j += sum_i P_ij dout_i,   dP_ij = dout_i . v_j,   dS_ij = P_ij (dP_ij - D_i),
//   dq_i += scale sum_j dS_ij k_j,   dk_j += scale sum_i dS_ij q_i.
// Store::overwrite first zeroes all of dq, dk and dv (rows outside the block too), so the whole
// tensors are the block's gradient; Store::accumulate adds into the block's rows.
void attention_backward(const AttentionBlock& block, const HeadsView& q, const HeadsView& k,
                        const HeadsView& v, const HeadsView& out, const HeadsView& dout,
                        const LseView& lse, const HeadsView& dq, const HeadsView& dk,
                        const HeadsView& dv, Store mode = Store::overwrite);

// Merges a block's (block_out, block_lse) into the accumulators (out_acc, lse_acc) on the given
// rows (only their `row` and `count` matter; the zigzag's later steps merge the second half):
//   lse = log(e^lse_acc + e^lse_block),
//   out_acc = e^(lse_acc - lse) out_acc + e^(lse_block - lse) block_out,   lse_acc = lse.
// Math in float32 unless an operand is fp64.
void lse_merge(std::span<const RowSpan> rows, const HeadsView& block_out, const LseView& block_lse,
               const HeadsView& out_acc, const LseView& lse_acc);

// Zeroes every element of a view (a fill that honors the strides).
void zero(const HeadsView& t);

}  // namespace meshsim::kernels::cpu
