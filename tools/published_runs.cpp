#include "tools/published_runs.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include <fmt/format.h>

#include "schedules/memory_model.hpp"
#include "sim/compute_model.hpp"
#include "sim/error.hpp"
#include "sim/json_fields.hpp"
#include "tools/published_megatron.hpp"
#include "tools/published_moe.hpp"
#include "tools/published_network.hpp"
#include "tools/published_precision.hpp"
#include "tools/published_sharding.hpp"
#include "tools/tp_overlap_flag.hpp"

namespace meshsim {
namespace published_fields {

using json = nlohmann::json;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string squeezed(std::string_view words) {
  std::string out;
  for (const char c : lower(words)) {
    if (c != ' ' && c != '-' && c != '_') out.push_back(c);
  }
  return out;
}

// An optional positive integer (nullopt when absent or null).
std::optional<std::int64_t> count(const json& obj, const char* field) {
  if (!obj.is_object() || !obj.contains(field) || obj.at(field).is_null()) return std::nullopt;
  const json& v = obj.at(field);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
    throw InputError(
        fmt::format("field '{}': expected a non-negative integer, got {}", field, v.dump()));
  }
  return v.get<std::int64_t>();
}

std::optional<std::string> text(const json& obj, const char* field) {
  if (!obj.is_object() || !obj.contains(field) || obj.at(field).is_null()) return std::nullopt;
  if (!obj.at(field).is_string()) {
    throw InputError(fmt::format("field '{}': expected a string", field));
  }
  return obj.at(field).get<std::string>();
}

bool flag(const json& obj, const char* field) {
  return flag_or(obj, field, false);
}

bool flag_or(const json& obj, const char* field, bool fallback) {
  if (!obj.is_object() || !obj.contains(field) || obj.at(field).is_null()) return fallback;
  if (!obj.at(field).is_boolean()) {
    throw InputError(fmt::format("field '{}': expected true, false or null, got {}", field,
                                 obj.at(field).dump()));
  }
  return obj.at(field).get<bool>();
}

}  // namespace published_fields

