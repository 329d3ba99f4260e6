#pragma once
// The MoE layer's own kernels (router top-k, token permutation, combine, SwiGLU), as Megatron-Core
// runs them around its grouped expert GEMMs: contiguous row-major arrays of T = float or double,
// sizes in elements. Megatron's default router: top-k of the logits, then a softmax over the k
// selected logits (the gating weights, summing to 1 per token); ties go to the lower expert index.
#include <cstdint>
#include <span>

namespace meshsim::kernels::cpu {

// For each of `tokens` rows of logits [tokens, experts] (plus bias[e] when bias is not empty):
// expert[t·k + s] the s-th largest, weight[t·k + s] = softmax over the k selected (s < k).
template <class T>
void router_topk(std::span<const T> logits, std::span<const T> bias, std::int64_t tokens,
                 int experts, int k, std::span<std::int32_t> expert, std::span<T> weight);

// The router's backward through the softmax over the selected logits: dlogits [tokens, experts]
// (overwritten; 0 where not selected), dlogit_s = w_s (dw_s - sum_r w_r dw_r).
template <class T>
void router_topk_backward(std::span<const std::int32_t> expert, std::span<const T> weight,
                          std::span<const T> dweight, std::int64_t tokens, int experts, int k,
                          std::span<T> dlogits);

// Megatron's token dropping with a capacity factor (drop policy "probs"): each expert keeps at
// most `capacity` of the copies routed to it, those with the largest router weight (ties: the
// lower copy index); the others become expert -1 (dropped: not dispatched, no part of y).
// Returns the number dropped.
template <class T>
std::int64_t drop_over_capacity(std::span<std::int32_t> expert, std::span<const T> weight,
                                int experts, std::int64_t capacity);

// The order of the token copies c = t·k + s grouped by expert (expert-major, c ascending within
// an expert: a stable counting sort; dropped copies, expert -1, left out), and the copies per
// expert (counts, size experts). Returns the copies kept: order[0, kept) is filled.
std::int64_t permutation_by_expert(std::span<const std::int32_t> expert, int experts,
                                   std::span<std::int64_t> order, std::span<std::int64_t> counts);

// dst row i = src row rows[i] (permute: row width `cols`).
template <class T>
void gather_rows(std::span<const T> src, std::int64_t cols, std::span<const std::int64_t> rows,
                 std::span<T> dst);

// dst row rows[i] = src row i (the inverse of gather_rows for a permutation).
template <class T>
void scatter_rows(std::span<const T> src, std::int64_t cols, std::span<const std::int64_t> rows,
                  std::span<T> dst);

// dst row rows[i] += weight[i] · src row i (weight empty: 1): the unpermute of the combine, with
// the router's weights; without weights, the backward of a permute (rows repeat: they add up).
template <class T>
void scatter_add_rows(std::span<const T> src, std::int64_t cols, std::span<const std::int64_t> rows,
                      std::span<const T> weight, std::span<T> dst);

// dweight[i] = <src row i, other row rows[i]> (the combine weights' gradient: the expert output of
// copy i against the output gradient of its token).
template <class T>
void row_dots(std::span<const T> src, std::int64_t cols, std::span<const std::int64_t> rows,
              std::span<const T> other, std::span<T> dweight);

// SwiGLU on h [n, 2f] (gate columns [0, f), up columns [f, 2f)): a [n, f] = silu(gate) · up.
template <class T>
void swiglu_forward(std::span<const T> h, std::int64_t n, std::int64_t f, std::span<T> a);

// Its backward: dh [n, 2f] (overwritten) from h and da [n, f]:
// dgate = da · up · silu'(gate), dup = da · silu(gate).
template <class T>
void swiglu_backward(std::span<const T> h, std::span<const T> da, std::int64_t n, std::int64_t f,
                     std::span<T> dh);

}  // namespace meshsim::kernels::cpu
