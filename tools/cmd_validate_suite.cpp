// meshsim validate suite: the fixed validation configurations (tools/validate_suite.hpp) run for
// real on every rank and simulated with --hardware; predicted vs measured per configuration and
// the mean absolute percentage error.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <ostream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/comm_plan.hpp"
#include "sim/error.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"
#include "tools/memory_limit.hpp"
#include "tools/run_world_cli.hpp"
#include "tools/simulation.hpp"
#include "tools/validate_suite.hpp"
#include "validate/calibrate/stability_probe.hpp"
#include "validate/calibrate/steady_windows.hpp"
#include "validate/cpu/cpu_kernel_runner.hpp"
#include "validate/cpu/shape_kernels.hpp"
#include "validate/mpi/launch_env.hpp"
#include "validate/mpi/mpi_world.hpp"
#include "validate/run/microbench_stats.hpp"
#include "validate/run/robust_stats.hpp"
#include "validate/run/solo_world.hpp"
#include "validate/run/validate_driver.hpp"

namespace meshsim {
namespace {

std::vector<OptionSpec> suite_options() {
  return {
      {"--hardware", "NAME|FILE",
       "the profile predicting the runs: a calibrated one (meshsim calibrate --out FILE) "
       "[h100-sxm]"},
      {"--runs", "N",
       "runs per configuration to keep after one warm-up round, interleaved across the "
       "configurations, each between steady readings of the reference kernel (up to N more "
       "rounds to find them); median with p10-p90 (>= 5) [5]"},
      {"--only", "TEXT", "run only the configurations whose name contains TEXT"},
      timeout_option(),
      {"--json", "", "print one JSON object (with top-level \"mape\", a fraction)"},
      max_memory_option(),
  };
}

// What the command line asks of the suite.
struct SuiteRequest {
  HardwareProfile hw;
  int runs = 5;
  std::string only;  // empty: every configuration
  std::chrono::milliseconds timeout{300000};
  bool json = false;
  MemoryLimit memory_limit;
  RankMemoryEstimate memory;  // the largest of the selected configurations
};

bool selected(const SuiteConfig& config, const SuiteRequest& req) {
  return req.only.empty() || config.name.find(req.only) != std::string::npos;
}

// Memory before work: every selected configuration's estimate against the limit (InputError for
// the first that does not fit, or when --only selects none), on every rank alike, before anything
// is allocated.
void check_suite_memory(SuiteRequest& req, const LaunchEnv& env) {
  bool any = false;
  for (const auto& config : suite_configs(env.size, env.local_size)) {
    if (!selected(config, req)) continue;
    any = true;
    const Program program = config.build();
    const CommPlan plan = validate_program(program);
    const TensorLayout layout = config.layout ? config.layout() : TensorLayout{};
    const RankMemoryEstimate e = estimate_peak_memory(program, plan, layout, false);
    check_memory(e, req.memory_limit, fmt::format("validate suite '{}'", config.name));
    if (e.total() > req.memory.total()) req.memory = e;
  }
  if (!any) {
    throw InputError(fmt::format(
        "--only: '{}' matches no configuration name (e.g. 'ring attention', 'tp linear', "
        "'pipeline', 'training step', 'hold-out')",
        req.only));
  }
}

void print_suite_help(const Args& args, const CommandContext& ctx) {
  ctx.out << args.help_text(
      "Run the fixed validation configurations (ring attention ring/zigzag/all-gather, TP "
      "column/row, pipeline 1f1b/interleaved, a small training step; then a hold-out set of "
      "other sizes and variants) for real on every rank, interleaved, simulate each with "
      "--hardware, and print predicted vs measured makespans with their spread and the mean "
      "absolute percentage error of each set.",
      "mpirun -np 2 meshsim validate suite --hardware cpu.json");
}

// Throws InputError for a bad flag, or when not started by a launcher on 2 or more ranks.
SuiteRequest parse_suite_request(const Args& args, const LaunchEnv& env,
                                 const CommandContext& ctx) {
  SuiteRequest r;
  r.hw = load_hardware(args.get("--hardware", "h100-sxm"));
  r.runs = static_cast<int>(args.get_int("--runs", 5, 5, 1000));
  r.only = args.get("--only", "");
  r.timeout = parse_timeout(args);
  if (!env.under_launcher || env.size < 2) {
    throw InputError(fmt::format("validate suite runs on 2 or more ranks: {}",
                                 mpirun_command(2, ctx.command_line)));
  }
  r.json = args.has("--json");
  r.memory_limit = memory_limit(args, env.local_size);
  check_suite_memory(r, env);
  return r;
}

// Every run on the CPU kernels (shape-checked); a failure is printed with this rank's number.
ValidateOptions suite_validate_options(std::chrono::milliseconds timeout, const RunWorld& world,
                                       const CommandContext& ctx) {
  ValidateOptions options;
  options.stall_timeout = timeout;
  options.report_failure = [&world, &ctx](const std::string& what) {
    ctx.err << fmt::format("meshsim: error: {}\n", on_rank(world.rank(), what));
    ctx.err.flush();
  };
  options.make_kernels = [](TensorStore& store) -> std::unique_ptr<KernelRunner> {
    return std::make_unique<ShapeKernelRunner>(std::make_unique<CpuKernelRunner>(store));
  };
  return options;
}

// A selected configuration, built once: its Program, plan and layout.
struct PreparedConfig {
  const SuiteConfig* config = nullptr;
  Program program;
  CommPlan plan;
  TensorLayout layout;
};

// The timed runs on rank 0: which configuration each run was, and its makespan.
struct SuiteRuns {
  std::vector<std::size_t> config;
  std::vector<double> makespan_s;
};

// Run i's steadiness (steady_windows.hpp): readings i and i + 1 bracket it.
std::vector<bool> run_steadiness(const StabilityProbe& probe) {
  std::vector<double> readings;
  for (const auto& c : probe.checkpoints()) readings.push_back(reference_reading(c));
  return steady_between(readings);
}

// Rank 0: configuration c's timed runs (its warm-up excluded), steady or disturbed.
KeptRuns config_runs(const SuiteRuns& runs, const std::vector<bool>& steady, std::size_t c) {
  std::vector<double> values;
  std::vector<bool> flags;
  for (std::size_t i = 0; i < runs.config.size(); ++i) {
    if (runs.config[i] != c) continue;
    values.push_back(runs.makespan_s[i]);
    flags.push_back(steady[i]);
  }
  return split_runs(values, flags, 1);
}

// Rank 0: whether every one of the n configurations has `wanted` steady timed runs.
bool enough_steady_runs(const SuiteRuns& runs, const std::vector<bool>& steady, std::size_t n,
                        int wanted) {
  for (std::size_t c = 0; c < n; ++c) {
    if (config_runs(runs, steady, c).steady.size() < static_cast<std::size_t>(wanted)) {
      return false;
    }
  }
  return true;
}

// Rank 0: the row of configuration `c`: its steady timed runs when there are kMinSteadyRuns of
// them, else every timed run in order (the row then says it is not steady).
SuiteRow suite_row(const PreparedConfig& p, std::size_t c, const SuiteRuns& runs,
                   const std::vector<bool>& steady) {
  KeptRuns kept = config_runs(runs, steady, c);
  SuiteRow row;
  row.name = p.config->name;
  row.command = p.config->command;
  row.set = p.config->set;
  if (kept.steady.size() >= kMinSteadyRuns) {
    row.measured_runs_s = std::move(kept.steady);
  } else {  // every timed run, in run order; the disturbed noted
    row.measured_runs_s = config_runs(runs, std::vector<bool>(steady.size(), true), c).steady;
    row.steady = false;
  }
  row.discarded_runs_s = std::move(kept.disturbed);
  summarize_runs(row);
  return row;
}

// The runs, interleaved (robust_stats: one warm-up round, then `runs` timed rounds, each running
// every configuration once in a rotating order) on every rank, each run bracketed by readings of
// the stability probe's reference kernel; then up to `runs` more rounds while some configuration
// has fewer than `runs` steady runs (steady_windows.hpp). On rank 0 the rows (measured from the
// steady runs, predicted on `sim_hw`). Other ranks: no rows.
std::vector<SuiteRow> run_interleaved(const std::vector<SuiteConfig>& configs,
                                      const SuiteRequest& req, const HardwareProfile& sim_hw,
                                      RunWorld& world, const ValidateOptions& options,
                                      StabilityProbe& probe, int& extra_rounds) {
  std::vector<PreparedConfig> prepared;
  for (const auto& config : configs) {
    if (!selected(config, req)) continue;
    PreparedConfig p{&config, config.build(), {}, {}};
    p.plan = validate_program(p.program);
    p.layout = config.layout ? config.layout() : TensorLayout{};
    prepared.push_back(std::move(p));
  }
  const std::size_t n = prepared.size();
  SuiteRuns runs;
  probe.checkpoint("start");
  const auto run_round = [&](int round) {
    const std::vector<int> order = interleaved_order(static_cast<int>(n), round + 1);
    for (std::size_t i = n * static_cast<std::size_t>(round); i < order.size(); ++i) {
      const auto c = static_cast<std::size_t>(order[i]);
      const PreparedConfig& p = prepared[c];
      const ValidateResult r = run_validation(p.program, p.plan, p.layout, world, options);
      runs.config.push_back(c);
      runs.makespan_s.push_back(r.root ? ns_to_seconds(r.timeline.makespan) : 0.0);
      probe.checkpoint(fmt::format("after run {}", runs.config.size()));
    }
  };
  int round = 0;
  for (; round <= req.runs; ++round) run_round(round);
  for (extra_rounds = 0; extra_rounds < req.runs; ++extra_rounds) {
    const bool enough =
        world.rank() != 0 || enough_steady_runs(runs, run_steadiness(probe), n, req.runs);
    if (world.all_true(enough)) break;
    run_round(round++);
  }
  std::vector<SuiteRow> rows;
  if (world.rank() != 0) return rows;
  const std::vector<bool> steady = run_steadiness(probe);
  for (std::size_t c = 0; c < n; ++c) {
    rows.push_back(suite_row(prepared[c], c, runs, steady));
    rows.back().predicted_s =
        ns_to_seconds(run_simulation(prepared[c].program, sim_hw).timeline.makespan);
  }
  return rows;
}

}  // namespace

int run_validate_suite_command(std::span<const std::string> argv, const CommandContext& ctx) {
  const LaunchEnv env = detect_launch_env();
  SuiteRequest req;
  try {
    const Args args("validate suite", suite_options(), argv);
    if (args.help_requested()) {
      if (env.rank == 0) print_suite_help(args, ctx);
      return 0;
    }
    req = parse_suite_request(args, env, ctx);
  } catch (const InputError& e) {
    if (env.rank == 0) ctx.err << "meshsim: error: " << e.what() << "\n";
    return 2;
  }
  MpiWorld world;
  SuiteResult result;
  result.hardware = req.hw.name;
  result.ranks = world.size();
  result.runs = req.runs;
  // Ranks sit where they do: the simulated mesh uses the world's ranks per node.
  HardwareProfile sim_hw = req.hw;
  sim_hw.gpus_per_node = world.ranks_per_node();
  const ValidateOptions options = suite_validate_options(req.timeout, world, ctx);
  if (world.rank() == 0 && !req.json) {
    ctx.out << memory_line(req.memory, req.memory_limit);
    ctx.out.flush();
  }
  const std::vector<SuiteConfig> configs = suite_configs(world.size(), world.ranks_per_node());
  StabilityProbe probe(world);
  const auto run_all = [&] {
    result.rows = run_interleaved(configs, req, sim_hw, world, options, probe, result.extra_rounds);
  };
  if (auto failed = run_collectively(ctx, run_all)) return *failed;
  if (world.rank() != 0) return 0;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  result.machine = suite_machine_verdict(
      result, judge_stability(probe.checkpoints(), cores, world.ranks_per_node()));
  if (req.json) {
    ctx.out << suite_json(result).dump(2) << "\n";
  } else {
    ctx.out << suite_text(result);
  }
  return 0;
}

}  // namespace meshsim
