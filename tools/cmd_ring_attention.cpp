#include <chrono>
#include <ostream>

#include "schedules/ring_attention.hpp"
#include "sim/error.hpp"
#include "sim/program_json.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/simulate_outputs.hpp"
#include "tools/workload_flags.hpp"

namespace meshsim {

int run_ring_attention_command(std::span<const std::string> argv, const CommandContext& ctx) {
  std::vector<OptionSpec> specs = ring_attention_flags(FlagUse::simulate);
  specs.push_back(
      {"--save-program", "FILE", "write the schedule graph as JSON (meshsim simulate reads it)"});
  for (auto& o : simulate_output_options()) specs.push_back(std::move(o));
  const Args args("ring-attention", specs, argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Simulate one ring-attention (context-parallel) forward and backward and report per-rank "
        "compute, communication, exposed communication and the critical path.",
        "meshsim ring-attention --cp 8 --seq 131072 --variant zigzag --rotate p2p --trace "
        "ring.json");
    return 0;
  }
  const auto started = std::chrono::steady_clock::now();
  OutputRequest out = read_output_request(args, ctx);
  const RingAttentionConfig c =
      parse_ring_attention_flags(args, out.hardware.gpus_per_node, FlagUse::simulate);
  const std::string save_path = args.get("--save-program", "");

  Program program = build_ring_attention(c);
  OutputFiles files;
  if (!save_path.empty()) files.stage(save_path, program_to_text(program), "--save-program");
  const TracedSimulation result =
      run_traced_simulation(std::move(program), out.hardware, out.provenance,
                            !out.trace_path.empty(), started, out.network);
  return emit_outputs(result, out, ctx, files);
}

}  // namespace meshsim
