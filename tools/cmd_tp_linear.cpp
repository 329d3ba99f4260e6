#include <chrono>
#include <ostream>

#include "schedules/tp_linear.hpp"
#include "sim/error.hpp"
#include "sim/program_json.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/simulate_outputs.hpp"

namespace meshsim {

int run_tp_linear_command(std::span<const std::string> argv, const CommandContext& ctx) {
  const TpLinearConfig d;  // the defaults
  std::vector<OptionSpec> specs = {
      {"--tp", "T", "tensor-parallel ranks [8]"},
      {"--tokens", "N", "rows of the input: sequence x microbatch [8192]"},
      {"--in", "D", "input features of the whole layer [8192]"},
      {"--out", "D", "output features of the whole layer [28672]"},
      {"--kind", "column|row",
       "column: weight split by outputs; row: weight split by inputs [column]"},
      {"--mode", "allreduce|reducescatter",
       "allreduce: no sequence parallelism; reducescatter: sequence parallelism [reducescatter]"},
      {"--overlap", "async|sync",
       "column backward: run the collective under the weight-gradient GEMM, or wait for it "
       "[async]"},
      {"--pass", "fwd|bwd|fwd+bwd", "which passes to simulate [fwd+bwd]"},
      {"--bias", "", "the layer has a bias (adds the bias add and the bias gradient)"},
      {"--dtype", "bf16|fp16|fp32", "storage type of activations and weights [bf16]"},
      {"--gpus-per-node", "G", "GPUs per node [the hardware profile's]"},
      {"--max-connections", "N", "hardware queues: 1 = single queue (the default), more = several"},
      {"--save-program", "FILE", "write the schedule graph as JSON (meshsim simulate reads it)"},
  };
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
  TpLinearConfig c;
  constexpr std::int64_t kBig = std::int64_t{1} << 40;
  c.tp = static_cast<int>(args.get_int("--tp", d.tp, 1, 1 << 20));
  c.tokens = args.get_int("--tokens", d.tokens, 1, kBig);
  c.in_features = args.get_int("--in", d.in_features, 1, kBig);
  c.out_features = args.get_int("--out", d.out_features, 1, kBig);
  c.kind = *parse_tp_linear_kind(args.get_choice("--kind", "column", {"column", "row"}));
  c.mode =
      *parse_tp_mode(args.get_choice("--mode", "reducescatter", {"allreduce", "reducescatter"}));
  c.overlap = *parse_tp_overlap(args.get_choice("--overlap", "async", {"async", "sync"}));
  c.pass = *parse_tp_pass(args.get_choice("--pass", "fwd+bwd", {"fwd", "bwd", "fwd+bwd"}));
  c.bias = args.has("--bias");
  c.dtype = *parse_dtype(args.get_choice("--dtype", "bf16", {"bf16", "fp16", "fp32"}));
  c.gpus_per_node =
      static_cast<int>(args.get_int("--gpus-per-node", out.hardware.gpus_per_node, 1, 1024));
  c.single_queue = args.get_int("--max-connections", 1, 1, 32) == 1;
  const std::string save_path = args.get("--save-program", "");

  Program program = build_tp_linear(c);
  OutputFiles files;
  if (!save_path.empty()) files.stage(save_path, program_to_text(program), "--save-program");
  const SimulationResult result = run_simulation(std::move(program), out.hardware, out.provenance,
                                                 !out.trace_path.empty(), started, out.network);
  return emit_outputs(result, out, ctx, files);
}

}  // namespace meshsim
