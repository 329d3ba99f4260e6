#pragma once
// The validation suite: a fixed set of configurations — ring attention (ring, zigzag, all-gather
// rotation), tensor-parallel linear layers (column with all-reduce, row with reduce-scatter),
// pipeline schedules (1F1B, interleaved) and a small whole training step — each run for real on
// the world's ranks (one warm-up round, then timed rounds, each round running every configuration
// once in a rotating order: validate/run/robust_stats.hpp; the median makespan with its p10-p90
// spread) and simulated with a hardware profile; the table of predicted vs measured and the mean
// absolute percentage error. Sizes are fixed (not tuned to any profile); every configuration uses
// all ranks of the world.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/hardware_profile.hpp"
#include "sim/program.hpp"
#include "validate/calibrate/stability.hpp"
#include "validate/tensors/tensor_layout.hpp"

namespace meshsim {

// Development: the configurations a developer may look at while working on the model. Hold-out:
// the same workloads at other sizes and variants, reported beside them and never used to decide
// anything (the calibration sees neither set).
enum class SuiteSet : std::uint8_t { development, holdout };

struct SuiteConfig {
  std::string name;     // "ring attention, zigzag"
  std::string command;  // the equivalent single validation: "meshsim validate ring-attention ..."
  std::function<Program()> build;
  std::function<TensorLayout()> layout;  // empty: the Program has no tensor slots
  SuiteSet set = SuiteSet::development;
};

// The configurations for a world of `ranks` (>= 2) ranks, `ranks_per_node` of them per node: the
// development set first, then the hold-out set.
std::vector<SuiteConfig> suite_configs(int ranks, int ranks_per_node);

struct SuiteRow {
  std::string name, command;
  double predicted_s = 0;
  double measured_s = 0;                // median of the runs kept (a makespan: throughput kind)
  std::vector<double> measured_runs_s;  // the timed runs kept, in run order
  // The timed runs beside a reference reading that was not steady
  // (validate/calibrate/steady_windows.hpp): left out, unless the row is not steady.
  std::vector<double> discarded_runs_s{};
  bool steady = true;  // false: too few steady runs, so every timed run was kept
  double measured_p10_s = 0, measured_p90_s = 0;  // spread of the timed runs
  SuiteSet set = SuiteSet::development;
  double error() const { return (predicted_s - measured_s) / measured_s; }
  // The error against the slow and the fast end of the spread: error_p10 <= error <= error_p90.
  double error_p10() const { return (predicted_s - measured_p90_s) / measured_p90_s; }
  double error_p90() const { return (predicted_s - measured_p10_s) / measured_p10_s; }
  int repeats() const { return static_cast<int>(measured_runs_s.size()); }
};

// Fills measured_s and its spread from measured_runs_s (robust_stats: median, p10, p90).
void summarize_runs(SuiteRow& row);

struct SuiteResult {
  std::string hardware;
  int ranks = 0;
  int runs = 0;
  std::vector<SuiteRow> rows;
  // The stability probe's verdict over the runs (validate/calibrate/stability.hpp): reported,
  // never a refusal — the figures of an unsteady machine are printed as such.
  std::optional<StabilityVerdict> machine;
  int extra_rounds = 0;  // rounds run beyond `runs` to find steady runs
  // Over the rows of one set (0 when it has none):
  double mape(SuiteSet set = SuiteSet::development) const;         // mean |error|
  double worst_error(SuiteSet set = SuiteSet::development) const;  // max |error|
  // The MAPE of each timed round alone (round k: every row's k-th run), and its p10 / p90.
  std::vector<double> round_mapes(SuiteSet set = SuiteSet::development) const;
  double mape_p10(SuiteSet set = SuiteSet::development) const;
  double mape_p90(SuiteSet set = SuiteSet::development) const;
  std::size_t count(SuiteSet set) const;
};

// The suite's verdict on the machine: steady when every row kept `runs` steady runs and the
// probe's spread is within its limit (a load present throughout slows every reading alike, so
// the readings alone cannot see it; the spread within a reading does); the summary
// counts the runs kept and discarded and the extra rounds, then the probe's own figures.
StabilityVerdict suite_machine_verdict(const SuiteResult& result, StabilityVerdict probe);

std::string suite_text(const SuiteResult& result);
nlohmann::ordered_json suite_json(const SuiteResult& result);

}  // namespace meshsim
