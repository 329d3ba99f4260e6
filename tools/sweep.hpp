#pragma once
// The work of `meshsim sweep`: evaluate plans (memory first; an OOM plan is not timed), in
// parallel on K threads, rows in plan order whatever the thread count; rows as CSV or JSON with
// no wall-clock columns, so the files are byte-identical for any --jobs and under mpirun.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/training_step.hpp"
#include "sim/hardware_profile.hpp"

namespace meshsim {

struct SweepRow {
  StepPlan plan;
  int gpus = 0;
  bool oom = false;
  double mem_gb = 0;  // peak per-rank memory (GB = 1e9 bytes)
  int peak_rank = 0;  // the pipeline rank with the peak
  bool timed = false;
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;             // fraction of the GPUs' dense bf16 peak
  std::string critical_path;  // "61% gemm, 14% attention_bwd, 9% p2p" (top three)
  bool operator==(const SweepRow&) const = default;
};

// One plan: memory, and when it fits, the simulated step.
SweepRow evaluate_plan(const TransformerModel& model, const StepPlan& plan,
                       const HardwareProfile& hardware);

// Every plan of `plans` whose index i satisfies i % stride == offset (an MPI rank's share), on
// `jobs` threads; progress(done, total) is called from the workers (serialized).
std::vector<SweepRow> evaluate_plans(
    const TransformerModel& model, const std::vector<StepPlan>& plans,
    const HardwareProfile& hardware, int jobs, int offset = 0, int stride = 1,
    const std::function<void(std::size_t, std::size_t)>& progress = {});

nlohmann::ordered_json sweep_row_json(const SweepRow& row);
std::string sweep_csv(const std::vector<SweepRow>& rows);
// {"schema_version", "model", "gpus", "hardware", "seq", "global_batch", "rows": [...]}
nlohmann::ordered_json sweep_json(const std::vector<SweepRow>& rows, const std::string& model,
                                  const std::string& hardware);

// Timed rows ranked by step time (ties: plan order), then OOM rows are left out.
std::vector<SweepRow> ranked(const std::vector<SweepRow>& rows);

}  // namespace meshsim
