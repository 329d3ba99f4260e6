#pragma once
// The validation suite: a fixed set of configurations — ring attention (ring, zigzag, all-gather
// rotation), tensor-parallel linear layers (column with all-reduce, row with reduce-scatter),
// pipeline schedules (1F1B, interleaved) and a small whole training step — each run for real on
// the world's ranks (one warm-up, then the median makespan of the timed runs) and simulated with
// a hardware profile; the table of predicted vs measured and the mean absolute percentage error.
// Sizes are fixed (not tuned to any profile); every configuration uses all ranks of the world.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/hardware_profile.hpp"
#include "sim/program.hpp"
#include "validate/tensors/tensor_layout.hpp"

namespace meshsim {

struct SuiteConfig {
  std::string name;     // "ring attention, zigzag"
  std::string command;  // the equivalent single validation: "meshsim validate ring-attention ..."
  std::function<Program()> build;
  std::function<TensorLayout()> layout;  // empty: the Program has no tensor slots
};

// The configurations for a world of `ranks` (>= 2) ranks, `ranks_per_node` of them per node.
std::vector<SuiteConfig> suite_configs(int ranks, int ranks_per_node);

struct SuiteRow {
  std::string name, command;
  double predicted_s = 0;
  double measured_s = 0;                // median of the timed runs
  std::vector<double> measured_runs_s;  // every timed run
  double error() const { return (predicted_s - measured_s) / measured_s; }
};

struct SuiteResult {
  std::string hardware;
  int ranks = 0;
  int runs = 0;
  std::vector<SuiteRow> rows;
  double mape() const;         // mean |error|
  double worst_error() const;  // max |error|
};

std::string suite_text(const SuiteResult& result);
nlohmann::ordered_json suite_json(const SuiteResult& result);

}  // namespace meshsim
