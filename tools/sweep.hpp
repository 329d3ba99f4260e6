#pragma once
// The work of `meshsim sweep`: evaluate plans (memory first; an OOM plan is not timed), in
// parallel on K threads, rows in plan order whatever the thread count; rows as CSV or JSON with
// no wall-clock columns, so the files are byte-identical for any --jobs and under mpirun.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/plan_space.hpp"
#include "schedules/training_step.hpp"
#include "sim/hardware_profile.hpp"
#include "tools/moe_report.hpp"

namespace meshsim {

// The defaults of `meshsim sweep` (its --help lists them): llama3-70b on 1,024 H100s.
inline constexpr std::string_view kSweepDefaultModel = "llama3-70b";
inline constexpr std::string_view kSweepDefaultHardware = "h100-sxm";
inline constexpr int kSweepDefaultGpus = 1024;

// The default lists on kSweepDefaultGpus GPUs: tp 1,2,4,8 x pp 1,2,4,8,16 x cp 1,2,4 x vp 1,2 x
// mbs 1,2 x schedules 1f1b, interleaved, zb-h1 x CP variant zigzag; base: seq 8192, global batch
// 512 sequences, selective recompute, p2p K/V rotation, replicated optimizer, sequence parallel.
PlanLists default_plan_lists(int gpus_per_node);

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
  bool moe = false;           // the model has MoE layers: rows add ep and etp
  // MoE models, timed rows: the step's MoE breakdown (meshsim step's `moe` block), rows add its
  // dispatch, combine, expert compute, exposed EP comm and imbalance.
  MoeBreakdown moe_stats;
  bool operator==(const SweepRow&) const = default;
};

// One plan: memory, and when it fits, the simulated step.
SweepRow evaluate_plan(const TransformerModel& model, const StepPlan& plan,
                       const HardwareProfile& hardware);

// Every plan of `plans` whose index i satisfies i % stride == offset (an MPI rank's share), on
// `jobs` threads; rows in plan order. Plans start largest first (estimated_step_ops; OOM plans
// count 0), and a plan starts only while the sizes of the plans running with it add up to at most
// 1.25 x the largest plan's (or when none runs): the largest simulations, gigabytes each, are not
// held in memory at the same time. Rows do not depend on the order. progress(done, total) is
// called from the workers (serialized).
std::vector<SweepRow> evaluate_plans(
    const TransformerModel& model, const std::vector<StepPlan>& plans,
    const HardwareProfile& hardware, int jobs, int offset = 0, int stride = 1,
    const std::function<void(std::size_t, std::size_t)>& progress = {});

// The MoE breakdown of a row for the MPI hand-over (cmd_sweep) and back.
nlohmann::json moe_stats_json(const MoeBreakdown& b);
MoeBreakdown moe_stats_from_json(const nlohmann::json& j);

// The plan's mesh as JSON fields, in this order: tp, pp, cp, dp, vp, mbs.
void put_mesh(nlohmann::ordered_json& j, const StepPlan& p);
nlohmann::ordered_json sweep_row_json(const SweepRow& row);
std::string sweep_csv(const std::vector<SweepRow>& rows);
// {"schema_version", "model", "gpus", "hardware", "seq", "global_batch", "rows": [...]}
nlohmann::ordered_json sweep_json(const std::vector<SweepRow>& rows, const std::string& model,
                                  const std::string& hardware);

// Timed rows ranked by step time (ties: plan order), then OOM rows are left out.
std::vector<SweepRow> ranked(const std::vector<SweepRow>& rows);

}  // namespace meshsim
