#include <chrono>
#include <ostream>

#include "schedules/tp_linear.hpp"
#include "sim/error.hpp"
#include "sim/program_json.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/simulate_outputs.hpp"
#include "tools/workload_flags.hpp"

namespace meshsim {

int run_tp_linear_command(std::span<const std::string> argv, const CommandContext& ctx) {
  std::vector<OptionSpec> specs = tp_linear_flags(FlagUse::simulate);
  specs.push_back(
      {"--save-program", "FILE", "write the schedule graph as JSON (meshsim simulate reads it)"});
  for (auto& o : simulate_output_options()) specs.push_back(std::move(o));
  const Args args("tp-linear", specs, argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Simulate one tensor-parallel linear layer (Megatron/nanotron column- or row-parallel, "
        "with or without sequence parallelism) forward and backward, and report per-rank compute, "
        "communication and how much of it the overlap leaves exposed.",
        "meshsim tp-linear --tp 8 --tokens 8192 --in 8192 --out 28672 --kind column --mode "
        "reducescatter --overlap async --trace tp.json");
    return 0;
  }
  const auto started = std::chrono::steady_clock::now();
  OutputRequest out = read_output_request(args, ctx);
  const TpLinearConfig c =
      parse_tp_linear_flags(args, out.hardware.gpus_per_node, FlagUse::simulate);
  const std::string save_path = args.get("--save-program", "");

  Program program = build_tp_linear(c);
  OutputFiles files;
  if (!save_path.empty()) files.stage(save_path, program_to_text(program), "--save-program");
  const TracedSimulation result =
      run_traced_simulation(std::move(program), out.hardware, out.provenance,
                            !out.trace_path.empty(), started, out.network);
  return emit_outputs(result, out, ctx, files);
}

}  // namespace meshsim
