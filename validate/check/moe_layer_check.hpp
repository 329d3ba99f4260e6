#pragma once
// The numerics of `meshsim validate moe` (ARCHITECTURE.md §5): every rank's results packed and
// assembled on rank 0 into the unsharded tensors (validate/tensors/moe_layer.hpp names them),
// then checked against kernels/reference's float64 MoE layer computed token by token on one
// rank from the same inputs (a separate implementation: it shares no code with the runner).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "validate/check/numerics.hpp"
#include "validate/cpu/moe_runner.hpp"
#include "validate/tensors/global_tensors.hpp"
#include "validate/tensors/moe_layer.hpp"

namespace meshsim {

// A rank's result as bytes for RunWorld::gather_bytes, and back (names of the phases excepted:
// every rank runs the same phases, named as rank 0's).
std::vector<std::byte> pack_moe_result(const MoeRankResult& r);
MoeRankResult unpack_moe_result(const MoeLayerConfig& c, const std::vector<std::byte>& bytes,
                                const std::vector<MoePhaseTime>& names);

// The unsharded inputs (x, w_router, router_bias, w_up, w_down, dy), the run's results (y, dx,
// dw_router summed over ranks, dw_up, dw_down) and tokens_per_expert.
std::vector<GlobalTensorData> assemble_moe_tensors(const MoeLayerConfig& c, std::uint64_t seed,
                                                   const std::vector<MoeRankResult>& per_rank);

// y (and dx, dw_router, dw_up, dw_down with the backward) against the float64 reference.
NumericsReport check_moe_numerics(const MoeLayerConfig& c,
                                  const std::vector<GlobalTensorData>& tensors);

}  // namespace meshsim
