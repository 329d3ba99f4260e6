#include "tools/sweep_flags.hpp"

#include <charconv>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "schedules/precision.hpp"
#include "sim/error.hpp"
#include "tools/cross_entropy_flag.hpp"
#include "tools/field_flags.hpp"
#include "tools/layer_kernels_flag.hpp"
#include "tools/model_flag.hpp"
#include "tools/moe_flags.hpp"
#include "tools/sharding_flags.hpp"
#include "tools/simulate_outputs.hpp"
#include "tools/sweep.hpp"
#include "tools/tp_overlap_flag.hpp"

namespace meshsim {
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) out.push_back(item);
  if (text.ends_with(',')) out.emplace_back();  // "2,4," has an empty last item, as "2,,4" has
  return out;
}

std::vector<std::int64_t> int_list(const Args& args, std::string_view flag,
                                   std::string_view fallback, std::int64_t max) {
  std::vector<std::int64_t> out;
  const std::string text = args.get(flag, fallback);
  for (const auto& item : split_list(text)) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v < 1 || v > max) {
      throw InputError(fmt::format(
          "{}: expected a comma-separated list of integers in [1, {}], got '{}'", flag, max, text));
    }
    out.push_back(v);
  }
  if (out.empty()) throw InputError(fmt::format("{}: expected at least one value", flag));
  return out;
}

std::vector<int> small_list(const Args& args, std::string_view flag, std::string_view fallback) {
  std::vector<int> out;
  for (std::int64_t v : int_list(args, flag, fallback, 1 << 20)) out.push_back(static_cast<int>(v));
  return out;
}

template <class Enum, class Parse>
std::vector<Enum> enum_list(const Args& args, std::string_view flag, std::string_view fallback,
                            Parse parse, std::string_view expected) {
  std::vector<Enum> out;
  for (const auto& item : split_list(args.get(flag, fallback))) {
    const auto v = parse(item);
    if (!v) {
      throw InputError(
          fmt::format("{}: expected a comma-separated list of {}, got '{}'", flag, expected, item));
    }
    out.push_back(*v);
  }
  if (out.empty()) throw InputError(fmt::format("{}: expected at least one value", flag));
  return out;
}

// The shardings searched: the --sharding list, or the one the step's sharding flags pin.
void read_sweep_sharding(const Args& args, const PlanLists& defaults, PlanLists& lists) {
  StepPlan& base = lists.base;
  base.distributed_optimizer = args.has("--distributed-optimizer");
  read_sharding(args, base);
  const bool pinned = args.has("--distributed-optimizer") || args.has("--zero") ||
                      args.has("--fsdp") || args.has("--hsdp") ||
                      args.has("--no-reshard-after-forward") || args.has("--fsdp-no-sync");
  if (pinned && args.has("--sharding")) {
    throw InputError(
        "--sharding searches shardings; --zero, --fsdp, --hsdp, --no-reshard-after-forward, "
        "--fsdp-no-sync and --distributed-optimizer pin one: give one or the "
        "other");
  }
  lists.sharding =
      pinned ? std::vector<ShardingChoice>{sharding_choice(base)}
             : enum_list<ShardingChoice>(args, "--sharding", list_text(defaults.sharding),
                                         parse_sharding_choice, "none, zero1, zero2, zero3, fsdp");
}

}  // namespace

std::vector<OptionSpec> sweep_options() {
  std::vector<OptionSpec> specs = {
      {"--model", "NAME|FILE",
       fmt::format("{}, a JSON file, or a Hugging Face config.json or its folder [llama3-70b]",
                   fmt::join(builtin_model_names(), ", "))},
      {"--gpus", "N", "GPUs in the cluster [1024]"},
      {"--nodes", "N", "nodes instead of --gpus (x the profile's GPUs per node)"},
      {"--hardware", "NAME|FILE", "hardware profile [h100-sxm]"},
      {"--attention-kernel", "NAME",
       "attention kernel family from the profile's attention_kernels [the profile's]"},
      host_op_option(),
      {"--tp", "LIST", "tensor-parallel sizes [1,2,4,8]"},
      {"--pp", "LIST", "pipeline-parallel sizes [1,2,4,8,16]"},
      {"--cp", "LIST", "context-parallel sizes [1,2,4]"},
      {"--vp", "LIST", "chunks per pipeline rank for the interleaved schedule [1,2]"},
      {"--mbs", "LIST", "microbatch sizes (sequences) [1,2]"},
      {"--schedule", "LIST",
       "pipeline schedules: gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v, dualpipev "
       "[1f1b,interleaved,zb-h1]"},
      {"--cp-variant", "LIST", "ring, zigzag [zigzag]"},
      {"--ep", "LIST", "expert-parallel sizes of an MoE model (folded onto tp x cp x dp) [1]"},
      {"--etp", "LIST", "expert tensor-parallel sizes of an MoE model [tp]"},
      {"--moe-token-dispatcher", "alltoall|allgather|flex",
       "how tokens reach their experts, in every plan (meshsim step --help) [alltoall]"},
      {"--moe-shared-expert-overlap", "",
       "the shared experts beside the all-to-alls, in every plan (meshsim step --help)"},
      {"--cp-rotate", "p2p|allgather|alltoall", "K/V rotation of the CP ring [p2p]"},
      {"--seq", "S", "sequence length [8192]"},
      {"--gbs", "B", "global batch in sequences [512]"},
      {"--recompute", "LIST",
       "activation recompute: none, selective, full, selective-op (a list searches them; a "
       "selective-op plan computes torchtitan's torch-fp32 loss unless --cross-entropy pins one) "
       "[selective]"},
      {"--sharding", "LIST",
       "shardings searched: none, zero1 (Megatron's distributed optimizer), zero2, zero3, fsdp "
       "(FSDP2); --zero, --fsdp, --hsdp or --distributed-optimizer pin one instead [zero1]"},
      {"--attention", "flash|materialized",
       "attention core: fused FlashAttention, or QK^T / softmax / dropout / PV over kept s x s "
       "scores as Megatron-LM before FlashAttention (cp 1) [flash]"},
      cross_entropy_option(),
      layer_kernels_option(),
      {"--distributed-optimizer", "",
       "shard the optimizer state over data-parallel ranks (= --sharding zero1)"},
      {"--no-sequence-parallel", "", "keep activations whole on every TP rank"},
      {"--jobs", "K", "plans simulated at once [the machine's hardware threads]"},
      {"--out", "FILE.csv|FILE.json",
       "write every row (byte-identical for any --jobs and under mpirun)", OutputKind::file},
      {"--top", "K", "plans shown [10]"},
      {"--trace-best", "FILE", "write the Chrome trace of the fastest plan", OutputKind::file},
      {"--json", "",
       "print the rows as one JSON object instead of the table, with every rejected combination "
       "(\"rejected\": its rule id and reason)"},
      {"--csv", "", "print the rows as CSV instead of the table"},
      {"--why", "PLAN",
       "explain one combination instead of sweeping, written as the table labels plans "
       "('tp4 pp2 cp1 vp1 mbs1 1f1b'; a field left out is its list's single value): the rule it "
       "breaks with its numbers, or its memory and simulated step"},
  };
  specs.push_back({"--precision", "LIST",
                   "precisions searched, Transformer Engine's recipes for the linears: bf16, "
                   "fp8-delayed, fp8-current, fp8-blockwise, mxfp8, nvfp4 (meshsim step "
                   "--help says what each models) [bf16]"});
  specs.push_back(tp_comm_overlap_option());
  specs.push_back(tp_overlap_rs_option());
  for (auto& o : sharding_options()) specs.push_back(std::move(o));
  return specs;
}

