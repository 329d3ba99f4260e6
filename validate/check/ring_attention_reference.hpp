#pragma once
// The float64 reference of a ring-attention validation: full attention over the whole sequence on
// one rank (kernels/reference), from the run's q, k, v, dout as stored. The forward gives out and
// lse; the backward gives dq, dk, dv — the textbook backward when the run computed its own forward,
// and the recomputation form from the run's given out and lse for --pass bwd (where out and lse
// are seeded inputs). Keys are --dump names; values row-major in their global shapes.
#include <map>
#include <string>
#include <vector>

#include "schedules/ring_attention.hpp"
#include "validate/tensors/global_tensors.hpp"

namespace meshsim {

std::map<std::string, std::vector<double>> ring_attention_reference(
    const RingAttentionConfig& config, const std::vector<GlobalTensorData>& tensors);

}  // namespace meshsim
