#pragma once
// Published training measurements (data/published/published_runs.json; schema in
// data/published/README.md) as meshsim plans. Each row's model, cluster and parallel settings map
// to a TransformerModel, a StepPlan and a hardware profile by the documented rules below, or the
// row is skipped with the reason; conventions filled for fields the source leaves null are listed
// with the plan. Planning never reads a row's measured values (they are kept apart, in `measured`).
//
// Before these rules, null fields that a companion publication of the same runs prints are filled
// from it (tools/published_configs.hpp); the plan lists them first among its conventions.
//
// Rules:
//   GPU      "A100..." -> a100-sxm, "H100..." -> h100-sxm ("H100 ... HBM2e" -> h100-hbm2e, the
//            96 GB, 2.4 TB/s part of torchtitan's Grand Teton hosts), "H200..." -> h200-sxm,
//            "H800..." -> h800-sxm; a memory size printed in the name ("40GB", "96GB HBM2e")
//            replaces the profile's; a power cap in the name ("500W") is listed as not modeled;
//            other GPUs are skipped until a profile exists, as are GH200, PCIe and NVL boards (not
//            the SXM boards of the built-ins).
//   model    heads null: skipped; kv_heads null: heads (multi-head attention); ffn null: 4 x
//   hidden;
//            vocab null: 51,200 (GPT-like); seq from the model. Llama-named models and models
//            with a `moe` or `mla` block: RMSNorm, SwiGLU, RoPE, untied embeddings; every other
//            model GPT-style: LayerNorm, GELU MLP, biases, learned positions, tied embeddings,
//            dropout. MoE, MLA and head_dim fields: tools/published_moe.hpp.
//   parallel tp or pp null: skipped (the source gives only their product); dp null: the GPUs left;
//            tp x pp x cp x dp other than the GPUs printed: skipped; sp and distributed_optimizer
//            true, false or null (null: off);
//            cp null: 1; vp null: 1, or for an interleaved schedule the smallest v >= 2 whose
//            pp x v stages take the layers evenly, else the smallest taking them by the uneven
//            first/last-stage rule of split_layers; except Zero Bubble's "1F1B-I" (the
//            interleaved schedule with one transformer layer per chunk, its Table 4 note): v =
//            ceil(L / pp) chunks on every rank, each one layer, the pp x v - L padded chunks
//            holding 0 layers as the Zero Bubble repository pads (--allow-padding-num-layers:
//            the last global stage first, then the first ones; a chunk without layers runs a
//            no-op layer, so every rank keeps v chunks and the schedule is Megatron's
//            interleaved one). 22 layers on pp 8: v 3, stages 0 and 23 empty, ranks hold
//            2,3,3,3,3,3,3,2 layers; micro_batch null: skipped;
//            global_batch null: num_microbatches x dp x micro_batch; sp null: off; recompute
//            none | selective | full, each optionally "+microbatch-level" (Korthikanti et al.
//            2022, App. C: StepPlan::num_microbatches_with_partial_activation_checkpoints N, the
//            paper's "uses all the available device memory" as the largest N whose memory
//            estimate fits the profile: fitting_whole_microbatches) (anything else skipped);
//            distributed_optimizer null: off; tp_comm_overlap true: Transformer Engine's
//            userbuffers overlap (StepPlan::tp_comm_overlap, the GPU's SM count), else off.
//   schedule none / 1F1B -> 1f1b; interleaved-1F1B / 1F1B-I -> interleaved; ZB-1p -> zb-h1 (the
//            handcrafted zero-bubble schedule of 1F1B's memory, Qi et al. 2023 Sec. 3); ZB-2p ->
//            zb-h2: ZB-2p is the paper's automatically searched schedule (its Sec. 4 heuristic
//            fed with the profiled T_F, T_B, T_W and communication) under a memory limit of 2p
//            microbatches' activations, zb-h2 its handcrafted counterpart under the same limit
//            (Sec. 3: up to 2p-1 in flight, zero bubble at T_F = T_B = T_W); others skipped.
//   dtype    "bf16" in the precision -> bf16, else "fp16" -> fp16, else bf16.
//   sharding parallel.fsdp, parallel.sharding, parallel.reshard_after_forward: FSDP / HSDP /
//            ZeRO as `meshsim step --fsdp / --hsdp / --zero` (tools/published_sharding.hpp).
//   software compile and FP8 / FP4 precision words (tools/published_precision.hpp).
//   attention materialized for the Megatron-LM runs of 2021-2022 (sources korthikanti2022 and
//            megatron_readme*: FlashAttention, Dao et al. May 2022, reached Megatron-LM in 2023 as
//            --use-flash-attn; those runs also reduce the gradients after the backward:
//            overlap_grad_reduce off) and for Zero Bubble (source zero_bubble: its Table 1
//            activation model sb(34h + 5as) is that core's, and only that core accounts for its
//            Table 4 memory); flash for every other source. The flash kernel family is the
//            profile's default (fa2), except for Megatron-LM sources on a profile with a cudnn
//            family (Hopper): Transformer Engine's cuDNN fused attention ("when both are
//            applicable, Transformer Engine prefers cuDNN flash attention on Hopper+", NVIDIA
//            NeMo docs, memory_optimizations.rst).
//   kernels  torchtitan's rows (sources torchtitan*): `--layer-kernels torch-eager` (its Llama
//            model code in PyTorch eager mode; torch-compile when the row says compile) and
//            `--cross-entropy torch-fp32` (its loss); every other source: Megatron-style fused
//            kernels and the vocab-parallel loss (schedules/layer_kernels.hpp).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/model_catalog.hpp"
#include "schedules/step_plan.hpp"
#include "sim/hardware_profile.hpp"

