// meshsim compare --kineto TRACE <step flags>: a profiled training step (PyTorch profiler /
// Kineto trace of one rank) beside meshsim's simulation of the same step: kernel time per category
// (GEMM, attention, memory-bound, communication) measured and simulated on that rank, the step
// span, and one Perfetto file with both timelines (simulated processes first, then the measured
// rank).
#include <algorithm>
#include <chrono>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/training_step.hpp"
#include "sim/error.hpp"
#include "sim/json_fields.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/simulation.hpp"
#include "tools/step_request.hpp"
#include "traces/kineto_timeline.hpp"
#include "traces/side_by_side_trace.hpp"

namespace meshsim {
namespace {

KinetoCategory category_of(const Op& op) {
  const auto* call = std::get_if<KernelCall>(&op.body);
  if (call == nullptr) return KinetoCategory::communication;
  switch (call->kind) {
    case KernelKind::gemm:
    case KernelKind::linear_bwd:
      return KinetoCategory::gemm;
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd:
      return KinetoCategory::attention;
    default:
      return KinetoCategory::memory;
  }
}

// Busy time per category of one simulated rank (a communication op from its dispatch, as an NCCL
// kernel runs from its launch, waiting included).
CategorySeconds simulated_seconds(const SimulationResult& sim, int rank) {
  CategorySeconds s{};
  for (const Op& op : sim.program.ops) {
    if (op.rank != rank) continue;
    const OpTiming& t = sim.timeline.ops[static_cast<std::size_t>(op.id)];
    s[static_cast<std::size_t>(category_of(op))] += static_cast<double>(t.end - t.start) * 1e-9;
  }
  return s;
}

double relative_error(double predicted, double measured) {
  return measured > 0 ? predicted / measured - 1 : 0.0;
}

struct Comparison {
  int rank = 0;
  CategorySeconds measured{}, simulated{};
  double measured_span_s = 0, simulated_step_s = 0;
};

void print_text(const Comparison& c, const std::string& trace_out, const CommandContext& ctx) {
  ctx.out << fmt::format("rank {}: kernel time per category, measured vs simulated\n", c.rank)
          << fmt::format("  {:<14} {:>12} {:>12} {:>8}\n", "category", "measured_ms",
                         "simulated_ms", "error");
  for (std::size_t i = 0; i < c.measured.size(); ++i) {
    ctx.out << fmt::format("  {:<14} {:12.3f} {:12.3f} {:>+7.1f}%\n",
                           to_string(static_cast<KinetoCategory>(i)), c.measured[i] * 1e3,
                           c.simulated[i] * 1e3,
                           100 * relative_error(c.simulated[i], c.measured[i]));
  }
  ctx.out << fmt::format(
      "  {:<14} {:12.3f} {:12.3f} {:>+7.1f}%  (measured: first kernel start to last kernel end; "
      "simulated: step time)\n",
      "step", c.measured_span_s * 1e3, c.simulated_step_s * 1e3,
      100 * relative_error(c.simulated_step_s, c.measured_span_s));
  if (!trace_out.empty()) {
    ctx.out << fmt::format(
        "side-by-side trace written to {} (open it in https://ui.perfetto.dev)\n", trace_out);
  }
}

void print_json(const Comparison& c, const std::string& trace_out, const CommandContext& ctx) {
  nlohmann::ordered_json j;
  j["rank"] = c.rank;
  j["categories"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < c.measured.size(); ++i) {
    j["categories"].push_back({{"category", to_string(static_cast<KinetoCategory>(i))},
                               {"measured_s", c.measured[i]},
                               {"simulated_s", c.simulated[i]},
                               {"error", relative_error(c.simulated[i], c.measured[i])}});
  }
  j["measured_span_s"] = c.measured_span_s;
  j["simulated_step_s"] = c.simulated_step_s;
  j["error"] = relative_error(c.simulated_step_s, c.measured_span_s);
  if (!trace_out.empty()) j["trace"] = trace_out;
  ctx.out << j.dump(2) << "\n";
}

}  // namespace

int run_compare_kineto(std::span<const std::string> argv, const CommandContext& ctx) {
  std::vector<OptionSpec> specs = step_flag_options();
  specs.push_back({"--kineto", "FILE", "a PyTorch profiler (Kineto) trace of one rank's step"});
  specs.push_back({"--rank", "R", "the simulated rank set beside it [the trace's rank]"});
  const Args args("compare", specs, argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Set a profiled training step beside meshsim's simulation of the same plan (the step "
        "flags): kernel time per category on the profiled rank, measured and simulated, the step "
        "span, and with --trace one Perfetto file holding both timelines.",
        "meshsim compare --kineto rank0.json --model llama3-8b --gpus 8 --tp 8 --gbs 8 --trace "
        "both.json");
    return 0;
  }
  const auto started = std::chrono::steady_clock::now();
  const OutputRequest out = read_output_request(args, ctx);
  const StepRequest req = read_step_request(args, out, ctx.err);
  const std::string path = args.get("--kineto", "");
  std::istringstream text(read_text_file(path));
  const KinetoTrace trace = read_kineto_trace(text, path);
  Comparison c;
  c.rank = static_cast<int>(args.get_int("--rank", trace.rank, 0, world_size(req.plan) - 1));
  const TracedSimulation sim = run_traced_simulation(
      build_training_step(req.model, req.plan, out.hardware.gpus_per_node), out.hardware,
      out.provenance, !out.trace_path.empty(), started, out.network);
  const bool simulated = std::any_of(sim.program.ops.begin(), sim.program.ops.end(),
                                     [&](const Op& op) { return op.rank == c.rank; });
  if (!simulated) {
    throw InputError(fmt::format(
        "--rank: rank {} is folded into another in this plan's simulation (pass --rank of a "
        "simulated rank, e.g. 0, or --no-fold)",
        c.rank));
  }
  const KinetoTimeline measured = kineto_timeline(trace, path);
  c.measured = measured.seconds;
  c.simulated = simulated_seconds(sim, c.rank);
  c.measured_span_s = measured.span_s;
  c.simulated_step_s = static_cast<double>(sim.metrics.makespan) * 1e-9;
  OutputFiles files;
  if (!out.trace_path.empty() && sim.trace) {
    const nlohmann::json both =
        side_by_side_trace(nlohmann::json::parse(*sim.trace), measured.trace);
    files.stage(out.trace_path, both.dump() + "\n", "--trace");
  }
  files.commit();
  if (out.json) {
    print_json(c, out.trace_path, ctx);
  } else {
    print_text(c, out.trace_path, ctx);
  }
  return 0;
}

}  // namespace meshsim