namespace {

using json = nlohmann::json;
using namespace published_fields;

// An optional free-text field (absent, null or not a string: nullopt; the file's free text is
// never an error).
std::optional<std::string> optional_string(const JsonField& f, std::string_view key) {
  if (!f.has(key) || !f[key].raw().is_string()) return std::nullopt;
  return f[key].as_string();
}

PublishedRun read_run(const JsonField& row, std::string_view origin) {
  PublishedRun r;
  r.id = row["id"].as_string();
  // From here on, errors name the row by its id.
  const JsonField f(row.raw(), fmt::format("{}: row {}", origin, r.id));
  r.table = f["table"].as_string();
  r.source = f["source"]["id"].as_string();
  for (const char* part : {"model", "cluster", "parallel"}) {
    if (!f[part].raw().is_object()) f[part].fail("an object");
  }
  r.model = f["model"].raw();
  r.cluster = f["cluster"].raw();
  r.parallel = f["parallel"].raw();
  r.precision = optional_string(f, "precision").value_or("");
  r.compile = f.has("compile") && !f["compile"].raw().is_null() && f["compile"].as_bool();
  const JsonField m = f["measured"];
  r.measured.metric = m["metric"].as_string();
  r.measured.unit = optional_string(m, "unit").value_or("");
  r.measured.value = m["value"].as_number();
  return r;
}

PublishedMemoryRow read_memory_row(const JsonField& row, std::size_t index) {
  PublishedMemoryRow r;
  r.id = fmt::format("memory-{:03}", index + 1);
  r.model = row["model"].as_string();
  r.sp = row.has("sp") && row["sp"].raw().is_boolean() && row["sp"].as_bool();
  r.recompute = text(row.raw(), "recompute").value_or("none");
  const JsonField m = row["measured"];
  auto number = [&](std::string_view key) -> std::optional<double> {
    return m.has(key) ? std::optional<double>(m[key].as_number()) : std::nullopt;
  };
  r.params_plus_optimizer_gib = number("params_plus_optimizer_GiB");
  r.activations_gib = number("activations_GiB");
  r.activation_pct_of_tp_baseline = number("activation_memory_pct_of_tp_baseline");
  return r;
}

bool is_llama(const json& model) {
  return lower(text(model, "name").value_or("")).find("llama") != std::string::npos;
}

// The model by the rules of the header, or why not.
std::variant<TransformerModel, SkippedRun> model_of(const json& m,
                                                    std::vector<std::string>& notes) {
  TransformerModel model;
  model.name = text(m, "name").value_or("published model");
  const auto layers = count(m, "layers"), hidden = count(m, "hidden"), heads = count(m, "heads");
  const auto seq = count(m, "seq");
  if (!layers || !hidden || !seq)
    return SkippedRun{"the source does not give layers, hidden or seq"};
  if (!heads) return SkippedRun{"the source does not give the number of attention heads"};
  model.layers = static_cast<int>(*layers);
  model.hidden = *hidden;
  model.heads = *heads;
  model.seq_len = *seq;
  model.kv_heads = count(m, "kv_heads").value_or(0);
  if (model.kv_heads == 0) {
    model.kv_heads = model.heads;
    notes.emplace_back("kv_heads = heads (multi-head attention)");
  }
  model.ffn_hidden = count(m, "ffn").value_or(0);
  if (model.ffn_hidden == 0) {
    model.ffn_hidden = 4 * model.hidden;
    notes.emplace_back("ffn = 4 x hidden");
  }
  model.vocab = count(m, "vocab").value_or(0);
  if (model.vocab == 0) {
    model.vocab = 51200;
    notes.emplace_back("vocab = 51,200");
  }
  const bool llama = is_llama(m) || published_moe_style(m);
  if (llama && !is_llama(m)) {
    notes.emplace_back("MoE/MLA model: RMSNorm, SwiGLU, RoPE, untied embeddings, no biases");
  }
  model.gated_mlp = llama;
  model.tied_embeddings = !llama;
  model.norm = llama ? NormKind::rmsnorm : NormKind::layernorm;
  model.linear_bias = !llama;
  model.position = llama ? PositionEmbedding::rope : PositionEmbedding::learned;
  model.dropout = !llama;
  // MoE, MLA and head_dim fields (tools/published_moe.hpp), then the model's checks.
  if (auto skipped = published_moe_model(m, model, notes)) return *skipped;
  return model;
}

std::optional<PipelineSchedule> schedule_of(const std::optional<std::string>& words, int pp,
                                            std::vector<std::string>& notes) {
  const std::string w = lower(words.value_or("none"));
  if (w == "none" || w == "1f1b" || (w.empty() && pp == 1)) return PipelineSchedule::one_f_one_b;
  if (w == "interleaved-1f1b" || w == "1f1b-i" || w == "interleaved") {
    return PipelineSchedule::interleaved;
  }
  if (w == "zb-1p") {
    notes.emplace_back("ZB-1p as zb-h1 (the handcrafted schedule of 1F1B's memory)");
    return PipelineSchedule::zb_h1;
  }
  if (w == "zb-2p") {
    notes.emplace_back(
        "ZB-2p as zb-h2 (the handcrafted schedule of the same 2p memory limit, not the searched "
        "one)");
    return PipelineSchedule::zb_h2;
  }
  return std::nullopt;
}

DType dtype_of(const std::string& precision) {
  const std::string p = lower(precision);
  if (p.find("bf16") != std::string::npos && p.find("fp16") == std::string::npos) {
    return DType::bf16;
  }
  if (p.find("fp16") != std::string::npos) return DType::fp16;
  return DType::bf16;
}

// The parallel settings by the rules of the header, or why not.
// Chunks per rank for an interleaved run that does not print them: the smallest v >= 2 that
// splits the layers evenly over pp x v stages (what Megatron-LM required before its uneven
// option), else the smallest v >= 2 whose stages take the layers by split_layers' uneven
// first/last-stage rule, else 2 (the plan's check then says why).
int smallest_chunking(int layers, int pp) {
  for (int v = 2; pp * v <= layers; ++v) {
    if (layers % (pp * v) == 0) return v;
  }
  for (int v = 2; pp * v <= layers; ++v) {
    try {
      split_layers(layers, pp * v);
      return v;
    } catch (const InputError&) {
    }
  }
  return 2;
}

// Zero Bubble's 1F1B-I: the interleaved schedule with one transformer layer per chunk. The layers
// are padded to pp x v with v = ceil(L / pp) chunks per rank, and the padding is taken one layer
// at a time from the last global stage, then from the first ones (the Zero Bubble repository's
// --allow-padding-num-layers: ParallelTransformer.get_offset lowers chunk_sizes[-1], [0], ...,
// [padding - 2] by one, and a chunk left without layers runs a no-op layer).
std::vector<int> one_layer_per_chunk(int layers, int pp, int v) {
  std::vector<int> per_stage(static_cast<std::size_t>(pp * v), 1);
  const int padding = pp * v - layers;
  for (int i = -1; i < padding - 1; ++i) {
    per_stage[i < 0 ? per_stage.size() - 1 : static_cast<std::size_t>(i)] -= 1;
  }
  return per_stage;
}

std::optional<SkippedRun> fill_plan(const json& par, const json& cluster, int layers, StepPlan& p,
                                    std::vector<std::string>& notes) {
  const auto tp = count(par, "tp"), pp = count(par, "pp");
  if (!tp || !pp) return SkippedRun{"the source gives only the model-parallel size, not tp and pp"};
  const std::int64_t cp = count(par, "cp").value_or(1);
  for (const auto& [v, field] : {std::pair{*tp, "tp"}, std::pair{*pp, "pp"}, std::pair{cp, "cp"}}) {
    if (v < 1 || v > (1 << 16)) {
      throw InputError(fmt::format("field 'parallel.{}': expected 1 to 65536, got {}", field, v));
    }
  }
  p.tp = static_cast<int>(*tp);
  p.pp = static_cast<int>(*pp);
  p.cp = static_cast<int>(cp);
  const auto gpus = count(cluster, "gpus");
  const auto dp = count(par, "dp");
  if (!dp && !gpus) return SkippedRun{"neither dp nor the number of GPUs is given"};
  if (dp && (*dp < 1 || *dp > (1 << 16))) {
    throw InputError(fmt::format("field 'parallel.dp': expected 1 to 65536, got {}", *dp));
  }
  const std::int64_t model_parallel = std::int64_t{p.tp} * p.pp * p.cp;
  if (dp && gpus && *dp * model_parallel != *gpus) {
    return SkippedRun{
        fmt::format("tp x pp x cp x dp = {} x {} x {} x {} = {}, but the row has {} GPUs", p.tp,
                    p.pp, p.cp, *dp, *dp * model_parallel, *gpus)};
  }
  p.dp = static_cast<int>(dp ? *dp : *gpus / model_parallel);
  if (!dp) notes.emplace_back("dp = GPUs / (tp x pp x cp)");
  const auto mbs = count(par, "micro_batch");
  if (!mbs) return SkippedRun{"the source does not give the micro-batch size"};
  p.microbatch_size = *mbs;
  const auto gbs = count(par, "global_batch"), m = count(par, "num_microbatches");
  if (!gbs && !m) return SkippedRun{"neither the global batch nor the microbatch count is given"};
  p.global_batch = gbs ? *gbs : *m * p.dp * p.microbatch_size;
  const auto schedule = schedule_of(text(par, "pipeline_schedule"), p.pp, notes);
  if (!schedule) {
    return SkippedRun{fmt::format("pipeline schedule '{}' is not one meshsim builds",
                                  text(par, "pipeline_schedule").value_or(""))};
  }
  p.schedule = *schedule;
  p.vp = 1;  // chunks only for the interleaved schedule
  if (p.schedule == PipelineSchedule::interleaved) {
    const auto vp = count(par, "vp");
    if (!vp && lower(text(par, "pipeline_schedule").value_or("")) == "1f1b-i") {
      p.vp = (layers + p.pp - 1) / p.pp;
      p.layout.layers_per_stage = one_layer_per_chunk(layers, p.pp, p.vp);
      notes.push_back(fmt::format(
          "1F1B-I: one layer per chunk, vp = ceil({} / {}) = {}, {} padded chunk(s) of 0 layers "
          "(Zero Bubble's layer padding)",
          layers, p.pp, p.vp, p.pp * p.vp - layers));
    } else {
      p.vp = vp ? static_cast<int>(*vp) : smallest_chunking(layers, p.pp);
      if (!vp) notes.push_back(fmt::format("vp = {}", p.vp));
    }
  }
  p.sequence_parallel = flag(par, "sp");
  std::string words = lower(text(par, "recompute").value_or("none"));
  constexpr std::string_view kMicrobatchLevel = "+microbatch-level";
  if (words.ends_with(kMicrobatchLevel)) {
    words.resize(words.size() - kMicrobatchLevel.size());
    p.num_microbatches_with_partial_activation_checkpoints = 0;  // N chosen in plan_run
  }
  const auto recompute = parse_recompute(words);
  if (!recompute) {
    return SkippedRun{fmt::format("recompute '{}' is not none, selective or full",
                                  text(par, "recompute").value_or(""))};
  }
  p.recompute = *recompute;
  p.distributed_optimizer = flag(par, "distributed_optimizer");
  return std::nullopt;
}

}  // namespace

