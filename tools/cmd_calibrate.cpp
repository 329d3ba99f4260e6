// meshsim calibrate: run the calibration microbenchmarks on the backend (one process per rank
// under MPI), fit a hardware profile to them and write it, with the raw measurements beside it
// (ARCHITECTURE.md §5, validate/calibrate/calibration.hpp). The simulator takes the profile
// unchanged
// (--hardware profile.json).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <thread>

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"
#include "tools/exit_codes.hpp"
#include "tools/output_file.hpp"
#include "tools/run_world_cli.hpp"
#include "validate/calibrate/calibration.hpp"
#include "validate/calibrate/stability.hpp"
#include "validate/calibrate/stability_probe.hpp"
#include "validate/mpi/launch_env.hpp"

namespace meshsim {
namespace {

std::vector<OptionSpec> calibrate_options() {
  return {
      {"--backend", "cpu|cuda", "where the microbenchmarks run [cpu]"},
      {"--out", "FILE",
       "the fitted profile (hardware JSON); the raw measurements go to FILE's stem + "
       ".measurements.json (required)",
       OutputKind::file},
      {"--quick", "", "a small grid (seconds instead of minutes): smoke tests, not a real fit"},
      {"--dtype", "bf16|fp16|fp32|fp64", "dtype of the compute grid [bf16]"},
      {"--runs", "N", "timed repetitions per point after one warm-up, median (>= 5) [5]"},
      {"--base", "NAME|FILE",
       "profile supplying what the run cannot measure (a link class never crossed) [h100-sxm]"},
      {"--name", "NAME", "name of the fitted profile [cpu-calibrated]"},
      timeout_option(),
      {"--json", "", "print the fit report as JSON instead of text"},
      {"--attempts", "N",
       "calibrations tried while the machine is not steady (reference kernel drift or spread "
       "over its limit), the last one kept [3]"},
      {"--force", "",
       "write the profile even when the machine was not steady (else exit 5 and write nothing)"},
      {"--from-trace", "FILE",
       "fit from a PyTorch profiler (Kineto) trace instead of running microbenchmarks (its "
       "flags: calibrate --from-trace FILE --help)"},
  };
}

// The measurements file beside the profile: profile.json -> profile.measurements.json.
std::string measurements_path(const std::string& out) {
  std::filesystem::path p(out);
  return (p.parent_path() / (p.stem().string() + ".measurements.json")).string();
}

double physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

struct Request {
  bool cuda = false;
  CalibrateRequest calibrate;
  std::string out;
  bool json = false;
  int attempts = 3;
  bool force = false;
};

Request parse_request(const Args& args) {
  Request r;
  const std::string backend = args.get_choice("--backend", "cpu", {"cpu", "cuda"});
  if (backend == "cuda") {
    // No GPU, no driver, or a build without CUDA: one line, before anything runs.
    if (auto why = cuda_backend_unavailable()) throw InputError(*why);
    r.cuda = true;
  }
  r.out = args.get("--out", "");
  if (r.out.empty()) throw InputError("calibrate: --out FILE is required (the fitted profile)");
  // Its folder was checked with the flags (OutputKind::file), before minutes of measuring.
  r.calibrate.options.quick = args.has("--quick");
  r.calibrate.options.dtype =
      *parse_dtype(args.get_choice("--dtype", "bf16", {"bf16", "fp16", "fp32", "fp64"}));
  r.calibrate.options.runs = static_cast<int>(args.get_int("--runs", 5, 5, 1000));
  r.calibrate.base = load_hardware(args.get("--base", "h100-sxm"));
  r.calibrate.name = args.get("--name", "cpu-calibrated");
  if (r.calibrate.name.empty()) throw InputError("--name: expected a non-empty profile name");
  r.calibrate.stall_timeout = parse_timeout(args);
  r.json = args.has("--json");
  r.attempts = static_cast<int>(args.get_int("--attempts", 3, 1, 100));
  r.force = args.has("--force");
  return r;
}

// What the stability checkpoints saw (rank 0), and whether every attempt failed.
struct Stability {
  std::vector<StabilityCheckpoint> checkpoints;
  StabilityVerdict verdict;
  int attempts = 0;
  bool checked = false;  // the CPU backend's probe ran
  bool steady = true;    // every rank: the last attempt's verdict
};

// The calibration, repeated while the reference kernel says the machine is not steady (at most
// --attempts times; the last is kept). Collective over the world.
CalibrationResult calibrate_until_steady(const Request& req, RunWorld& world, Stability& stability,
                                         const CommandContext& ctx) {
  StabilityProbe probe(world);
  const auto checkpoint = [&probe](const std::string& phase) { probe.checkpoint(phase); };
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CalibrationResult result;
  for (int attempt = 1; attempt <= req.attempts; ++attempt) {
    probe.clear();
    result = run_calibration(world, req.calibrate, checkpoint);
    stability.attempts = attempt;
    stability.checked = true;
    if (world.rank() == 0) {
      stability.checkpoints = probe.checkpoints();
      stability.verdict = judge_stability(stability.checkpoints, cores, world.ranks_per_node());
    }
    stability.steady = world.all_true(world.rank() != 0 || stability.verdict.stable);
    if (stability.steady || attempt == req.attempts) break;  // the last: refused or --force
    if (world.rank() == 0) {
      ctx.err << fmt::format(
          "meshsim: the machine is not steady: {}; calibrating again (attempt {} "
          "of {})\n",
          stability.verdict.summary, attempt + 1, req.attempts);
      ctx.err.flush();
    }
  }
  return result;
}

// The profile and the measurements file (with what the stability checkpoints saw), then the
// report.
int write_outputs(const Request& req, const CalibrationResult& result, const Stability& stability,
                  const RunWorld& world, const CommandContext& ctx,
                  std::chrono::steady_clock::time_point started) {
  OutputFiles files;
  const nlohmann::json profile = to_json(result.fit.profile);
  files.stage(req.out, profile.dump(2) + "\n", "--out");
  const std::string raw = measurements_path(req.out);
  nlohmann::ordered_json measurements = calibration_measurements_json(result, req.calibrate);
  if (stability.checked) {
    measurements["stability"] = stability_json(stability.checkpoints, stability.verdict);
  }
  files.stage(raw, measurements.dump(1) + "\n", "--out");
  files.commit();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (req.json) {
    nlohmann::ordered_json j;
    j["profile"] = req.out;
    j["measurements"] = raw;
    j["method"] = calibration_method(result, req.calibrate);
    j["wall_s"] = wall;
    j["fit"] = fit_report_json(result.fit);
    if (stability.checked) {
      j["stability"] = stability_json(stability.checkpoints, stability.verdict);
      j["attempts"] = stability.attempts;
    }
    ctx.out << j.dump(2) << "\n";
    return 0;
  }
  ctx.out << fmt::format("calibrated on {}: {}\n", world.describe(),
                         calibration_method(result, req.calibrate))
          << fit_report_text(result.fit);
  if (stability.checked) {
    ctx.out << fmt::format(
        "stability ({} attempt{}): {}{}\n", stability.attempts, stability.attempts == 1 ? "" : "s",
        stability.verdict.summary,
        stability.verdict.stable ? "" : " -- NOT STEADY, written anyway (--force)");
  }
  ctx.out << fmt::format("profile written to {} (use it with --hardware {})\n", req.out, req.out)
          << fmt::format("raw measurements written to {}\n", raw)
          << fmt::format("calibration took {:.1f} s\n", wall);
  return 0;
}

}  // namespace

int run_calibrate_command(std::span<const std::string> argv, const CommandContext& ctx) {
  if (names_flag(argv, "--from-trace")) return run_calibrate_from_trace(argv, ctx);
  const auto started = std::chrono::steady_clock::now();
  const LaunchEnv env = detect_launch_env();
  std::optional<Args> parsed;
  Request req;
  try {
    parsed.emplace("calibrate", calibrate_options(), argv);
    if (parsed->help_requested()) {
      if (env.rank == 0) {
        ctx.out << parsed->help_text(
            "Run microbenchmarks on the backend — GEMMs over a grid of shapes, attention blocks "
            "forward and backward, memory-bound kernels, p2p ping-pong, each collective over "
            "sizes and group sizes, compute under communication — and fit the hardware profile "
            "the simulator uses (efficiency tables, alpha/beta per link class, interference). "
            "One process per rank: run it under mpirun; alone it measures compute only.",
            "mpirun -np 2 meshsim calibrate --out cpu.json");
      }
      return 0;
    }
    req = parse_request(*parsed);
  } catch (const InputError& e) {
    if (env.rank == 0) ctx.err << "meshsim: error: " << e.what() << "\n";
    return 2;
  }
  const std::unique_ptr<RunWorld> world = make_run_world(env);
  const double memory = physical_memory_bytes();
  req.calibrate.memory_bytes = memory / static_cast<double>(world->ranks_per_node());
  CalibrationResult result;
  Stability stability;
  const auto calibrate = [&] {
    if (!req.cuda) {
      result = calibrate_until_steady(req, *world, stability, ctx);
      return;
    }
    CalibrationOptions options = req.calibrate.options;
    options.world_size = world->size();
    options.ranks_per_node = world->ranks_per_node();
    CalibrationRun run;
    cuda_backend().run_calibration(options, run);
    if (world->rank() == 0) {
      result =
          fit_calibration(std::move(run), req.calibrate, world->size(), world->ranks_per_node());
    }
  };
  if (auto failed = run_collectively(ctx, calibrate)) return *failed;
  const bool refused = stability.checked && !stability.steady && !req.force;
  if (!result.root) return refused ? kExitUnsteadyMachine : kExitOk;
  if (refused) {
    if (const auto why = stability_refusal(stability.verdict, stability.attempts, req.force)) {
      ctx.err << "meshsim: error: " << *why << "\n";
    }
    return kExitUnsteadyMachine;
  }
  return write_outputs(req, result, stability, *world, ctx, started);
}

}  // namespace meshsim
