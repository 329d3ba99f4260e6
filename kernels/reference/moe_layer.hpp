#pragma once
// A whole MoE layer on one rank in float64 plain loops, token by token (what `meshsim validate
// moe` checks the distributed layer against; it shares no code with kernels/cpu/moe):
//   logits = x W_r^T + b, the k largest (ties: lower expert index), w = softmax over those k;
//   expert e: h = W_up[e] x (2f: gate rows [0, f), up rows [f, 2f)), a = silu(gate)·up
//   (SwiGLU), o = W_down[e] a; y = sum over the k selected of w_s · o_s.
// Backward from dy: dx, dW_r, dW_up, dW_down (b is a fixed routing bias: no gradient).
#include <cstdint>
#include <span>
#include <vector>

namespace meshsim::kernels::reference {

struct MoeLayerDims {
  std::int64_t tokens = 0, hidden = 0, ffn = 0;
  int experts = 0, top_k = 0;
  // Token dropping: within each block of block_tokens consecutive tokens (a rank's), an expert
  // keeps the `capacity` copies with the largest weight (ties: lower token, then lower slot);
  // a dropped copy adds nothing to y (its weight still counts in the softmax). 0: no capacity.
  std::int64_t capacity = 0;
  std::int64_t block_tokens = 0;
};

struct MoeLayerTensors {
  std::vector<double> y, dx, dw_router, dw_up, dw_down;
  std::vector<std::int64_t> tokens_per_expert;  // token copies each expert kept
  std::int64_t dropped = 0;                     // token copies dropped over the capacity
};

// x [T, h], w_router [E, h], bias [E], w_up [E, 2f, h], w_down [E, h, f], dy [T, h] (empty: no
// backward, only y and tokens_per_expert).
MoeLayerTensors moe_layer(const MoeLayerDims& d, std::span<const double> x,
                          std::span<const double> w_router, std::span<const double> bias,
                          std::span<const double> w_up, std::span<const double> w_down,
                          std::span<const double> dy);

}  // namespace meshsim::kernels::reference
