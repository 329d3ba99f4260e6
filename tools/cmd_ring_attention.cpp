#include <chrono>
#include <ostream>

#include "schedules/ring_attention.hpp"
#include "sim/error.hpp"
#include "sim/program_json.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/simulate_outputs.hpp"

namespace meshsim {

int run_ring_attention_command(std::span<const std::string> argv, const CommandContext& ctx) {
  const RingAttentionConfig d;  // the defaults
  std::vector<OptionSpec> specs = {
      {"--cp", "N", "context-parallel ranks [8]"},
      {"--seq", "S", "sequence length, split over the ranks [131072]"},
      {"--batch", "B", "microbatch size [1]"},
      {"--heads", "H", "query heads [32]"},
      {"--kv-heads", "H", "key/value heads (grouped-query attention) [8]"},
      {"--head-dim", "D", "head dimension [128]"},
      {"--dtype", "bf16|fp16|fp32", "storage type of q, k, v, out [bf16]"},
      {"--variant", "ring|zigzag", "load balance: none, or zigzag head-tail chunks [zigzag]"},
      {"--rotate", "p2p|allgather|alltoall", "how K/V move between ranks [p2p]"},
      {"--causal", "", "causal mask (the default)"},
      {"--no-causal", "", "full (non-causal) attention; needs --variant ring"},
      {"--pass", "fwd|bwd|fwd+bwd", "which passes to simulate [fwd+bwd]"},
      {"--gpus-per-node", "G", "GPUs per node [the hardware profile's]"},
      {"--max-connections", "N", "hardware queues: 1 = single queue (the default), more = several"},
      {"--save-program", "FILE", "write the schedule graph as JSON (meshsim simulate reads it)"},
  };
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
  RingAttentionConfig c;
  constexpr std::int64_t kBig = std::int64_t{1} << 40;
  c.cp = static_cast<int>(args.get_int("--cp", d.cp, 1, 1 << 20));
  c.seq = args.get_int("--seq", d.seq, 1, kBig);
  c.batch = args.get_int("--batch", d.batch, 1, kBig);
  c.heads = args.get_int("--heads", d.heads, 1, 1 << 20);
  c.kv_heads = args.get_int("--kv-heads", d.kv_heads, 1, 1 << 20);
  c.head_dim = args.get_int("--head-dim", d.head_dim, 1, 1 << 20);
  c.dtype = *parse_dtype(args.get_choice("--dtype", "bf16", {"bf16", "fp16", "fp32"}));
  c.variant = *parse_ring_variant(args.get_choice("--variant", "zigzag", {"ring", "zigzag"}));
  c.rotate =
      *parse_kv_rotation(args.get_choice("--rotate", "p2p", {"p2p", "allgather", "alltoall"}));
  if (args.has("--causal") && args.has("--no-causal")) {
    throw InputError("--causal and --no-causal contradict each other");
  }
  c.causal = !args.has("--no-causal");
  c.pass = *parse_attention_pass(args.get_choice("--pass", "fwd+bwd", {"fwd", "bwd", "fwd+bwd"}));
  c.gpus_per_node =
      static_cast<int>(args.get_int("--gpus-per-node", out.hardware.gpus_per_node, 1, 1024));
  c.single_queue = args.get_int("--max-connections", 1, 1, 32) == 1;
  const std::string save_path = args.get("--save-program", "");

  Program program = build_ring_attention(c);
  OutputFiles files;
  if (!save_path.empty()) files.stage(save_path, program_to_text(program), "--save-program");
  const SimulationResult result = run_simulation(std::move(program), out.hardware, out.provenance,
                                                 !out.trace_path.empty(), started, out.network);
  return emit_outputs(result, out, ctx, files);
}

}  // namespace meshsim
