#pragma once
// The MoE layer `meshsim validate moe` runs (one layer, forward and backward, tokens spread
// evenly over ep · etp ranks) and its deterministic tensors. Its global tensors, as --dump names
// them:
//   x [T, h], dy [T, h]                  inputs (rank r holds rows [r·T/R, (r+1)·T/R))
//   w_router [E, h], router_bias [E]     the router (replicated; the bias is the routing skew)
//   w_up [E, 2f, h], w_down [E, h, f]    the experts (SwiGLU: gate rows [0, f), up rows [f, 2f));
//                                        expert e on ep index e / (E / ep); ETP shards f
//   y [T, h], dx [T, h], dw_router [E, h], dw_up, dw_down   the results
//   tokens_per_expert [E], dropped [1]   the copies each expert kept, and those dropped
// Values come from the counter-based generator (validate/tensors/value_generator): element i of
// tensor "name" is the same on every rank count, so shards equal the unsharded tensors.
#include <cstdint>
#include <string_view>
#include <vector>

#include "schedules/moe_plan.hpp"
#include "sim/dtype.hpp"

namespace meshsim {

struct MoeLayerConfig {
  int ep = 1;
  int etp = 1;
  int experts = 8;
  int top_k = 2;
  std::int64_t tokens = 256;  // T: over all ranks
  std::int64_t hidden = 64;
  std::int64_t ffn = 128;  // f: each expert's FFN size
  Routing routing;
  // Megatron's --moe-expert-capacity-factor: each expert keeps at most
  // ceil(capacity_factor · T/R · k / E) copies of each rank's tokens (expert_capacity), the
  // rest are dropped; 0: no capacity.
  double capacity_factor = 0;
  DType dtype = DType::fp64;
  bool backward = true;

  int ranks() const { return ep * etp; }
  std::int64_t local_tokens() const { return tokens / ranks(); }
  int local_experts() const { return experts / ep; }
  std::int64_t local_ffn() const { return ffn / etp; }
};

// InputError naming the field (`ep`, `etp`, `experts`, `top_k`, `tokens`, `hidden`, `ffn_hidden`,
// `dtype`) when the layer cannot be split that way.
void check_moe_layer_config(const MoeLayerConfig& c);

// Copies of one rank's tokens an expert keeps: ceil(capacity_factor · T/R · k / E) (Megatron's
// get_capacity over a rank's T/R · k routed copies); 0 when there is no capacity.
std::int64_t expert_capacity(const MoeLayerConfig& c);

// The simulator's expected token copies per expert and per EP rank for this layer (every rank
// routing T/R tokens; schedules/moe_routing's expert_load, without the capacity).
ExpertLoad expected_expert_load(const MoeLayerConfig& c);

// The router's logit bias that makes the routing skew real: log of each expert's share of the
// token copies under `routing` (schedules/moe_routing: uniform 0 everywhere; zipf:S
// -S·log(e + 1); a table, log of its normalised entries, -30 for an empty expert).
std::vector<double> routing_bias(const MoeLayerConfig& c);

// Element `index` of the global tensor `name` (x, dy, w_router, w_up, w_down) as stored in the
// layer's dtype; scales: 1 for x and dy, 1/sqrt(h) for w_router and w_up, 1/sqrt(f) for w_down.
double moe_input_value(const MoeLayerConfig& c, std::uint64_t seed, std::string_view name,
                       std::int64_t index);

// A rank's shard of an input as global element indices, in the shard's row-major order.
struct MoeRankCoords {
  int rank = 0;
  int etp_index = 0;  // rank mod etp
  int ep_index = 0;   // rank / etp
};
MoeRankCoords moe_rank_coords(const MoeLayerConfig& c, int rank);
std::vector<std::int64_t> moe_shard_indices(const MoeLayerConfig& c, std::string_view name,
                                            int rank);

// The global tensor's shape.
std::vector<std::int64_t> moe_tensor_shape(const MoeLayerConfig& c, std::string_view name);

}  // namespace meshsim