PublishedRuns read_published_runs(const json& doc, std::string_view origin) {
  if (!doc.is_object() || !doc.contains("rows") || !doc.at("rows").is_array()) {
    throw InputError(fmt::format("{}: field 'rows': expected an array of runs", origin));
  }
  const JsonField file(doc, std::string(origin));
  PublishedRuns runs;
  const JsonField rows = file["rows"];
  for (std::size_t i = 0; i < rows.size(); ++i) runs.rows.push_back(read_run(rows.at(i), origin));
  if (file.has("memory_rows")) {
    const JsonField mem = file["memory_rows"];
    for (std::size_t i = 0; i < mem.size(); ++i) {
      runs.memory_rows.push_back(read_memory_row(mem.at(i), i));
    }
  }
  return runs;
}

std::variant<HardwareProfile, SkippedRun> hardware_for_gpu(std::string_view gpu) {
  const std::string g = lower(gpu);
  for (const char* other : {"gh200", "pcie", "nvl"}) {
    if (g.find(other) != std::string::npos) {
      return SkippedRun{
          fmt::format("no hardware profile for GPU '{}' yet ({} differs from the "
                      "SXM boards of the built-ins)",
                      gpu, other)};
    }
  }
  const bool h100 = g.find("h100") != std::string::npos;
  const char* name = g.find("a100") != std::string::npos            ? "a100-sxm"
                     : h100 && g.find("hbm2e") != std::string::npos ? "h100-hbm2e"
                     : h100                                         ? "h100-sxm"
                     : g.find("h200") != std::string::npos          ? "h200-sxm"
                     : g.find("h800") != std::string::npos          ? "h800-sxm"
                                                                    : nullptr;
  if (name == nullptr) {
    return SkippedRun{fmt::format("no hardware profile for GPU '{}' yet", gpu)};
  }
  HardwareProfile hw = *builtin_hardware(name);
  static const std::regex memory(R"((\d+)\s*gb)");
  std::smatch match;
  if (std::regex_search(g, match, memory)) hw.memory_bytes = std::stod(match[1].str()) * 1e9;
  return hw;
}