// The plan lists of the flags: the cluster size (--gpus or --nodes), the tp, pp, cp, vp, mbs,
// schedule and CP-variant lists, and the settings every plan shares (seq, gbs, recompute, ...).
PlanLists sweep_plan_lists(const Args& args, const HardwareProfile& hw) {
  const PlanLists defaults = default_plan_lists(hw.gpus_per_node);
  PlanLists lists;
  lists.gpus_per_node = hw.gpus_per_node;
  if (args.has("--gpus") && args.has("--nodes")) {
    throw InputError("--gpus and --nodes contradict each other: give one");
  }
  lists.gpus = args.has("--nodes")
                   ? static_cast<int>(args.get_int("--nodes", 1, 1, 1 << 17)) * hw.gpus_per_node
                   : static_cast<int>(args.get_int("--gpus", defaults.gpus, 1, 1 << 20));
  lists.tp = small_list(args, "--tp", list_text(defaults.tp));
  lists.pp = small_list(args, "--pp", list_text(defaults.pp));
  lists.cp = small_list(args, "--cp", list_text(defaults.cp));
  lists.vp = small_list(args, "--vp", list_text(defaults.vp));
  lists.mbs = int_list(args, "--mbs", list_text(defaults.mbs), 1 << 16);
  lists.schedules = enum_list<PipelineSchedule>(args, "--schedule", list_text(defaults.schedules),
                                                parse_pipeline_schedule,
                                                "gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipev");
  lists.cp_variants = enum_list<RingVariant>(args, "--cp-variant", list_text(defaults.cp_variants),
                                             parse_ring_variant, "ring, zigzag");
  lists.ep = small_list(args, "--ep", "1");
  if (args.has("--etp")) lists.etp = small_list(args, "--etp", "1");
  lists.base.moe.dispatcher = read_token_dispatcher(args);
  lists.base.moe.shared_expert_overlap = args.has("--moe-shared-expert-overlap");
  StepPlan& base = lists.base;
  base.seq = args.get_int("--seq", defaults.base.seq, 1, std::int64_t{1} << 24);
  base.global_batch = args.get_int("--gbs", defaults.base.global_batch, 1, std::int64_t{1} << 24);
  base.kv_rotation = *parse_kv_rotation(args.get_choice(
      "--cp-rotate", to_string(defaults.base.kv_rotation), {"p2p", "allgather", "alltoall"}));
  lists.recompute = enum_list<Recompute>(args, "--recompute", list_text(defaults.recompute),
                                         parse_recompute, "none, selective, full, selective-op");
  base.recompute = lists.recompute.front();
  base.attention =
      *parse_attention_core(args.get_choice("--attention", "flash", {"flash", "materialized"}));
  lists.cross_entropy = given_cross_entropy(args);
  read_layer_kernels(args, base);
  read_sweep_sharding(args, defaults, lists);
  lists.precision = enum_list<Precision>(args, "--precision", "bf16", parse_precision,
                                         "bf16, fp8-delayed, fp8-current, fp8-blockwise, mxfp8, "
                                         "nvfp4");
  for (const Precision p : lists.precision) check_precision_hardware(p, hw, "--precision");
  base.precision = lists.precision.front();
  base.sequence_parallel = !args.has("--no-sequence-parallel");
  if (args.has("--tp-comm-overlap") && !base.sequence_parallel) {
    throw InputError(
        "--tp-comm-overlap needs sequence parallelism: Transformer Engine's userbuffers overlap "
        "replaces its all-gathers and reduce-scatters (drop --no-sequence-parallel)");
  }
  read_tp_comm_overlap(args, hw, base);  // plans with tp > 1 (schedules/plan_space)
  return lists;
}

}  // namespace meshsim
