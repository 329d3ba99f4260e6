#pragma once
// Reference attention in float64: plain loops with an explicit two-pass softmax per query row,
// independent of the fast kernels' tiling and online softmax. Used by the tests to check the fast
// blocks, and by the validate mode as the unsharded full attention that ring attention must equal.
//
// Layouts (contiguous): q, out, dout, dq [batch, nq, heads_q, head_dim]; k, v, dk, dv
// [batch, nk, heads_kv, head_dim]; lse [batch, heads_q, nq] (natural log). Rows carry global
// positions q_pos[nq], k_pos[nk]; with Mask::causal key j is visible to query i when
// k_pos[j] <= q_pos[i]. Scores scale * q.k with scale = 1/sqrt(head_dim) unless given; query head
// h uses K/V head floor(h * heads_kv / heads_q). A query with no visible key: out 0, lse -inf.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/attention_math.hpp"

namespace meshsim::kernels::reference {

struct AttentionDims {
  std::int64_t batch = 1, heads_q = 1, heads_kv = 1, head_dim = 1;
  Mask mask = Mask::none;
  double scale = 0.0;  // 0: 1/sqrt(head_dim)
};

struct AttentionOutput {
  std::vector<double> out;  // [batch, nq, heads_q, head_dim]
  std::vector<double> lse;  // [batch, heads_q, nq]
};

struct AttentionGrads {
  std::vector<double> dq;  // like q
  std::vector<double> dk;  // like k
  std::vector<double> dv;  // like v
};

AttentionOutput attention_forward(const AttentionDims& dims, std::span<const double> q,
                                  std::span<const double> k, std::span<const double> v,
                                  std::span<const std::int64_t> q_pos,
                                  std::span<const std::int64_t> k_pos);

// The textbook backward through the softmax Jacobian, recomputing its own forward:
// dv_j = sum_i P_ij dout_i, dP_ij = dout_i . v_j, dS_ij = P_ij (dP_ij - sum_l P_il dP_il),
// dq_i = scale sum_j dS_ij k_j, dk_j = scale sum_i dS_ij q_i.
AttentionGrads attention_backward(const AttentionDims& dims, std::span<const double> q,
                                  std::span<const double> k, std::span<const double> v,
                                  std::span<const double> dout, std::span<const std::int64_t> q_pos,
                                  std::span<const std::int64_t> k_pos);

// A block's backward in FlashAttention's recomputation form, given the final out and lse of the
// query rows: D_i = dout_i . out_i, P_ij = exp(s_ij - lse_i), dS_ij = P_ij (dout_i . v_j - D_i),
// and dq, dk, dv as above. Over blocks that partition the keys, these sum to attention_backward.
AttentionGrads attention_block_backward(const AttentionDims& dims, std::span<const double> q,
                                        std::span<const double> k, std::span<const double> v,
                                        std::span<const double> out, std::span<const double> dout,
                                        std::span<const double> lse,
                                        std::span<const std::int64_t> q_pos,
                                        std::span<const std::int64_t> k_pos);

// Full (unsharded) attention over one sequence of `seq` tokens at positions 0..seq-1: the forward
// and the textbook backward. What the validate mode compares ring attention with.
struct FullAttention {
  std::vector<double> out, lse, dq, dk, dv;
};
FullAttention full_attention(const AttentionDims& dims, std::int64_t seq, std::span<const double> q,
                             std::span<const double> k, std::span<const double> v,
                             std::span<const double> dout);

// Merge of two partial attentions of the same rows over disjoint keys, by its definition:
// lse = log(e^lse_a + e^lse_b), out = e^(lse_a - lse) out_a + e^(lse_b - lse) out_b (0 and -inf
// when both are empty). out_* are [rows, width], lse_* [rows]; results overwrite out_a, lse_a.
void lse_merge(std::int64_t rows, std::int64_t width, std::span<double> out_a,
               std::span<double> lse_a, std::span<const double> out_b,
               std::span<const double> lse_b);

}  // namespace meshsim::kernels::reference