namespace {

// A power cap printed in the GPU name ("… 500W"), noted: the profile's peaks are the datasheet's,
// except h100-hbm2e's, which are those of the 500 W part.
void note_power_cap(const PublishedRun& run, RunPlan& out) {
  static const std::regex watts(R"((\d+)\s*w\b)");
  std::smatch match;
  const std::string gpu = lower(text(run.cluster, "gpu").value_or(""));
  if (!std::regex_search(gpu, match, watts)) return;
  if (out.hardware.name == "h100-hbm2e" && match[1].str() == "500") {
    out.conventions.emplace_back(
        "power cap 500 W: h100-hbm2e's peaks are the 500 W part's (arXiv 2411.01783, App. A)");
  } else {
    out.conventions.push_back(fmt::format(
        "power cap {} W in the GPU name not modeled: the profile's peaks are the datasheet's",
        match[1].str()));
  }
}

// A source whose model code is plain PyTorch: eager layer kernels unless the row said
// torch.compile (published_software_plan set torch-compile then).
void pytorch_model_code(RunPlan& out, std::string_view whose) {
  if (out.plan.layer_kernels != LayerKernels::fused) return;
  out.plan.layer_kernels = LayerKernels::torch_eager;
  out.conventions.push_back(fmt::format("layer kernels torch-eager ({} model code)", whose));
}

// What a source's runs implied beyond their fields: Megatron-Core's cuDNN attention on Hopper; the
// materialized attention and the gradient reduction after the backward of 2021-2022 Megatron-LM;
// torchtitan's PyTorch layer kernels and loss, fms-fsdp's layer kernels; Zero Bubble's
// materialized attention.
void apply_source_conventions(const PublishedRun& run, RunPlan& out) {
  if (out.hardware.attention_kernels.contains("cudnn") &&
      lower(run.source).find("megatron") != std::string::npos) {
    out.hardware = select_attention_kernel(std::move(out.hardware), "cudnn", "attention kernel");
    out.conventions.emplace_back(
        "attention kernel cudnn (Megatron-Core's Transformer Engine on Hopper)");
  }
  if (run.source == "korthikanti2022" || run.source.starts_with("megatron_readme")) {
    out.plan.attention = AttentionCore::materialized;
    out.conventions.emplace_back("attention materialized (Megatron-LM of 2021-2022)");
    // Sharded gradients are reduce-scattered as the backward releases them (meshsim step
    // refuses --no-overlap-grad-reduce with them).
    out.plan.overlap_grad_reduce = out.plan.sharding.zero >= 2;
    if (out.plan.dp > 1 && !out.plan.overlap_grad_reduce) {
      out.conventions.emplace_back(
          "gradients reduced after the backward (Megatron-LM of 2021-2022: allreduce_gradients() "
          "after forward_backward)");
    }
  } else if (run.source.starts_with("torchtitan")) {
    // torchtitan's Llama code in PyTorch (eager unless the row says torch.compile) and its loss,
    // F.cross_entropy on fp32-upcast logits (torchtitan/components/loss.py).
    pytorch_model_code(out, "torchtitan's");
    out.plan.cross_entropy = CrossEntropy::torch_fp32;
    out.conventions.emplace_back("cross entropy torch-fp32 (torchtitan's loss)");
    // torchtitan's pipeline stages run through torch.distributed.pipelining, whose FSDP2 stages
    // keep parameters gathered and gradients unsharded until the last microbatch's backward
    // (stage.py, backward_maybe_with_nosync).
    if (out.plan.pp > 1 && out.plan.sharding.fsdp) {
      out.plan.sharding.no_sync = true;
      out.conventions.emplace_back(
          "FSDP no_sync (torch.distributed.pipelining's FSDP2 stages: gradients reduced once per "
          "step)");
    }
  } else if (run.source.starts_with("fms_fsdp")) {
    // IBM's fms LLaMA in PyTorch, eager unless the row says torch.compile: RMSNorm as pow, mean,
    // rsqrt and multiplies (fms/modules/layernorm.py LayerNormParameterized), SwiGLU as separate
    // SiLU and multiply (fms/modules/feedforward.py). Its loss, nn.CrossEntropyLoss on the bf16
    // logits without an fp32 upcast, keeps the default loss.
    pytorch_model_code(out, "fms's");
  } else if (run.source == "zero_bubble") {
    out.plan.attention = AttentionCore::materialized;
    out.conventions.emplace_back(
        "attention materialized (Zero Bubble's activation model sb(34h + 5as), Table 1)");
  }
}

// torchtitan's pipeline default when the row gives no micro-batch size: as many microbatches as
// pipeline stages (its --experimental.pipeline_parallel_microbatches: "The default value will be
// the number of pipeline stages"), i.e. micro_batch = global_batch / (dp x pp).
json with_source_defaults(const PublishedRun& run, std::vector<std::string>& notes) {
  json par = run.parallel;
  if (!run.source.starts_with("torchtitan") || !par.is_object()) return par;
  const auto pp = count(par, "pp"), dp = count(par, "dp"), gbs = count(par, "global_batch");
  if (count(par, "micro_batch") || !pp || *pp < 2 || !dp || !gbs) return par;
  if (*dp < 1 || *gbs % (*dp * *pp) != 0) return par;
  par["micro_batch"] = *gbs / (*dp * *pp);
  notes.push_back(fmt::format(
      "micro_batch = global_batch / (dp x pp) = {} (torchtitan's default: one microbatch per "
      "pipeline stage)",
      *gbs / (*dp * *pp)));
  return par;
}

}  // namespace

