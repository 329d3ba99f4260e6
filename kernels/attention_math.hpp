#pragma once
// The per-element math of attention, shared by the CPU kernels and (later) the CUDA kernels:
// the mask decision, the online-softmax update of one query row, the probability recomputed from
// the log-sum-exp in the backward, and the log-sum-exp merge of two partial results. T is float or
// double. Log-sum-exps are natural logs; a row that saw no key has lse = -inf and output 0.
#include <cmath>
#include <cstdint>

#include "kernels/host_device.hpp"

namespace meshsim::kernels {

// Causal masks compare *global* sequence positions: key j is visible to query i when j <= i.
enum class Mask : std::uint8_t { none, causal };

template <class T>
MESHSIM_HD constexpr T negative_infinity() {
  return static_cast<T>(-INFINITY);
}

MESHSIM_HD inline bool key_visible(Mask mask, std::int64_t query_position,
                                   std::int64_t key_position) {
  return mask == Mask::none || key_position <= query_position;
}

// Query head h reads K/V head floor(h * H_kv / H_q) (grouped-query attention; H_kv = H_q is plain
// multi-head attention, H_kv = 1 multi-query attention).
MESHSIM_HD inline std::int64_t kv_head_of(std::int64_t query_head, std::int64_t heads_q,
                                          std::int64_t heads_kv) {
  return query_head * heads_kv / heads_q;
}

// The running state of one query row's softmax over the keys seen so far:
// sum = sum_j exp(s_j - max). Nothing seen: max = -inf, sum = 0.
template <class T>
struct SoftmaxRow {
  T max = negative_infinity<T>();
  T sum = 0;
};

// Folds a new tile whose largest (masked, scaled) score is tile_max into the row: raises the
// running max and returns the factor exp(old_max - new_max) by which the caller must scale the
// row's sum and output accumulator (1 while nothing has been seen).
template <class T>
MESHSIM_HD inline T softmax_rescale(SoftmaxRow<T>& row, T tile_max) {
  const T new_max = tile_max > row.max ? tile_max : row.max;
  if (new_max == negative_infinity<T>()) return T(1);
  const T factor = row.max == negative_infinity<T>() ? T(0) : std::exp(row.max - new_max);
  row.max = new_max;
  row.sum *= factor;
  return factor;
}

// The unnormalized weight exp(s - max) of a score after softmax_rescale (0 for a masked score).
template <class T>
MESHSIM_HD inline T softmax_weight(T score, T row_max) {
  return score == negative_infinity<T>() ? T(0) : std::exp(score - row_max);
}

// log(sum_j exp(s_j)) of the row, -inf when no key was visible.
template <class T>
MESHSIM_HD inline T softmax_lse(const SoftmaxRow<T>& row) {
  return row.sum > T(0) ? row.max + std::log(row.sum) : negative_infinity<T>();
}

// The backward's recomputed probability P = exp(s - lse) (0 for a masked score or an empty row).
template <class T>
MESHSIM_HD inline T attention_probability(T score, T lse) {
  if (score == negative_infinity<T>() || lse == negative_infinity<T>()) return T(0);
  return std::exp(score - lse);
}

// Merging (out_a, lse_a) and (out_b, lse_b), two partial attentions of the same query row over
// disjoint key sets: lse = log(e^lse_a + e^lse_b), out = weight_a * out_a + weight_b * out_b with
// weight_x = e^(lse_x - lse). Computed stably as lse = max + log1p(e^(min - max)).
template <class T>
struct LseMerge {
  T lse;
  T weight_a;
  T weight_b;
};

template <class T>
MESHSIM_HD inline LseMerge<T> lse_merge_weights(T lse_a, T lse_b) {
  const T hi = lse_a > lse_b ? lse_a : lse_b;
  const T lo = lse_a > lse_b ? lse_b : lse_a;
  if (hi == negative_infinity<T>()) return LseMerge<T>{hi, T(0), T(0)};  // both empty
  const T lse = hi + std::log1p(std::exp(lo - hi));
  return LseMerge<T>{lse, std::exp(lse_a - lse), std::exp(lse_b - lse)};
}

}  // namespace meshsim::kernels
