#include "tools/workload_flags.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

constexpr std::int64_t kBig = std::int64_t{1} << 40;

const char* dtypes(FlagUse use) {
  return use == FlagUse::validate ? "bf16|fp16|fp32|fp64" : "bf16|fp16|fp32";
}

DType parse_dtype_flag(const Args& args, FlagUse use) {
  return *parse_dtype(use == FlagUse::validate
                          ? args.get_choice("--dtype", "bf16", {"bf16", "fp16", "fp32", "fp64"})
                          : args.get_choice("--dtype", "bf16", {"bf16", "fp16", "fp32"}));
}

const char* pass_help(FlagUse use) {
  return use == FlagUse::validate ? "which passes to run [fwd+bwd]"
                                  : "which passes to simulate [fwd+bwd]";
}

// `validate` runs on CPU cores by default: its sizes are a laptop's (seconds, well under a GB per
// rank), the simulating commands' a GPU cluster's. Help text shows the default of its use.
// The validate defaults (each float64 reference a few seconds of rank 0's CPU).
constexpr std::int64_t kValidateSeq = 2048, kValidateHeads = 4, kValidateKvHeads = 2,
                       kValidateHeadDim = 64;
constexpr std::int64_t kValidateTpTokens = 512, kValidateTpIn = 512, kValidateTpOut = 1024;
constexpr std::int64_t kValidatePipeTokens = 256, kValidatePipeHidden = 256;

std::int64_t size_default(FlagUse use, std::int64_t simulate, std::int64_t validate) {
  return use == FlagUse::validate ? validate : simulate;
}

std::string with_default(std::string help, FlagUse use, std::int64_t simulate,
                         std::int64_t validate) {
  return fmt::format("{} [{}]", help, size_default(use, simulate, validate));
}

OptionSpec max_connections_flag() {
  return {"--max-connections", "N",
          "hardware queues: 1 = single queue (the default), more = several"};
}

}  // namespace

std::vector<OptionSpec> ring_attention_flags(FlagUse use) {
  return {
      {"--cp", "N", "context-parallel ranks [8]"},
      {"--seq", "S",
       with_default("sequence length, split over the ranks", use, 131072, kValidateSeq)},
      {"--batch", "B", "microbatch size [1]"},
      {"--heads", "H", with_default("query heads", use, 32, kValidateHeads)},
      {"--kv-heads", "H",
       with_default("key/value heads (grouped-query attention)", use, 8, kValidateKvHeads)},
      {"--head-dim", "D", with_default("head dimension", use, 128, kValidateHeadDim)},
      {"--dtype", dtypes(use), "storage type of q, k, v, out [bf16]"},
      {"--variant", "ring|zigzag", "load balance: none, or zigzag head-tail chunks [zigzag]"},
      {"--rotate", "p2p|allgather|alltoall", "how K/V move between ranks [p2p]"},
      {"--causal", "", "causal mask (the default)"},
      {"--no-causal", "", "full (non-causal) attention; needs --variant ring"},
      {"--pass", "fwd|bwd|fwd+bwd", pass_help(use)},
      {"--gpus-per-node", "G", "GPUs per node [the hardware profile's]"},
      max_connections_flag(),
  };
}

RingAttentionConfig parse_ring_attention_flags(const Args& args, int gpus_per_node, FlagUse use) {
  const RingAttentionConfig d;
  RingAttentionConfig c;
  c.cp = static_cast<int>(args.get_int("--cp", d.cp, 1, kMaxRingCp));
  c.seq = args.get_int("--seq", size_default(use, d.seq, kValidateSeq), 1, kBig);
  c.batch = args.get_int("--batch", d.batch, 1, kBig);
  c.heads = args.get_int("--heads", size_default(use, d.heads, kValidateHeads), 1, 1 << 20);
  c.kv_heads =
      args.get_int("--kv-heads", size_default(use, d.kv_heads, kValidateKvHeads), 1, 1 << 20);
  c.head_dim =
      args.get_int("--head-dim", size_default(use, d.head_dim, kValidateHeadDim), 1, 1 << 20);
  c.dtype = parse_dtype_flag(args, use);
  c.variant = *parse_ring_variant(args.get_choice("--variant", "zigzag", {"ring", "zigzag"}));
  c.kv_rotation =
      *parse_kv_rotation(args.get_choice("--rotate", "p2p", {"p2p", "allgather", "alltoall"}));
  if (args.has("--causal") && args.has("--no-causal")) {
    throw InputError("--causal and --no-causal contradict each other");
  }
  c.causal = !args.has("--no-causal");
  c.pass = *parse_attention_pass(args.get_choice("--pass", "fwd+bwd", {"fwd", "bwd", "fwd+bwd"}));
  c.gpus_per_node = static_cast<int>(args.get_int("--gpus-per-node", gpus_per_node, 1, 1024));
  c.single_queue = args.get_int("--max-connections", 1, 1, 32) == 1;
  return c;
}