std::variant<RunPlan, SkippedRun> plan_run(const PublishedRun& run) {
  RunPlan out;
  out.conventions = run.filled;
  auto model = model_of(run.model, out.conventions);
  if (auto* skipped = std::get_if<SkippedRun>(&model)) return *skipped;
  out.model = std::get<TransformerModel>(model);
  auto hardware = hardware_for_gpu(text(run.cluster, "gpu").value_or(""));
  if (auto* skipped = std::get_if<SkippedRun>(&hardware)) return *skipped;
  out.hardware = std::get<HardwareProfile>(hardware);
  note_power_cap(run, out);
  apply_cluster_network(run.cluster, out.hardware, out.conventions);
  // torch.compile and FP8 words first: a row with them is skipped for them before anything else.
  if (auto skipped = published_software_plan(run, out.hardware, out.plan, out.conventions)) {
    return *skipped;
  }
  if (const auto gpn = count(run.cluster, "gpus_per_node")) {
    out.hardware.gpus_per_node = static_cast<int>(*gpn);
  }
  const json parallel = with_source_defaults(run, out.conventions);
  if (auto skipped =
          fill_plan(parallel, run.cluster, out.model.layers, out.plan, out.conventions)) {
    return *skipped;
  }
  if (auto skipped = published_moe_plan(run.parallel, out.model, out.plan, out.conventions)) {
    return *skipped;
  }
  if (auto skipped = published_sharding_plan(run.parallel, out.plan, out.conventions)) {
    return *skipped;
  }
  out.plan.seq = out.model.seq_len;
  out.plan.dtype = dtype_of(run.precision);
  apply_source_conventions(run, out);
  // Read outside the try: a malformed field is an error of the file, not a row meshsim cannot
  // express.
  const PublishedMegatronSettings megatron = read_megatron_settings(run.parallel);
  try {
    apply_megatron_settings(megatron, out.hardware, out.plan, out.conventions);
    check_step_plan(out.model, out.plan);
    if (out.plan.num_microbatches_with_partial_activation_checkpoints) {
      const int n = fitting_whole_microbatches(out.model, out.plan, out.hardware);
      out.plan.num_microbatches_with_partial_activation_checkpoints = n;
      out.conventions.push_back(fmt::format(
          "micro-batch-level recompute: {} microbatch(es) per window kept whole, the most whose "
          "memory fits (the paper's App. C: all available device memory)",
          n));
    }
  } catch (const InputError& e) {
    return SkippedRun{e.what()};
  }
  return out;
}

}  // namespace meshsim
