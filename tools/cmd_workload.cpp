// meshsim ring-attention | tp-linear: build a registered workload's Program from its flags,
// simulate it and report per-rank compute, communication, exposed communication and the critical
// path (the pipeline adds its own report: cmd_pipeline.cpp).
#include <chrono>
#include <ostream>

#include "sim/error.hpp"
#include "sim/program_json.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/simulate_outputs.hpp"
#include "tools/workload_flags.hpp"
#include "validate/check/workload_registry.hpp"

namespace meshsim {
namespace {

int run_workload_command(std::string_view name, std::span<const std::string> argv,
                         const CommandContext& ctx) {
  const WorkloadFlags& flags = workload_flags(name);
  std::vector<OptionSpec> specs = flags.specs(FlagUse::simulate);
  specs.push_back({"--save-program", "FILE",
                   "write the schedule graph as JSON (meshsim simulate reads it)",
                   OutputKind::file});
  for (auto& o : simulate_output_options()) specs.push_back(std::move(o));
  const Args args(std::string(name), specs, argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(flags.simulate_help, flags.simulate_example);
    return 0;
  }
  const auto started = std::chrono::steady_clock::now();
  OutputRequest out = read_output_request(args, ctx);
  Workload workload = flags.parse(args, out.hardware.gpus_per_node, FlagUse::simulate);
  const std::string save_path = args.get("--save-program", "");
  // Tensor slots are what `validate` runs a saved Program on; the simulation does not read them.
  if (auto* ring = std::get_if<RingAttentionConfig>(&workload.config); ring && save_path.empty()) {
    ring->tensor_slots = false;
  }

  OutputFiles files;
  const TracedSimulation result =
      simulate_requested(build_program(workload), out, save_path, started, files);
  return emit_outputs(result, out, ctx, files);
}

}  // namespace

int run_ring_attention_command(std::span<const std::string> argv, const CommandContext& ctx) {
  return run_workload_command("ring-attention", argv, ctx);
}

int run_tp_linear_command(std::span<const std::string> argv, const CommandContext& ctx) {
  return run_workload_command("tp-linear", argv, ctx);
}

}  // namespace meshsim