namespace meshsim {

struct PublishedMeasurement {
  std::string metric;  // iteration_time, MFU, samples_per_gpu_per_sec, ...
  double value = 0;
  std::string unit;
};

struct PublishedRun {
  std::string id;
  std::string table;
  std::string source;                       // sources[source] names the paper or repository
  nlohmann::json model, cluster, parallel;  // as printed (null where the source is silent)
  std::string precision;
  bool compile = false;  // the row's `compile`: the run used torch.compile
  PublishedMeasurement measured;
  std::vector<std::string> filled;  // fields filled from a companion source (published_configs)
};

// A per-GPU memory figure of a configuration named by its model (the plans are the rows of
// `plans_table` with that model name).
struct PublishedMemoryRow {
  std::string id;  // memory-001, ... in file order
  std::string model;
  bool sp = false;
  std::string recompute;
  std::optional<double> params_plus_optimizer_gib, activations_gib, activation_pct_of_tp_baseline;
};

struct PublishedRuns {
  std::vector<PublishedRun> rows;
  std::vector<PublishedMemoryRow> memory_rows;
};

// The rows of a published-runs document; InputError naming the row and field otherwise.
PublishedRuns read_published_runs(const nlohmann::json& doc, std::string_view origin);

struct RunPlan {
  TransformerModel model;
  StepPlan plan;
  HardwareProfile hardware;
  std::vector<std::string> conventions;  // what was filled for null fields, in rule order
};
struct SkippedRun {
  std::string reason;
};

// Reading a row's fields (InputError naming the field when present but malformed).
namespace published_fields {
std::string lower(std::string_view s);
// The words in lower case without spaces, hyphens or underscores ("ZeRO-1" -> "zero1").
std::string squeezed(std::string_view words);
// An optional non-negative integer (nullopt when absent or null).
std::optional<std::int64_t> count(const nlohmann::json& obj, const char* field);
// An optional string (nullopt when absent or null).
std::optional<std::string> text(const nlohmann::json& obj, const char* field);
// An optional boolean (false when absent or null).
bool flag(const nlohmann::json& obj, const char* field);
// An optional boolean (`fallback` when absent or null).
bool flag_or(const nlohmann::json& obj, const char* field, bool fallback);
}  // namespace published_fields

// The plan of a run by the rules above, or why it cannot be expressed.
std::variant<RunPlan, SkippedRun> plan_run(const PublishedRun& run);

// The hardware profile a GPU name maps to, or why it does not.
std::variant<HardwareProfile, SkippedRun> hardware_for_gpu(std::string_view gpu);

}  // namespace meshsim