std::vector<OptionSpec> tp_linear_flags(FlagUse use) {
  return {
      {"--tp", "T", "tensor-parallel ranks [8]"},
      {"--tokens", "N",
       with_default("rows of the input: sequence x microbatch", use, 8192, kValidateTpTokens)},
      {"--in", "D", with_default("input features of the whole layer", use, 8192, kValidateTpIn)},
      {"--out", "D",
       with_default("output features of the whole layer", use, 28672, kValidateTpOut)},
      {"--kind", "column|row",
       "column: weight split by outputs; row: weight split by inputs [column]"},
      {"--mode", "allreduce|reducescatter",
       "allreduce: no sequence parallelism; reducescatter: sequence parallelism [reducescatter]"},
      {"--overlap", "async|sync",
       "column backward: run the collective under the weight-gradient GEMM, or wait for it "
       "[async]"},
      {"--pass", "fwd|bwd|fwd+bwd", pass_help(use)},
      {"--bias", "", "the layer has a bias (adds the bias add and the bias gradient)"},
      {"--dtype", dtypes(use), "storage type of activations and weights [bf16]"},
      {"--gpus-per-node", "G", "GPUs per node [the hardware profile's]"},
      max_connections_flag(),
  };
}

TpLinearConfig parse_tp_linear_flags(const Args& args, int gpus_per_node, FlagUse use) {
  const TpLinearConfig d;
  TpLinearConfig c;
  c.tp = static_cast<int>(args.get_int("--tp", d.tp, 1, 1 << 20));
  c.tokens = args.get_int("--tokens", size_default(use, d.tokens, kValidateTpTokens), 1, kBig);
  c.in_features = args.get_int("--in", size_default(use, d.in_features, kValidateTpIn), 1, kBig);
  c.out_features =
      args.get_int("--out", size_default(use, d.out_features, kValidateTpOut), 1, kBig);
  c.kind = *parse_tp_linear_kind(args.get_choice("--kind", "column", {"column", "row"}));
  c.mode =
      *parse_tp_mode(args.get_choice("--mode", "reducescatter", {"allreduce", "reducescatter"}));
  c.overlap = *parse_tp_overlap(args.get_choice("--overlap", "async", {"async", "sync"}));
  c.pass = *parse_tp_pass(args.get_choice("--pass", "fwd+bwd", {"fwd", "bwd", "fwd+bwd"}));
  c.bias = args.has("--bias");
  c.dtype = parse_dtype_flag(args, use);
  c.gpus_per_node = static_cast<int>(args.get_int("--gpus-per-node", gpus_per_node, 1, 1024));
  c.single_queue = args.get_int("--max-connections", 1, 1, 32) == 1;
  return c;
}

std::vector<OptionSpec> pipeline_flags(FlagUse use) {
  const bool sim = use == FlagUse::simulate;
  return {
      {"--schedule", "gpipe|1f1b|interleaved|zb-h1|zb-h2|zb-v|dualpipev",
       "pipeline schedule [1f1b]"},
      {"--stages", "P", "pipeline ranks [4]"},
      {"--microbatches", "M", "microbatches per step [8]"},
      {"--chunks", "V", "model chunks per rank (interleaved) [2 for interleaved]"},
      {"--group-size", "G", "interleaved: microbatches per group [P]"},
      {"--time-f", "SECONDS",
       sim ? "forward of one microbatch through one rank's share"
           : "simulation only: forward time (accepted, not used)"},
      {"--time-b", "SECONDS",
       sim ? "input-gradient part of its backward"
           : "simulation only: input-gradient time (accepted, not used)"},
      {"--time-w", "SECONDS",
       sim ? "weight-gradient part of its backward"
           : "simulation only: weight-gradient time (accepted, not used)"},
      {"--p2p-time", "SECONDS",
       sim ? "time of every p2p transfer (else the network model)"
           : "simulation only: p2p time (accepted, not used)"},
      {"--activation-bytes", "BYTES",
       "bytes per activation/gradient message [tokens x hidden x e]"},
      {"--tokens", "N",
       with_default("tokens per microbatch of the stage workload", use, 4096, kValidatePipeTokens)},
      {"--hidden", "H",
       with_default("hidden size of the stage workload (one layer per chunk)", use, 4096,
                    kValidatePipeHidden)},
      {"--dtype", dtypes(use), "stage workload data type [bf16]"},
      {"--gpus-per-node", "G", "GPUs per node [the hardware profile's]"},
  };
}

