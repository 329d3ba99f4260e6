// Training-step and plan-sweep benchmarks (Google Benchmark): the scale targets of `meshsim step`
// and `meshsim sweep`, through the same library calls the commands make.
//   BM_StepSmall      llama3-8b on 16 GPUs, tp 2 pp 2 cp 2 dp 2, seq 8192, gbs 16 (the smoke case)
//   BM_Step4096       gpt3-175b on 4,096 GPUs, tp 8 pp 16 cp 4 dp 8, seq 32768, gbs 256, 1f1b:
//                     check, memory estimate, build (folded), validate, cost, simulate, metrics;
//                     target: at most 10 s on one core
//   BM_DefaultSweep   `meshsim sweep --jobs 2` on its defaults (llama3-70b on 1,024 H100s, every
//                     valid plan of the default lists): enumerate, then evaluate_plans on 2
//                     threads; target: at most 120 s
// Long cases run once (Iterations(1)) and report wall time (UseRealTime) and the CPU time of the
// whole process, every thread (MeasureProcessCPUTime): on a busy machine wall time grows, CPU time
// much less. Counters:
//   ops, events, step_time_s (simulated)     the step cases
//   plans, simulated, oom                     the sweep: valid plans, plans timed, plans OOM
//   peak_rss_mb   VmHWM of /proc/self/status: the process's peak resident memory (MB = 2^20 B).
//                 Per process, so tools/run_benchmarks.sh runs each case in its own process.
//   growth_mb     VmHWM after the case minus VmRSS before it: what the case itself added
// tools/run_benchmarks.sh builds this program, runs each case alone and prints the figures.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/memory_model.hpp"
#include "schedules/model_catalog.hpp"
#include "schedules/plan_space.hpp"
#include "schedules/training_step.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/run.hpp"
#include "sim/time.hpp"
#include "tools/memory_policy.hpp"
#include "tools/sweep.hpp"

namespace {

// A field of /proc/self/status in MB ("VmHWM:   123456 kB"), or -1 where there is none.
double status_mb(std::string_view field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(field) && line.size() > field.size() && line[field.size()] == ':') {
      return std::stod(line.substr(field.size() + 1)) / 1024.0;
    }
  }
  return -1;
}

void set_memory_counters(benchmark::State& state, double rss_before_mb) {
  const double peak = status_mb("VmHWM");
  state.counters["peak_rss_mb"] = peak;
  state.counters["growth_mb"] = peak >= 0 && rss_before_mb >= 0 ? peak - rss_before_mb : -1;
}

struct StepCase {
  std::string model;
  meshsim::StepPlan plan;
};

// The plan `meshsim step` builds from the flags (1f1b, zigzag p2p CP, no recompute, replicated
// optimizer, sequence parallel, 4 DP buckets, TP and DP folded).
StepCase step_case(std::string model, int tp, int pp, int cp, int dp, std::int64_t seq,
                   std::int64_t gbs) {
  StepCase c{std::move(model), {}};
  c.plan.tp = tp;
  c.plan.pp = pp;
  c.plan.cp = cp;
  c.plan.dp = dp;
  c.plan.seq = seq;
  c.plan.global_batch = gbs;
  return c;
}

// The library path of `meshsim step` without output: what run_step_command times as wall_s.
void run_step(benchmark::State& state, const StepCase& c) {
  const double rss_before = status_mb("VmRSS");
  const meshsim::HardwareProfile hw = meshsim::load_hardware("h100-sxm");
  std::size_t ops = 0;
  std::uint64_t events = 0;
  meshsim::Nanos makespan = 0;
  for (auto _ : state) {
    try {
      const meshsim::TransformerModel model = meshsim::load_model(c.model);
      meshsim::check_step_plan(model, c.plan);
      const meshsim::MemoryEstimate mem =
          meshsim::estimate_memory(model, meshsim::memory_plan(c.plan), hw);
      benchmark::DoNotOptimize(mem.peak_bytes);
      const meshsim::SimulationResult r = meshsim::run_simulation(
          meshsim::build_training_step(model, c.plan, hw.gpus_per_node), hw);
      ops = r.program.ops.size();
      events = r.timeline.events;
      makespan = r.metrics.makespan;
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["events"] = static_cast<double>(events);
  state.counters["step_time_s"] = meshsim::ns_to_seconds(makespan);
  set_memory_counters(state, rss_before);
}

void BM_StepSmall(benchmark::State& state) {
  run_step(state, step_case("llama3-8b", 2, 2, 2, 2, 8192, 16));
}

void BM_Step4096(benchmark::State& state) {
  run_step(state, step_case("gpt3-175b", 8, 16, 4, 8, 32768, 256));
}

// `meshsim sweep --jobs <jobs>` on its defaults, without output.
void BM_DefaultSweep(benchmark::State& state) {
  const double rss_before = status_mb("VmRSS");
  const auto jobs = static_cast<int>(state.range(0));
  std::size_t plans = 0;
  std::size_t simulated = 0;
  std::size_t oom = 0;
  for (auto _ : state) {
    try {
      const meshsim::HardwareProfile hw = meshsim::load_hardware(meshsim::kSweepDefaultHardware);
      const meshsim::TransformerModel model = meshsim::load_model(meshsim::kSweepDefaultModel);
      const meshsim::PlanSpace space =
          meshsim::enumerate_plans(model, meshsim::default_plan_lists(hw.gpus_per_node));
      const std::vector<meshsim::SweepRow> rows =
          meshsim::evaluate_plans(model, space.plans, hw, jobs);
      plans = rows.size();
      simulated = 0;
      oom = 0;
      for (const auto& row : rows) {
        simulated += row.timed ? 1 : 0;
        oom += row.oom ? 1 : 0;
      }
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
  state.counters["plans"] = static_cast<double>(plans);
  state.counters["simulated"] = static_cast<double>(simulated);
  state.counters["oom"] = static_cast<double>(oom);
  set_memory_counters(state, rss_before);
}

}  // namespace

BENCHMARK(BM_StepSmall)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Step4096)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();
BENCHMARK(BM_DefaultSweep)
    ->Arg(2)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

// The allocator policy of meshsim itself (tools/memory_policy.hpp), so the figures are its own.
int main(int argc, char** argv) {
  meshsim::keep_freed_memory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
