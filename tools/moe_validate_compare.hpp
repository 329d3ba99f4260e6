#pragma once
// `meshsim validate moe --compare`: the simulator's prediction of the MoE layer next to the
// measured run. The prediction is the MoE layer of a one-layer MoE training step built by
// build_training_step (schedules/step_moe.cpp: the same ops the step costs for an MoE layer) with
// the layer's sizes: dp = ep · etp ranks of T / (ep · etp) tokens each (one microbatch, tp = cp =
// pp = 1), ep and etp as given, and the run's realised routing: the router's choices over every
// rank, before capacity drops, as a table of tokens per expert. Only its MoE ops are
// compared (attention, embedding, head and optimizer are not part of the validated layer); on
// each rank its MoE ops' busy time per phase, and the layer time is the rank's forward window plus
// its backward window, the largest over ranks, against the measured phases.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/hardware_profile.hpp"
#include "validate/cpu/moe_runner.hpp"

namespace meshsim {

struct MoePhaseComparison {
  std::string phase;
  double predicted_s = 0;  // the largest over ranks of the phase's ops' durations
  double measured_s = 0;   // the largest over ranks of the phase's duration
};

struct MoeLayerComparison {
  std::string hardware;
  double predicted_s = 0;
  double measured_s = 0;
  std::vector<MoePhaseComparison> phases;  // in the measured order
};

// The phase of the measured run an op of the simulated MoE layer belongs to ("router",
// "experts", "dispatch all-to-all", ...; empty for ops outside the MoE layer).
std::string moe_phase_of_op(const std::string& op_name, bool backward);

// The phases of the simulated MoE layer on rank 0, in launch order (an op's phase once per run
// of consecutive ops): what the runner's phases must follow (tested).
std::vector<std::string> simulated_moe_phases(const MoeLayerConfig& config, int gpus_per_node);

MoeLayerComparison compare_moe_layer(const MoeLayerConfig& config, const HardwareProfile& hw,
                                     const std::vector<MoeRankResult>& measured);

std::string moe_comparison_text(const MoeLayerComparison& c);
nlohmann::ordered_json moe_comparison_json(const MoeLayerComparison& c);

}  // namespace meshsim
