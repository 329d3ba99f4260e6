// meshsim step: one whole training step of a transformer model on a parallel mesh —
// step time, throughput, MFU, memory per pipeline stage (OOM is reported, and still simulated),
// where the time goes, and optionally the Chrome trace.
#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/memory_model.hpp"
#include "schedules/model_catalog.hpp"
#include "schedules/tp_emitter.hpp"
#include "schedules/training_step.hpp"
#include "sim/comm_volume.hpp"
#include "sim/error.hpp"
#include "sim/flow_fold.hpp"
#include "sim/program_json.hpp"
#include "sim/step_metrics.hpp"
#include "sim/time.hpp"
#include "tools/commands.hpp"
#include "tools/cross_entropy_flag.hpp"
#include "tools/layer_kernels_flag.hpp"
#include "tools/memory_report.hpp"
#include "tools/model_flag.hpp"
#include "tools/moe_flags.hpp"
#include "tools/moe_report.hpp"
#include "tools/output_file.hpp"
#include "tools/precision_flag.hpp"
#include "tools/run_report.hpp"
#include "tools/sharding_flags.hpp"
#include "tools/simulate_outputs.hpp"
#include "tools/step_plan_json.hpp"
#include "tools/step_request.hpp"
#include "tools/sweep.hpp"
#include "tools/tp_overlap_flag.hpp"

