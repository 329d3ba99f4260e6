#pragma once
// Memory of the MoE layers (ARCHITECTURE.md §4.4, schedules/memory_model.hpp): expert weights,
// gradients and optimizer state sharded over ep x etp (optimizer over the expert-data-parallel
// group with the distributed optimizer), the routed tokens' activations and the dispatch buffers.
//
// Per MoE layer and in-flight microbatch on a rank with T = b·s / (cp·tp) tokens (sequence
// parallel; b·s / cp without), k experts per token, e = 2 bytes, f_e the expert FFN, S·f_s the
// shared experts, E experts, instead of the dense MLP's (3 | 2)·e·b·s·f / t:
//   routed experts   (3 gated | 2)·e·T·k·f_e   (gate/up outputs and down input of T·k copies,
//                    each ETP rank holding etp x the copies at f_e / etp)
//   permuted tokens  2·e·T·k·h                 (the experts' input and output before unpermute)
// With low-precision linears the experts' GEMM inputs are saved quantized, as a dense layer's (q
// bytes per element, schedules/precision.hpp): the down input (q instead of e per T·k·f_e) and
// the permuted input (q instead of e per T·k·h).
//   router probs     4·T·E                     (fp32)
//   shared experts   (3 | 2)·e·b·s·S·f_s / t
// (Megatron-Core's MoE memory terms; with full recompute only the layer input stays, as for a
// dense layer.) Dispatch buffers, once per rank: the all-to-all's send and receive buffers
// 2·e·T·k·h (x etp after the ETP all-gather).
#include <cstdint>

#include "schedules/memory_model.hpp"
#include "schedules/model_catalog.hpp"

namespace meshsim {

struct MoeMemory {
  std::int64_t moe_layer_params = 0;   // an MoE layer's non-expert parameters on one rank
  std::int64_t moe_linear_params = 0;  // of which its attention and shared-expert linears
  std::int64_t expert_params = 0;      // its local experts' parameters on one rank
  double activation_delta = 0;         // an MoE layer's stored activations less a dense layer's
  double dispatch_buffers = 0;
  int expert_data_parallel = 1;  // edp = tp·cp·dp / (etp·ep)
};
MoeMemory moe_memory(const TransformerModel& model, const MemoryPlan& plan);

}  // namespace meshsim