PipelineConfig parse_pipeline_flags(const Args& args, int gpus_per_node, FlagUse use) {
  PipelineConfig c;
  c.shape.schedule = *parse_pipeline_schedule(
      args.get_choice("--schedule", "1f1b",
                      {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v", "dualpipev"}));
  c.shape.stages = static_cast<int>(args.get_int("--stages", 4, 1, 4096));
  c.shape.microbatches = static_cast<int>(args.get_int("--microbatches", 8, 1, 1 << 20));
  const bool two_chunks = c.shape.schedule == PipelineSchedule::interleaved ||
                          c.shape.schedule == PipelineSchedule::zb_v ||
                          c.shape.schedule == PipelineSchedule::dualpipev;
  c.shape.chunks = static_cast<int>(args.get_int("--chunks", two_chunks ? 2 : 1, 1, 1024));
  c.shape.group_size = static_cast<int>(args.get_int("--group-size", 0, 1, 1 << 20));
  constexpr double kMaxSeconds = 1e6;
  c.time_f = args.get_number("--time-f", -1, kMaxSeconds);
  c.time_b = args.get_number("--time-b", -1, kMaxSeconds);
  c.time_w = args.get_number("--time-w", -1, kMaxSeconds);
  c.p2p_time = args.get_number("--p2p-time", -1, kMaxSeconds);
  // 0 (absent) means tokens x hidden x e; a given value is a whole number of bytes, at least 1.
  c.activation_bytes = args.get_int("--activation-bytes", 0, 1, std::int64_t{1} << 50);
  c.tokens = args.get_int("--tokens", size_default(use, 4096, kValidatePipeTokens), 1,
                          std::int64_t{1} << 32);
  c.hidden = args.get_int("--hidden", size_default(use, 4096, kValidatePipeHidden), 1,
                          std::int64_t{1} << 20);
  c.dtype = parse_dtype_flag(args, use);
  c.gpus_per_node = static_cast<int>(args.get_int("--gpus-per-node", gpus_per_node, 1, 1024));
  return c;
}

namespace {

const WorkloadFlags kWorkloadFlags[] = {
    {"ring-attention", ring_attention_flags,
     [](const Args& a, int gpn, FlagUse use) {
       return Workload{parse_ring_attention_flags(a, gpn, use)};
     },
     [](const Workload& w) {
       return fmt::format("--cp {}", std::get<RingAttentionConfig>(w.config).cp);
     },
     "Simulate one ring-attention (context-parallel) forward and backward and report per-rank "
     "compute, communication, exposed communication and the critical path.",
     "meshsim ring-attention --cp 8 --seq 131072 --variant zigzag --rotate p2p --trace ring.json",
     "mpirun -np 4 meshsim validate ring-attention --cp 4 --seq 4096 --heads 8 --kv-heads 8 "
     "--head-dim 64 --trace measured.json"},
    {"tp-linear", tp_linear_flags,
     [](const Args& a, int gpn, FlagUse use) {
       return Workload{parse_tp_linear_flags(a, gpn, use)};
     },
     [](const Workload& w) {
       return fmt::format("--tp {}", std::get<TpLinearConfig>(w.config).tp);
     },
     "Simulate one tensor-parallel linear layer (Megatron/nanotron column- or row-parallel, "
     "with or without sequence parallelism) forward and backward, and report per-rank compute, "
     "communication and how much of it the overlap leaves exposed.",
     "meshsim tp-linear --tp 8 --tokens 8192 --in 8192 --out 28672 --kind column --mode "
     "reducescatter --overlap async --trace tp.json",
     "mpirun -np 2 meshsim validate tp-linear --tp 2 --tokens 256 --in 512 --out 1024"},
    {"pipeline", pipeline_flags,
     [](const Args& a, int gpn, FlagUse use) {
       return Workload{parse_pipeline_flags(a, gpn, use)};
     },
     [](const Workload& w) {
       return fmt::format("--stages {}", std::get<PipelineConfig>(w.config).shape.stages);
     },
     "Build a pipeline-parallel schedule op by op, simulate it, and report its makespan, bubble "
     "and per-rank in-flight activations; optionally draw it.",
     "meshsim pipeline --schedule zb-h1 --stages 4 --microbatches 8 --time-f 1 --time-b 1 "
     "--time-w 1 --p2p-time 0 --diagram zbh1.svg",
     "mpirun -np 4 meshsim validate pipeline --stages 4 --microbatches 8 --tokens 64 --hidden 64"},
};

}  // namespace

std::span<const WorkloadFlags> workload_flag_tables() {
  return kWorkloadFlags;
}

const WorkloadFlags& workload_flags(std::string_view name) {
  for (const auto& w : kWorkloadFlags) {
    if (w.name == name) return w;
  }
  MESHSIM_CHECK(false, fmt::format("no flag table for workload '{}'", name));
  return kWorkloadFlags[0];
}

}  // namespace meshsim
