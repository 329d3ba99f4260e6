#pragma once
// Roofline compute cost (ARCHITECTURE.md §3): launch overhead + max(FLOPs / (peak x efficiency),
// bytes / (memory bandwidth x efficiency)), efficiencies from the profile's tables.
#include <string>

#include "sim/hardware_profile.hpp"
#include "sim/kernel_call.hpp"
#include "sim/time.hpp"

namespace meshsim {

double compute_seconds(const HardwareProfile& hw, const KernelCall& call);
// The roofline of work given as counts (a Chakra trace's num_ops and tensor_size): launch overhead
// + max(flops / (peak[math] x efficiency), bytes / (memory bandwidth x memory efficiency)).
double roofline_seconds(const HardwareProfile& hw, double flops, double bytes, DType math,
                        double efficiency);
// The profile's "default" compute efficiency at `flops` (1 when it has no such table).
double default_compute_efficiency(const HardwareProfile& hw, double flops);

// The efficiency table a call looks up first: "<kind>" or, with a fused function, "<kind>.<fn>"
// ("gemm.gelu", "linear_bwd.relu"); the kind's own table and "default" are the fall-backs.
std::string efficiency_key(const KernelCall& call);
// The profile with compute_efficiency's attention_fwd/attention_bwd tables replaced by those of
// the attention kernel family `family` (one of profile.attention_kernels); InputError naming
// `flag` and the families the profile has otherwise.
HardwareProfile select_attention_kernel(HardwareProfile profile, std::string_view family,
                                        std::string_view flag);
// compute_seconds in nanoseconds; InputError naming the profile's figures when out of range.
Nanos compute_time(const HardwareProfile& hw, const KernelCall& call);

}  // namespace meshsim