namespace meshsim {
namespace {

inline constexpr int kStepSchemaVersion = 1;

// The "simulated" line's account of what was built.
std::string folding_summary(const StepPlan& p, int gpus_per_node) {
  const bool dp = p.fold_dp && p.dp > 1;
  const bool tp = folds_tp(p, gpus_per_node);
  if (dp && tp) {
    return fmt::format(
        "tensor and data parallelism folded (tp index 0 of dp index 0 built: {} of {} ranks)",
        world_size(p) / (p.tp * p.dp), world_size(p));
  }
  if (tp) {
    return fmt::format("tensor parallelism folded (tp index 0 built: {} of {} ranks)",
                       world_size(p) / p.tp, world_size(p));
  }
  if (dp) return fmt::format("data parallelism folded (dp index 0 built, {} replicas)", p.dp);
  return "every rank built";
}

// Everything meshsim step prints.
struct StepReport {
  const TransformerModel& model;
  const StepPlan& plan;
  const std::string& note;
  MemoryEstimate mem;
  TracedSimulation result;
  StepEvaluation eval;
  TimeBreakdown breakdown;
};

std::vector<OptionSpec> step_options() {
  std::vector<OptionSpec> specs = {
      {"--model", "NAME|FILE",
       fmt::format("transformer model: a built-in ({}), a JSON file, or a Hugging Face "
                   "config.json or its folder [llama3-8b]",
                   fmt::join(builtin_model_names(), ", "))},
      {"--gpus", "N", "GPUs in the mesh [8]"},
      {"--nodes", "N", "nodes instead of --gpus (GPUs = nodes x the profile's GPUs per node)"},
      {"--tp", "T", "tensor-parallel size [min(8, GPUs)]"},
      {"--pp", "P", "pipeline-parallel size [1]"},
      {"--cp", "C", "context-parallel size [1]"},
      {"--dp", "D", "data-parallel size [GPUs / (tp x pp x cp)]"},
      {"--vp", "V", "model chunks per pipeline rank, interleaved schedule [2 interleaved, else 1]"},
      {"--microbatch-group-size", "G",
       "interleaved schedule: consecutive microbatches run per chunk (Megatron-LM's "
       "--microbatch-group-size-per-virtual-pipeline-stage), pp <= G <= microbatches [pp]"},
      {"--mbs", "B", "sequences per microbatch [1]"},
      {"--gbs", "G", "sequences per step [dp x mbs x max(8, 2 x pp)]"},
      {"--seq", "S", "sequence length [the model's]"},
      {"--schedule", "gpipe|1f1b|interleaved|zb-h1|zb-h2|zb-v|dualpipev",
       "pipeline schedule [1f1b]"},
      {"--cp-variant", "ring|zigzag", "ring-attention load balance [zigzag]"},
      {"--cp-rotate", "p2p|allgather|alltoall", "how K/V move around the CP ring [p2p]"},
      {"--recompute", "none|selective|full|selective-op",
       "activation recomputation; selective-op: torchtitan's op-level policy (save every other "
       "matmul's output; its loss, torch-fp32, becomes the --cross-entropy default) [none]"},
      {"--num-microbatches-with-partial-activation-checkpoints", "N|auto",
       "micro-batch-level recompute (Korthikanti et al. 2022, App. C; Megatron-LM's flag), with "
       "--recompute selective|full: in each rank's window of outstanding backward passes the "
       "first N forwards keep all activations and skip the recompute; auto: the largest N whose "
       "memory fits [unset: every microbatch recomputes]"},
      {"--attention", "flash|materialized",
       "attention core: fused FlashAttention, or QK^T / softmax / dropout / PV over kept s x s "
       "scores as Megatron-LM before FlashAttention (cp 1) [flash]"},
      cross_entropy_option(),
      layer_kernels_option(),
      {"--distributed-optimizer", "",
       "shard the optimizer over dp x cp: gradient reduce-scatter + parameter all-gather"},
      {"--no-overlap-grad-reduce", "",
       "reduce the gradients after the whole backward (Megatron-LM without "
       "--overlap-grad-reduce) instead of bucket by bucket during it"},
      {"--no-grad-reduce-in-fp32", "",
       "keep and reduce the gradients in the parameters' dtype instead of fp32 (Megatron-Core's "
       "grad_reduce_in_fp32=False, as Megatron-Bridge's performance recipes run): half the "
       "gradient buffer and the data-parallel reduction bytes; no ZeRO-2/3 or FSDP"},
      {"--fp8-param-gather", "",
       "with --precision fp8-delayed|fp8-current and --distributed-optimizer: the linear weights "
       "are FP8 parameters (no bf16 copy), cast from the fp32 master shard after the step and "
       "all-gathered in FP8 (Megatron's --fp8-param-gather); dense models"},
      {"--overlap-param-gather", "",
       "with --distributed-optimizer: the parameter all-gathers run during the forward, bucket "
       "by bucket (Megatron-Core's --overlap-param-gather)"},
      {"--no-sequence-parallel", "", "TP all-reduces instead of all-gather/reduce-scatter"},
      {"--dp-buckets", "N", "gradient buckets per model chunk [4]"},
      {"--decoder-first-pipeline-num-layers", "N",
       "layers of the first pipeline rank (Megatron-LM's flag); the other ranks share the rest "
       "evenly [even split, else Megatron's uneven first/last rule]"},
      {"--decoder-last-pipeline-num-layers", "N", "layers of the last pipeline rank, likewise"},
      {"--layers-per-stage", "L0,L1,...",
       "layers of each of the pp x vp global stages in model order (stage c x pp + r is chunk c "
       "of rank r when interleaved), 0 allowed: any split, e.g. 2,3,3,3,3,3,3,2"},
      {"--no-fold", "",
       "simulate every rank (default: only tp index 0 and dp index 0 are built, TP and DP "
       "collectives timed for the whole group)"},
  };
  specs.push_back(precision_option());
  specs.push_back(tp_comm_overlap_option());
  specs.push_back(tp_overlap_rs_option());
  for (auto& o : sharding_options()) specs.push_back(std::move(o));
  for (auto& o : moe_options()) specs.push_back(std::move(o));
  for (auto& o : simulate_output_options()) specs.push_back(std::move(o));
  specs.push_back(host_op_option());
  return specs;
}

// --decoder-first/last-pipeline-num-layers and --layers-per-stage (checked against the model and
// the pipeline by check_step_plan).
LayerLayout layer_layout(const Args& args) {
  LayerLayout l;
  constexpr std::int64_t kMaxLayers = 1 << 20;
  for (const auto& [flag, field] :
       {std::pair{"--decoder-first-pipeline-num-layers", &l.decoder_first_pipeline_num_layers},
        std::pair{"--decoder-last-pipeline-num-layers", &l.decoder_last_pipeline_num_layers}}) {
    if (args.has(flag)) *field = static_cast<int>(args.get_int(flag, 0, 0, kMaxLayers));
  }
  if (!args.has("--layers-per-stage")) return l;
  const std::string text = args.get("--layers-per-stage", "");
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    int v = 0;
    const auto [end, ec] = std::from_chars(text.data() + at, text.data() + comma, v);
    if (ec != std::errc() || end != text.data() + comma || comma == at || v < 0 || v > kMaxLayers) {
      throw InputError(fmt::format(
          "--layers-per-stage: expected a comma-separated list of layer counts >= 0, got '{}'",
          text));
    }
    l.layers_per_stage.push_back(v);
    at = comma + 1;
  }
  return l;
}

constexpr std::string_view kPartialCheckpoints =
    "--num-microbatches-with-partial-activation-checkpoints";

// Micro-batch-level recompute's N from its flag; true for `auto` (chosen once the plan is checked).
bool read_partial_checkpoints(const Args& args, StepPlan& p) {
  if (args.get(kPartialCheckpoints, "") == "auto") return true;
  if (args.has(kPartialCheckpoints)) {
    p.num_microbatches_with_partial_activation_checkpoints =
        static_cast<int>(args.get_int(kPartialCheckpoints, 0, 0, 1 << 20));
  }
  return false;
}

// `auto`: the largest N whose memory fits (the paper's "all the available device memory").
void fit_partial_checkpoints(const TransformerModel& model, StepPlan& p,
                             const HardwareProfile& hardware) {
  if (p.recompute == Recompute::none) {
    throw InputError(
        fmt::format("{} auto needs --recompute selective or full", kPartialCheckpoints));
  }
  p.num_microbatches_with_partial_activation_checkpoints =
      fitting_whole_microbatches(model, p, hardware);
}

// The optimizer, sharding and overlap flags: --distributed-optimizer, ZeRO / FSDP,
// --overlap-param-gather, --no-overlap-grad-reduce, --tp-comm-overlap (after
// --no-sequence-parallel).
void read_optimizer_and_overlap(const Args& args, const HardwareProfile& hardware, StepPlan& p) {
  p.distributed_optimizer = args.has("--distributed-optimizer");
  p.overlap_param_gather = args.has("--overlap-param-gather");
  read_sharding(args, p);
  p.overlap_grad_reduce = !args.has("--no-overlap-grad-reduce");
  if (!p.overlap_grad_reduce && p.sharding.zero >= 2) {
    throw InputError(
        "--no-overlap-grad-reduce applies without gradient sharding: with --zero 2/3 or --fsdp the "
        "gradients are reduce-scattered as the backward releases them");
  }
  if (p.overlap_param_gather && !p.distributed_optimizer) {
    throw InputError("--overlap-param-gather needs --distributed-optimizer");
  }
  p.grad_reduce_in_fp32 = !args.has("--no-grad-reduce-in-fp32");
  p.fp8_param_gather = args.has("--fp8-param-gather");
  if (!p.grad_reduce_in_fp32 && p.sharding.zero >= 2) {
    throw InputError(
        "--no-grad-reduce-in-fp32 applies to Megatron-Core's DDP gradient buffer: with --zero 2/3 "
        "or --fsdp the gradient shards are reduced in their own dtype");
  }
  read_tp_comm_overlap(args, hardware, p);
}

// The plan the flags describe (flags checked, defaults filled); a flow-level run unfolds where
// its ports do not fold.
StepRequest parse_step_request(const Args& args, const OutputRequest& out, std::ostream& err) {
  StepRequest req{load_model_flag(args.get("--model", "llama3-8b"), err), {}, {}};
  const TransformerModel& model = req.model;
  StepPlan& p = req.plan;
  std::string& note = req.note;
  if (args.has("--gpus") && args.has("--nodes")) {
    throw InputError("--gpus and --nodes are alternatives: give one of them");
  }
  const int gpn = out.hardware.gpus_per_node;
  const std::int64_t gpus = args.has("--nodes") ? args.get_int("--nodes", 1, 1, 1 << 17) * gpn
                                                : args.get_int("--gpus", 8, 1, 1 << 20);
  p.tp = static_cast<int>(args.get_int("--tp", std::min<std::int64_t>(8, gpus), 1, 1 << 16));
  p.pp = static_cast<int>(args.get_int("--pp", 1, 1, 1 << 16));
  p.cp = static_cast<int>(args.get_int("--cp", 1, 1, 1 << 16));
  const std::int64_t tpc = std::int64_t{p.tp} * p.pp * p.cp;
  if (args.has("--dp")) {
    p.dp = static_cast<int>(args.get_int("--dp", 1, 1, 1 << 20));
    if (tpc * p.dp != gpus) {
      throw InputError(fmt::format(
          "--tp x --pp x --cp x --dp = {} x {} x {} x {} = {} must equal the {} GPUs (--gpus / "
          "--nodes)",
          p.tp, p.pp, p.cp, p.dp, tpc * p.dp, gpus));
    }
  } else {
    if (gpus % tpc != 0) {
      throw InputError(
          fmt::format("--gpus {} must be divisible by --tp x --pp x --cp = {} (dp is what is left)",
                      gpus, tpc));
    }
    p.dp = static_cast<int>(gpus / tpc);
  }
  p.schedule = *parse_pipeline_schedule(
      args.get_choice("--schedule", "1f1b",
                      {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v", "dualpipev"}));
  p.vp = static_cast<int>(
      args.get_int("--vp", p.schedule == PipelineSchedule::interleaved ? 2 : 1, 1, 1024));
  p.microbatch_group_size =
      static_cast<int>(args.get_int("--microbatch-group-size", 0, 1, 1 << 20));
  p.microbatch_size = args.get_int("--mbs", 1, 1, 1 << 20);
  p.global_batch =
      args.get_int("--gbs", std::int64_t{p.dp} * p.microbatch_size * std::max(8, 2 * p.pp), 1,
                   std::int64_t{1} << 40);
  p.seq = args.get_int("--seq", model.seq_len, 1, std::int64_t{1} << 30);
  p.cp_variant = *parse_ring_variant(args.get_choice("--cp-variant", "zigzag", {"ring", "zigzag"}));
  p.kv_rotation =
      *parse_kv_rotation(args.get_choice("--cp-rotate", "p2p", {"p2p", "allgather", "alltoall"}));
  p.recompute = *parse_recompute(
      args.get_choice("--recompute", "none", {"none", "selective", "full", "selective-op"}));
  p.attention =
      *parse_attention_core(args.get_choice("--attention", "flash", {"flash", "materialized"}));
  read_cross_entropy(args, p);
  read_layer_kernels(args, p);
  read_precision(args, out.hardware, p);
  p.sequence_parallel = !args.has("--no-sequence-parallel");
  read_optimizer_and_overlap(args, out.hardware, p);
  p.dp_buckets = static_cast<int>(args.get_int("--dp-buckets", 4, 1, 1024));
  p.layout = layer_layout(args);
  p.fold_dp = !args.has("--no-fold");
  p.fold_tp = p.fold_dp;
  p.moe = read_moe_plan(args);
  const bool auto_whole = read_partial_checkpoints(args, p);
  check_step_plan(model, p);
  if (auto_whole) fit_partial_checkpoints(model, p, out.hardware);
  if (model.moe && (p.fold_dp || p.fold_tp) && !moe_folds(p, gpn)) {
    note =
        "every rank simulated: the expert groups lie on the nodes differently, so no one group "
        "stands for the others";
    p.fold_dp = false;
    p.fold_tp = false;
  }
  if (out.network.flow && ((p.fold_dp && p.dp > 1) || (p.fold_tp && p.tp > 1))) {
    // The flow model folds only where the folded ranks' ports fold with them (sim/flow_fold.hpp).
    std::vector<std::string> dims;
    if (folds_tp(p, gpn)) dims.emplace_back("tp");
    if (p.fold_dp && p.dp > 1) dims.emplace_back("dp");
    // The expert groups fold along other coordinates than tp and dp: MoE models unfold.
    if (model.moe || !flow_folds_exactly(make_megatron_mesh(p.tp, p.cp, p.dp, p.pp, gpn),
                                         out.hardware.network, out.network.options, dims)) {
      note =
          "--network flow simulates every rank here (shifting the folded ranks would move GPUs "
          "of one node, NIC, uplink or leaf switch apart)";
      p.fold_dp = false;
      p.fold_tp = false;
    }
  }
  return req;
}

void print_step_json(const StepReport& r, const OutputRequest& out, const CommandContext& ctx) {
  const MemoryEstimate& mem = r.mem;
  const TracedSimulation& result = r.result;
  const TimeBreakdown& b = r.breakdown;
  nlohmann::ordered_json j;
  j["schema_version"] = kStepSchemaVersion;
  j["meshsim_version"] = MESHSIM_VERSION;
  j["command"] = out.provenance.command_line;
  j["hardware"] = {{"name", out.provenance.hardware_name}, {"hash", out.provenance.hardware_hash}};
  j["plan"] = plan_json(r.model, r.plan);
  j["world_size"] = world_size(r.plan);
  j["step_time_s"] = r.eval.step_time_s;
  j["tokens_per_s"] = r.eval.tokens_per_s;
  j["mfu"] = r.eval.mfu;
  j["mfu_full_attention"] = r.eval.mfu_full_attention;
  j["memory"] = to_json(mem);
  j["oom"] = mem.oom;
  j["breakdown"] = {{"compute_s", b.compute},
                    {"exposed_tp_comm_s", b.exposed_of("tp")},
                    {"exposed_cp_comm_s", b.exposed_of("cp")},
                    {"exposed_ep_comm_s", b.exposed_of("ep")},
                    {"exposed_pp_comm_s", b.exposed_of("pp")},
                    {"exposed_dp_comm_s", b.exposed_of("dp")},
                    {"bubble_s", b.bubble},
                    {"averaged_over", "simulated ranks"}};
  {
    // Bytes one rank sends per dimension over the step (mean over the simulated ranks).
    const std::vector<double> bytes = comm_bytes_per_rank(result.program);
    nlohmann::ordered_json per_dim;
    for (std::size_t i = 0; i < bytes.size(); ++i) per_dim[std::string(kCommDims[i])] = bytes[i];
    j["comm_bytes_per_rank"] = per_dim;
  }
  nlohmann::ordered_json cpath = nlohmann::ordered_json::array();
  for (const auto& c : result.metrics.critical_path) {
    cpath.push_back({{"category", c.category}, {"time_s", ns_to_seconds(c.time)}, {"ops", c.ops}});
  }
  j["critical_path"] = cpath;
  if (r.model.moe) j["moe"] = to_json(moe_breakdown(r.model, r.plan, result, b));
  j["layer_split"] = mem.split.rule;
  j["network"] = out.network.flow ? "flow" : "analytical";
  if (result.flows) {
    j["links"] = link_stats_json(*result.flows, result.timeline);
    j["collectives"] = collective_bandwidth_json(result);
  }
  j["ops"] = result.program.ops.size();
  j["events"] = result.timeline.events;
  if (!r.note.empty()) j["note"] = r.note;
  j["wall_s"] = result.wall_s;
  ctx.out << j.dump(2) << "\n";
}

// ", micro-batch-level N" when some microbatches keep their activations whole.
std::string micro_level(const StepPlan& p) {
  const auto& n = p.num_microbatches_with_partial_activation_checkpoints;
  return n ? fmt::format(" (micro-batch-level, {} whole per window)", *n) : "";
}

void print_step_text(const StepReport& r, const OutputRequest& out, const CommandContext& ctx) {
  const TransformerModel& model = r.model;
  const StepPlan& p = r.plan;
  const MemoryEstimate& mem = r.mem;
  const TracedSimulation& result = r.result;
  const TimeBreakdown& b = r.breakdown;
  const std::string& note = r.note;
  const int world = world_size(p);
  const int gpn = out.hardware.gpus_per_node;
  const std::int64_t seq = p.seq;
  const double step_s = r.eval.step_time_s, tokens_per_s = r.eval.tokens_per_s, mfu = r.eval.mfu;
  std::string s;
  s += fmt::format(
      "meshsim step: {} on {} GPUs ({} x {}, {} per node): tp {} pp {} cp {} dp {}{}\n", model.name,
      world, (world + gpn - 1) / gpn, out.hardware.name, gpn, p.tp, p.pp, p.cp, p.dp,
      p.schedule == PipelineSchedule::interleaved ? fmt::format(" vp {}", p.vp) : "");
  s += fmt::format(
      "  {} schedule, {} microbatches of {} x {} tokens (gbs {}), recompute {}{}, {}sequence "
      "parallel, {}{}\n",
      to_string(p.schedule), microbatches(p), p.microbatch_size, seq, p.global_batch,
      std::string(to_string(p.recompute)) + micro_level(p),
      std::string(p.attention == AttentionCore::flash ? "" : ", attention materialized") +
          (p.cross_entropy == CrossEntropy::vocab_parallel ? "" : ", cross entropy torch-fp32") +
          (p.layer_kernels == LayerKernels::fused
               ? ""
               : fmt::format(", layer kernels {}", to_string(p.layer_kernels))),
      p.sequence_parallel ? "" : "no ",
      p.sharding.zero >= 2
          ? "sharding " + describe_sharding(p.sharding)
          : (p.distributed_optimizer ? "distributed optimizer" : "replicated optimizer"),
      p.cp > 1 ? fmt::format(", CP {} / {}", to_string(p.cp_variant), to_string(p.kv_rotation))
               : "");
  s += precision_line(p, out.hardware);
  if (p.tp_comm_overlap) {
    s += fmt::format(
        "  TP comm overlap: userbuffers ring exchange ({} chunks), {}, bulk backward\n", p.tp,
        p.tp_overlap_rs == TpOverlapRs::ring_exchange
            ? fmt::format("ring-exchange reduce-scatter ({} chunks, GEMMs on {} of {} SMs)", p.tp,
                          p.gpu_sms - kTpOverlapRingRsSms, p.gpu_sms)
            : fmt::format("pipelined reduce-scatter ({} chunks, GEMMs on {} of {} SMs)",
                          kTpOverlapSplits, p.gpu_sms - kTpOverlapCommSms, p.gpu_sms));
  }
  if (model.moe) s += moe_lines(model, p, moe_breakdown(model, p, result, b));
  s += fmt::format("step time      {:.6f} s\n", step_s);
  s += fmt::format("tokens/s       {:.1f}\n", tokens_per_s);
  s += fmt::format(
      "MFU            {:.2f} % (model FLOPs {:.4g} per token, causal attention); "
      "{:.2f} % counting full attention as papers do\n",
      100.0 * mfu, training_flops_per_token(model, seq), 100.0 * r.eval.mfu_full_attention);
  s += memory_text(mem);
  s += fmt::format(
      "time per rank  compute {:.6f} s, exposed comm: tp {:.6f} s, cp {:.6f} s, {}pp {:.6f} s, dp "
      "{:.6f} s; bubble/idle {:.6f} s (mean over simulated ranks)\n",
      b.compute, b.exposed_of("tp"), b.exposed_of("cp"),
      model.moe ? fmt::format("ep {:.6f} s, ", b.exposed_of("ep")) : "", b.exposed_of("pp"),
      b.exposed_of("dp"), b.bubble);
  s += "critical path ";
  for (std::size_t i = 0; i < result.metrics.critical_path.size() && i < 8; ++i) {
    const auto& c = result.metrics.critical_path[i];
    s += fmt::format("{}{} {:.1f}%", i == 0 ? "" : ", ", c.category,
                     step_s > 0 ? 100.0 * ns_to_seconds(c.time) / step_s : 0.0);
  }
  s += "\n";
  s += fmt::format("simulated      {} ops, {} events, {} network, {}; wall {:.3f} s\n",
                   result.program.ops.size(), result.timeline.events,
                   out.network.flow ? "flow" : "analytical",
                   folding_summary(p, out.hardware.gpus_per_node), result.wall_s);
  if (!note.empty()) s += fmt::format("note           {}\n", note);
  if (!out.trace_path.empty()) {
    s += fmt::format("trace written to {} (open it in https://ui.perfetto.dev)\n", out.trace_path);
  }
  ctx.out << s;
}

}  // namespace

std::vector<OptionSpec> step_flag_options() {
  return step_options();
}

StepRequest read_step_request(const Args& args, const OutputRequest& out, std::ostream& err) {
  return parse_step_request(args, out, err);
}

int run_step_command(std::span<const std::string> argv, const CommandContext& ctx) {
  std::vector<OptionSpec> specs = step_options();
  specs.push_back({"--save-program", "FILE",
                   "write the step's schedule graph as JSON (to run it for real, save it with "
                   "--no-fold, then mpirun -np <ranks> meshsim validate program --program FILE "
                   "--compare --hardware <profile>)",
                   OutputKind::file});
  const Args args("step", specs, argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Simulate one training step of a transformer model on a tp x cp x dp x pp mesh (Megatron "
        "order: tp fastest, pp outermost): step time, tokens/s, MFU, memory per pipeline stage "
        "(over the GPU's memory it is reported as OOM and still timed), and where the time goes.",
        "meshsim step --model llama3-70b --gpus 64 --tp 8 --pp 4 --cp 2 --seq 16384 --gbs 64 "
        "--recompute selective --distributed-optimizer --trace step.json");
    return 0;
  }
  const auto started = std::chrono::steady_clock::now();
  OutputRequest out = read_output_request(args, ctx);
  const StepRequest req = parse_step_request(args, out, ctx.err);
  const MemoryEstimate mem = estimate_memory(req.model, memory_plan(req.plan), out.hardware);
  Program program = build_training_step(req.model, req.plan, out.hardware.gpus_per_node);
  OutputFiles files;
  if (const std::string save = args.get("--save-program", ""); !save.empty()) {
    files.stage(save, program_to_text(program), "--save-program");
  }
  TracedSimulation result = run_traced_simulation(std::move(program), out.hardware, out.provenance,
                                                  !out.trace_path.empty(), started, out.network);
  if (!out.trace_path.empty() && result.trace)
    files.stage(out.trace_path, *result.trace, "--trace");
  files.commit();
  const StepEvaluation eval = evaluate_step(result, step_work(req.model, req.plan), out.hardware);
  const TimeBreakdown breakdown =
      time_breakdown(result.program, result.timeline, result.metrics.makespan);
  const StepReport report{req.model, req.plan, req.note, mem, std::move(result), eval, breakdown};
  if (out.json) {
    print_step_json(report, out, ctx);
  } else {
    print_step_text(report, out, ctx);
  }
  return 0;
}

}  // namespace meshsim
