// meshsim validate: run a Program for real — one MPI process per rank, a thread per stream — and
// report its measured timeline (ARCHITECTURE.md §5, validate/). The workload flags are those of the
// simulating sub-commands (parsed here as they are there).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "sim/comm_plan.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/program_json.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"
#include "tools/exit_codes.hpp"
#include "tools/memory_limit.hpp"
#include "tools/output_file.hpp"
#include "tools/run_world_cli.hpp"
#include "tools/simulation.hpp"
#include "tools/workload_flags.hpp"
#include "traces/chrome_trace_writer.hpp"
#include "traces/side_by_side_trace.hpp"
#include "validate/check/measured_report.hpp"
#include "validate/check/numerics.hpp"
#include "validate/check/timing_comparison.hpp"
#include "validate/check/workload_registry.hpp"
#include "validate/cpu/cpu_kernel_runner.hpp"
#include "validate/cpu/shape_kernels.hpp"
#include "validate/mpi/launch_env.hpp"
#include "validate/run/robust_stats.hpp"
#include "validate/run/validate_driver.hpp"
#include "validate/tensors/npy_writer.hpp"

namespace meshsim {
namespace {

std::vector<OptionSpec> validate_options() {
  return {
      {"--hardware", "NAME|FILE",
       "hardware profile: its GPUs per node (the mesh) and its name in the trace [h100-sxm]"},
      {"--seed", "N", "seed of the deterministic input fills [1]"},
      {"--dump", "DIR",
       "write the unsharded inputs and outputs as NumPy .npy files into DIR (created)",
       OutputKind::folder},
      {"--trace", "FILE", "write the measured Chrome/Perfetto trace (the simulator's format)",
       OutputKind::file},
      {"--json", "", "print one JSON object instead of the table"},
      timeout_option(),
      {"--save-program", "FILE", "write the schedule graph that ran as JSON", OutputKind::file},
      {"--compare", "",
       "also simulate the Program with --hardware's profile and report predicted vs measured "
       "per op and end to end; with --trace, both timelines in one trace"},
      {"--runs", "N",
       "timed runs; N > 1 adds a warm-up run first and reports the run with the median step "
       "time [5 with --compare, else 1]"},
      {"--no-check", "", "skip the numerics check against the float64 reference"},
      {"--backend", "cpu|cuda",
       "cpu: a thread per stream, kernels/cpu, MPI; cuda: one GPU per process, CUDA streams, "
       "kernels/cuda and cuBLAS, NCCL [cpu]"},
      {"--inject-fault", "attention-mask|lse-merge|gemm-scale",
       "testing: make one kernel compute a wrong result (the numerics must then FAIL)"},
      max_memory_option(),
  };
}

std::vector<OptionSpec> program_options() {
  return {{"--program", "FILE", "the saved schedule graph to run (--save-program of any command)"}};
}

// A workload of the registry (its flag table), or a saved Program (--program) when null.
using WorkloadCommand = const WorkloadFlags*;

constexpr const char* kProgramExample =
    "mpirun -np 4 meshsim validate program --program ring.program.json --trace measured.json";

std::string usage() {
  std::string out =
      "usage: meshsim validate <workload> [flags]\n\n"
      "Run a workload's schedule graph for real: one MPI process per rank (mpirun -np N), a "
      "thread per\nstream, the same readiness rules as the simulator; report the measured "
      "timeline.\n\nworkloads:\n";
  for (const auto& w : workload_flag_tables()) out += fmt::format("  {}\n", w.name);
  out += "  program\n";
  out += "  moe              (one MoE layer: routing-sized all-to-all dispatch, float64 check)\n";
  out += "  suite            (the fixed configurations, predicted vs measured)\n";
  out += "\nrun 'meshsim validate <workload> --help' for its flags.\n";
  return out;
}

// The trace of a measured timeline, through the simulator's recorder: its signals in completion
// order, as the engine would emit them.
nlohmann::json measured_trace(const Program& program, const CommPlan& plan, const Timeline& tl,
                              TraceMetadata metadata) {
  ChromeTraceRecorder recorder(program, plan, std::move(metadata));
  const EngineSignals signals = recorder.signals();
  std::vector<OpId> ops(program.ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) ops[i] = static_cast<OpId>(i);
  std::stable_sort(ops.begin(), ops.end(), [&](OpId a, OpId b) {
    return tl.ops[static_cast<std::size_t>(a)].end < tl.ops[static_cast<std::size_t>(b)].end;
  });
  std::vector<std::int32_t> transfers(plan.transfers.size());
  for (std::size_t t = 0; t < transfers.size(); ++t) transfers[t] = static_cast<std::int32_t>(t);
  std::stable_sort(transfers.begin(), transfers.end(), [&](std::int32_t a, std::int32_t b) {
    return tl.transfers[static_cast<std::size_t>(a)].end <
           tl.transfers[static_cast<std::size_t>(b)].end;
  });
  std::size_t next_transfer = 0;
  for (OpId op : ops) {
    const Nanos end = tl.ops[static_cast<std::size_t>(op)].end;
    while (next_transfer < transfers.size() &&
           tl.transfers[static_cast<std::size_t>(transfers[next_transfer])].end <= end) {
      const std::int32_t t = transfers[next_transfer++];
      signals.on_transfer_complete(t, tl.transfers[static_cast<std::size_t>(t)]);
    }
    signals.on_op_complete(op, tl.ops[static_cast<std::size_t>(op)]);
  }
  for (; next_transfer < transfers.size(); ++next_transfer) {
    const std::int32_t t = transfers[next_transfer];
    signals.on_transfer_complete(t, tl.transfers[static_cast<std::size_t>(t)]);
  }
  return recorder.to_json();
}

struct Request {
  std::optional<Workload> workload;  // empty: a saved Program
  std::string program_path;
  HardwareProfile hardware;
  std::uint64_t seed = 1;
  std::string dump_dir, trace_path, save_path;
  bool json = false;
  bool check = true;
  bool compare = false;
  int runs = 1;
  InjectedFault fault = InjectedFault::none;
  std::string backend = "cpu";
  std::chrono::milliseconds timeout{300000};
  MemoryLimit memory_limit;
  RankMemoryEstimate memory;  // per rank, before anything is allocated
  bool gather_tensors() const { return !dump_dir.empty() || (check && workload); }
};

Request parse_request(WorkloadCommand w, const Args& args) {
  Request r;
  r.hardware = load_hardware(args.get("--hardware", "h100-sxm"));
  if (w != nullptr) {
    r.workload = w->parse(args, r.hardware.gpus_per_node, FlagUse::validate);
  } else {
    r.program_path = args.get("--program", "");
    if (r.program_path.empty()) throw InputError("validate program: --program FILE is required");
  }
  r.seed = static_cast<std::uint64_t>(
      args.get_int("--seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
  r.dump_dir = args.get("--dump", "");
  r.trace_path = args.get("--trace", "");
  r.save_path = args.get("--save-program", "");
  r.json = args.has("--json");
  r.check = !args.has("--no-check");
  r.compare = args.has("--compare");
  r.runs = static_cast<int>(args.get_int("--runs", r.compare ? 5 : 1, 1, 1000));
  r.backend = args.get_choice("--backend", "cpu", {"cpu", "cuda"});
  r.fault = *parse_injected_fault(args.get_choice(
      "--inject-fault", "none", {"none", "attention-mask", "lse-merge", "gemm-scale"}));
  r.timeout = parse_timeout(args);
  r.memory_limit = memory_limit(args, detect_launch_env().local_size);
  return r;
}

// What sets the number of ranks, for messages: "--cp 4", or the saved Program's mesh.
std::string ranks_of(const Request& req) {
  if (!req.workload) return "the saved Program's mesh";
  return workload_flags(workload_descriptor(*req.workload).name).ranks(*req.workload);
}

// The prediction --compare sets the measured run against: the simulated Program (with its trace
// when one is written) and the per-op comparison.
struct PredictedRun {
  TracedSimulation simulated;
  TimingComparison timings;
};

std::optional<PredictedRun> compare_with_simulation(const Request& req, const Program& program,
                                                    const ValidateResult& result,
                                                    const CommandContext& ctx,
                                                    std::chrono::steady_clock::time_point started) {
  if (!req.compare) return std::nullopt;
  TracedSimulation simulated = run_traced_simulation(
      program, req.hardware,
      Provenance{ctx.command_line, req.hardware.name, hardware_hash(req.hardware)},
      !req.trace_path.empty(), started);
  TimingComparison timings = compare_timings(program, simulated.timeline, result.timeline);
  return PredictedRun{std::move(simulated), std::move(timings)};
}

// --save-program, --trace (side by side with the prediction under --compare) and --dump, staged
// to be written together.
void stage_files(const Request& req, const Program& program, const CommPlan& plan,
                 const ValidateResult& result, const std::optional<PredictedRun>& comparison,
                 const CommandContext& ctx, OutputFiles& files) {
  if (!req.save_path.empty())
    files.stage(req.save_path, program_to_text(program), "--save-program");
  if (!req.trace_path.empty()) {
    nlohmann::json trace =
        measured_trace(program, plan, result.timeline,
                       TraceMetadata{"measured", MESHSIM_VERSION, ctx.command_line,
                                     req.hardware.name, hardware_hash(req.hardware)});
    if (comparison) {
      trace = side_by_side_trace(nlohmann::json::parse(*comparison->simulated.trace), trace);
    }
    std::ostringstream text;
    write_trace(trace, text);
    files.stage(req.trace_path, text.str(), "--trace");
  }
  const TensorLayout layout = req.workload ? tensor_layout(*req.workload) : TensorLayout{};
  if (!req.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(req.dump_dir, ec);
    if (ec)
      throw InputError(fmt::format("--dump {}: cannot create: {}", req.dump_dir, ec.message()));
    for (const auto& t : dump_tensors(layout, result.tensors)) {
      files.stage((std::filesystem::path(req.dump_dir) / (t.name + ".npy")).string(),
                  npy_file(t.shape, t.values, t.dtype), "--dump");
    }
  }
}

// What the report says about the run: backend, kernels, seed, memory, numerics, wall time.
ValidateRunInfo run_info(const Request& req, const ValidateResult& result,
                         const std::string& backend, const CommandContext& ctx,
                         std::chrono::steady_clock::time_point started) {
  ValidateRunInfo info;
  info.command_line = ctx.command_line;
  info.backend = backend;
  info.kernels = req.backend == "cuda" ? "cuda (kernels/cuda, cuBLAS)"
                                       : "cpu (kernels/cpu, OpenBLAS 1 thread per call)";
  if (req.runs > 1) {
    info.kernels +=
        fmt::format("; the run with the median step time of {} after a warm-up", req.runs);
  }
  if (req.fault != InjectedFault::none) {
    info.kernels += fmt::format(", injected fault {}", to_string(req.fault));
  }
  info.seed = req.seed;
  info.memory_bytes = result.memory_bytes;
  if (req.check && req.workload) {
    info.numerics = check_numerics(*req.workload, result.tensors);
    info.numerics_note = std::string(workload_descriptor(*req.workload).reference_name);
  } else if (req.check) {
    info.numerics_note = "not checked (a saved Program has no workload to build a reference from)";
  } else {
    info.numerics_note = "not checked (--no-check)";
  }
  info.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return info;
}

void print_report(const Request& req, const Program& program, const ValidateResult& result,
                  const ValidateRunInfo& info, const RobustSummary& spread,
                  const std::optional<PredictedRun>& comparison, const CommandContext& ctx) {
  if (req.json) {
    nlohmann::ordered_json j = measured_report_json(program, result.timeline, info);
    j["makespan_s_p10"] = spread.p10;
    j["makespan_s_p90"] = spread.p90;
    j["repeats"] = spread.repeats;
    if (comparison) {
      const nlohmann::ordered_json c = timing_comparison_json(program, comparison->timings);
      j["hardware"] = req.hardware.name;
      for (const auto& [key, value] : c.items()) j[key] = value;
      j["measured_makespan_s_p10"] = spread.p10;
      j["measured_makespan_s_p90"] = spread.p90;
    }
    j["memory_estimate_bytes"] = req.memory.total();
    j["memory_limit_bytes"] = req.memory_limit.bytes;
    ctx.out << j.dump(2) << "\n";
    return;
  }
  ctx.out << measured_report_text(program, result.timeline, info);
  if (spread.repeats > 1) {
    ctx.out << fmt::format(
        "step time over {} timed runs: median {:.3f} ms, p10-p90 {:.3f}-{:.3f} ms\n",
        spread.repeats, spread.estimate * 1e3, spread.p10 * 1e3, spread.p90 * 1e3);
  }
  if (comparison) {
    ctx.out << fmt::format("simulated with hardware profile {}\n", req.hardware.name)
            << timing_comparison_text(program, comparison->timings, "--json");
  }
  if (!req.dump_dir.empty()) ctx.out << fmt::format("tensors written to {}/\n", req.dump_dir);
  if (!req.trace_path.empty()) {
    ctx.out << fmt::format("trace written to {} (open it in https://ui.perfetto.dev)\n",
                           req.trace_path);
  }
}

// Rank 0's outputs: files (staged together), then the report.
int emit(const Request& req, const Program& program, const CommPlan& plan,
         const ValidateResult& result, const RobustSummary& spread, const std::string& backend,
         const CommandContext& ctx, std::chrono::steady_clock::time_point started) {
  const std::optional<PredictedRun> comparison =
      compare_with_simulation(req, program, result, ctx, started);
  OutputFiles files;
  stage_files(req, program, plan, result, comparison, ctx, files);
  files.commit();
  const ValidateRunInfo info = run_info(req, result, backend, ctx, started);
  print_report(req, program, result, info, spread, comparison, ctx);
  // A numerics FAIL is the run's verdict, not bad input or a crash: its own exit code.
  return info.numerics && !info.numerics->pass ? kExitNumericsFailed : kExitOk;
}

// The run options on this world: seeds, timeout, what to gather, the kernels (scratch operands
// for calls without tensor slots, as a training step's Program has), how a rank reports failure.
ValidateOptions validate_run_options(const Request& req, RunWorld& world,
                                     const CommandContext& ctx) {
  ValidateOptions options;
  options.seed = req.seed;
  options.stall_timeout = req.timeout;
  options.gather_tensors = req.gather_tensors();
  const InjectedFault fault = req.fault;
  options.make_kernels = [fault](TensorStore& store) -> std::unique_ptr<KernelRunner> {
    return std::make_unique<ShapeKernelRunner>(std::make_unique<CpuKernelRunner>(store, fault));
  };
  options.report_failure = [&world, &ctx](const std::string& what) {
    ctx.err << fmt::format("meshsim: error: {}\n", on_rank(world.rank(), what));
    ctx.err.flush();
  };
  return options;
}

// With several runs: a warm-up, then the runs; rank 0 keeps the one with the median step time
// (every rank takes part in every run) and the spread of the step times (a makespan: median,
// validate/run/robust_stats.hpp).
ValidateResult run_median(const Request& req, const Program& program, const CommPlan& plan,
                          RunWorld& world, const ValidateOptions& options, RobustSummary& spread) {
  const TensorLayout layout = req.workload ? tensor_layout(*req.workload) : TensorLayout{};
  std::vector<ValidateResult> timed;
  for (int run = 0; run <= req.runs; ++run) {
    if (run == 0 && req.runs == 1) continue;
    ValidateResult r = run_validation(program, plan, layout, world, options);
    if (run > 0) timed.push_back(std::move(r));
  }
  std::sort(timed.begin(), timed.end(), [](const ValidateResult& a, const ValidateResult& b) {
    return a.timeline.makespan < b.timeline.makespan;
  });
  std::vector<double> makespans;
  for (const auto& r : timed) makespans.push_back(ns_to_seconds(r.timeline.makespan));
  spread = summarize(makespans, MeasurementKind::throughput);
  return std::move(timed[timed.size() / 2]);
}

// The workload named on the command line (null for `program`); InputError when there is none.
WorkloadCommand find_workload_command(const std::string& name) {
  for (const auto& c : workload_flag_tables()) {
    if (name == c.name) return &c;
  }
  if (name == "program") return nullptr;
  std::string names;
  for (const auto& c : workload_flag_tables()) names += fmt::format("{}, ", c.name);
  throw InputError(fmt::format("validate: unknown workload '{}' (expected {}program, moe or suite)",
                               name, names));
}

std::string args_command(WorkloadCommand w) {
  return w ? std::string(w->name) : "program";
}

// The request, its Program and communication plan; InputError when a multi-rank Program is run
// without a launcher.
void prepare(WorkloadCommand w, const Args& args, const LaunchEnv& env, const CommandContext& ctx,
             Request& req, Program& program, CommPlan& plan) {
  req = parse_request(w, args);
  program = req.workload ? build_program(*req.workload) : load_program_file(req.program_path);
  plan = validate_program(program);
  // A folded Program (a group built for some members and timed as the whole group) holds only the
  // built ranks' ops: run for real it would time collectives over the built members alone.
  for (const auto& g : program.groups) {
    if (!g.timed_as.empty()) {
      throw InputError(fmt::format(
          "--program {}: the schedule graph is folded (group '{}' is built for {} of its {} ranks "
          "and timed as the whole group); save it unfolded to run it (meshsim step ... --no-fold "
          "--save-program FILE)",
          req.program_path, g.dim, g.ranks.size(), g.timed_as.size()));
    }
  }
  if (req.fault != InjectedFault::none && !fault_applies(req.fault, program)) {
    throw InputError(fmt::format(
        "--inject-fault {}: this Program has no {} to fault ({}), so the check could not fail",
        to_string(req.fault),
        req.fault == InjectedFault::lse_merge        ? "lse_merge op (one rank: nothing to merge)"
        : req.fault == InjectedFault::attention_mask ? "causal attention op"
                                                     : "GEMM",
        ranks_of(req)));
  }
  // Memory before work: refused here, on every rank alike, before MPI starts or allocates.
  const TensorLayout layout = req.workload ? tensor_layout(*req.workload) : TensorLayout{};
  req.memory = estimate_peak_memory(program, plan, layout, req.gather_tensors());
  check_memory(req.memory, req.memory_limit, fmt::format("validate {}", args_command(w)));
  if (!env.under_launcher && program.world_size() > 1) {
    throw InputError(
        fmt::format("this Program has {} ranks ({}): run one process per rank under MPI: {}",
                    program.world_size(), ranks_of(req),
                    mpirun_command(program.world_size(), ctx.command_line)));
  }
  // --backend cuda without the CUDA backend or without a visible GPU: one line, before MPI starts.
  if (req.backend == "cuda") {
    if (const auto why = cuda_backend_unavailable()) throw InputError(*why);
  }
}

// Runs the prepared Program on the world's ranks and reports on rank 0; the exit code.
int run_prepared(const Request& req, const Program& program, const CommPlan& plan,
                 const CommandContext& ctx, std::chrono::steady_clock::time_point started,
                 const LaunchEnv& env) {
  const std::unique_ptr<RunWorld> world = make_run_world(env);
  if (world->size() != program.world_size()) {
    if (world->rank() == 0) {
      ctx.err << fmt::format(
          "meshsim: error: this Program has {} ranks ({}) but MPI started {} processes: run "
          "{}\n",
          program.world_size(), ranks_of(req), world->size(),
          mpirun_command(program.world_size(), ctx.command_line));
    }
    return 2;
  }
  ValidateOptions options = validate_run_options(req, *world, ctx);
  std::function<std::string()> describe_backend = [&] { return world->describe(); };
  if (req.backend == "cuda") {
    describe_backend = cuda_backend().use_backend(options, program, plan, *world, req.fault);
  }
  if (world->rank() == 0 && !req.json) {
    ctx.out << memory_line(req.memory, req.memory_limit);
    ctx.out.flush();
  }
  ValidateResult result;
  RobustSummary spread;
  const auto run_all = [&] { result = run_median(req, program, plan, *world, options, spread); };
  if (auto failed = run_collectively(ctx, run_all)) return *failed;
  if (!result.root) return 0;
  return emit(req, program, plan, result, spread, describe_backend(), ctx, started);
}

}  // namespace

int run_validate_command(std::span<const std::string> argv, const CommandContext& ctx) {
  const auto started = std::chrono::steady_clock::now();
  // Bad input is the same on every rank: only rank 0 says so (and prints help); every rank
  // exits 2.
  const LaunchEnv env = detect_launch_env();
  auto bad_input = [&](const std::string& what) {
    if (env.rank == 0) ctx.err << "meshsim: error: " << what << "\n";
    return 2;
  };
  if (argv.empty() || argv[0] == "--help" || argv[0] == "-h") {
    if (env.rank == 0) (argv.empty() ? ctx.err : ctx.out) << usage();
    return argv.empty() ? 2 : 0;
  }
  if (argv[0] == "suite") return run_validate_suite_command(argv.subspan(1), ctx);
  if (argv[0] == "moe") return run_validate_moe_command(argv.subspan(1), ctx);
  WorkloadCommand w = nullptr;
  std::optional<Args> parsed;
  try {
    w = find_workload_command(argv[0]);
    std::vector<OptionSpec> specs = w ? w->specs(FlagUse::validate) : program_options();
    for (auto& o : validate_options()) specs.push_back(std::move(o));
    parsed.emplace(fmt::format("validate {}", argv[0]), specs, argv.subspan(1));
  } catch (const InputError& e) {
    return bad_input(e.what());
  }
  const Args& args = *parsed;
  if (args.help_requested()) {
    if (env.rank != 0) return 0;
    ctx.out << args.help_text(
        "Run the workload's schedule graph for real: one MPI process per rank, a thread per "
        "stream, the simulator's readiness rules, real MPI communication; report the measured "
        "per-rank timeline and write it in the simulator's trace format.",
        w ? w->validate_example : kProgramExample);
    return 0;
  }
  Request req;
  Program program;
  CommPlan plan;
  try {
    prepare(w, args, env, ctx, req, program, plan);
  } catch (const InputError& e) {
    return bad_input(e.what());
  }
  return run_prepared(req, program, plan, ctx, started, env);
}

}  // namespace meshsim
