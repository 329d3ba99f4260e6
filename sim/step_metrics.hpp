#pragma once
// What one simulated (or measured) training step means to a user (ARCHITECTURE.md §3): step time,
// tokens per second, MFU, and where each rank's time goes — compute, the communication of each
// mesh dimension that compute does not hide, and the rest (pipeline bubble and other waiting).
// Communication is keyed by the dimension its group spans (Group::dim) or, for point-to-point
// transfers, the one mesh dimension in which the two peers differ: the same rule for simulated
// and measured timelines.
#include <string>
#include <string_view>
#include <vector>

#include "sim/hardware_profile.hpp"
#include "sim/program.hpp"
#include "sim/run.hpp"
#include "sim/timeline.hpp"

namespace meshsim {

// The communication dimensions in the order a breakdown nets them (each net of the ones before).
inline constexpr std::string_view kCommDims[] = {"tp", "cp", "ep", "pp", "dp"};

// The dimension of a comm op: its group's (the dp-cp group counts as dp), or for a p2p group the
// mesh dimension its first transfer crosses; "" for compute ops and transfers to the rank itself.
std::string comm_dim(const Program& program, const Op& op);

struct TimeBreakdown {
  double compute = 0;
  std::vector<double> exposed;  // seconds, one per kCommDims entry
  double bubble = 0;            // everything else up to the makespan
  double exposed_of(std::string_view dim) const;
};

// Averaged over the ranks that run ops. A comm op counts from its rendezvous (comm_start) to its
// end: a posted exchange waiting for its peers is waiting, not communication. Dimensions outside
// kCommDims count with the first (tp).
TimeBreakdown time_breakdown(const Program& program, const Timeline& timeline, Nanos makespan);

// What the step does: tokens per step, model FLOPs per token (forward + backward, no recompute),
// GPUs. Computed from the plan by schedules/step_plan (step_work).
struct StepWork {
  double tokens = 0;
  double flops_per_token = 0;  // causal attention: the pairs the kernels compute
  int gpus = 0;
  double flops_per_token_full_attention = 0;  // every (query, key) pair, as papers count MFU
};

struct StepEvaluation {
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;  // model FLOPs per second / (GPUs x the dense bf16 peak), a fraction
  double mfu_full_attention = 0;  // the same with full-attention FLOPs (12·L·h·s per token)
};

StepEvaluation evaluate_step(const SimulationResult& result, const StepWork& work,
                             const HardwareProfile& hardware);

}  // namespace meshsim
