#pragma once
// One MoE layer on this rank with real data, as Megatron-Core's alltoall dispatcher runs it
// (the op sequence of schedules/step_moe.cpp, sized by the routing this data produces):
//   forward   router GEMM + top-k, permute, dispatch (counts exchanged, all-to-all-v over EP,
//             all-gather-v over ETP), the local experts' GEMMs around SwiGLU, combine
//             (reduce-scatter-v over ETP, all-to-all-v back), unpermute with the router weights;
//   backward  the same in reverse: unpermute bwd (and the weights' gradient), combine bwd
//             (dispatch of the output gradient), expert dgrad and wgrad, dispatch bwd, permute
//             bwd, router top-k bwd, router dgrad and wgrad.
// Math in the layer's dtype (fp32 or fp64) through kernels/cpu (GEMMs by OpenBLAS), each phase
// timed from `origin` (taken by every rank after one barrier).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "validate/run/moe_comm.hpp"
#include "validate/tensors/moe_layer.hpp"

namespace meshsim {

// Testing: break one step, so that the numerics must FAIL.
enum class MoeFault : std::uint8_t {
  none,
  combine_weights,  // unpermute adds the expert outputs without the router weights
};
std::optional<MoeFault> parse_moe_fault(std::string_view s);  // "none", "combine-weights"

struct MoePhaseTime {
  std::string name;  // the step builder's op name: "router", "dispatch all-to-all", ...
  std::int64_t start_ns = 0, end_ns = 0;
};

struct MoeRankResult {
  // y, dx: this rank's token rows [T/R, h]; dw_router: its tokens' part (the gradient is the
  // sum over ranks); dw_up, dw_down: its shard, in moe_shard_indices order.
  std::vector<double> y, dx, dw_router, dw_up, dw_down;
  std::vector<std::int64_t> tokens_per_expert;  // [E]: copies of this rank's tokens per expert
  // [E]: copies of this rank's tokens the router sent to each expert, before capacity drops.
  std::vector<std::int64_t> routed_per_expert;
  std::int64_t dropped = 0;  // copies of this rank's tokens over capacity
  std::vector<MoePhaseTime> phases;
};

MoeRankResult run_moe_layer(const MoeLayerConfig& config, std::uint64_t seed, int rank,
                            MoeComm& comm, MoeFault fault,
                            std::chrono::steady_clock::time_point origin);

}  // namespace meshsim
