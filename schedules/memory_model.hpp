#pragma once
// Memory per rank of a parallel training plan (ARCHITECTURE.md §4.4): weights, gradients, optimizer
// state, activations of the in-flight microbatches, ring-attention K/V buffers and a workspace
// allowance; over the GPU's memory the plan is OOM. Also how layers are split over pipeline stages
// (Megatron's uneven first/last-stage option when they do not divide evenly).
//
// Notation: t = tp, s = seq / cp (tokens per rank), b = microbatch size, h = hidden, a = heads,
// h_kv = kv_heads x head_dim, f = ffn_hidden, V = vocab, e = 2 (bf16 activations); masks of
// dropout take 1 byte per element.
//
// Activations per layer and in-flight microbatch (Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models", §4: sbh(34 + 5as/h) bytes without parallelism,
// sbh(34 + 5as/h)/t with tensor + sequence parallelism), term by term so that GQA and SwiGLU fit:
//   kept whole (divided by t only with sequence parallelism — the paper's "10"):
//     2 norm inputs 2·e·sbh, QKV input e·sbh, MLP-up input e·sbh, 2 dropout masks 2·sbh (dropout)
//   divided by t (the paper's "24"):
//     Q e·sbh, K and V 2·e·sb·h_kv (GQA: the paper's 4sbh becomes 4sbh·kv_heads/heads),
//     projection input e·sbh,
//     MLP: non-gated e·sbf (activation input) + e·sbf (down input) = 4sbf (= 16sbh at f = 4h);
//          SwiGLU e·sb·2f (gate and up outputs, the activation's inputs) + e·sbf (down input) =
//          6sbf
//   attention core, divided by t (the paper's 5as²b), `materialized`:
//     softmax output e·a·s·S·b, dropout mask a·s·S·b and dropout output e·a·s·S·b (dropout), with
//     S = seq the keys per query (S = s without CP: 5as²b); without dropout only e·a·s·S·b;
//   `flash` (FlashAttention, which ring attention uses: the s x S scores never exist): the fp32
//     log-sum-exp 4·a·s·b (the output O is the projection input, already counted).
// Low precision (MemoryPlan::precision, TE's Linear / LayerNormLinear saving their quantized
// input for the weight gradient, q = quant_element_bytes of the recipe's format): the QKV and
// MLP-up inputs (norm outputs, only the linears use them) and the MLP-down input (the activation's
// output) are kept as q bytes per element instead of e; the projection input stays e·sbh (the
// attention core's output O, which its backward reads) and its quantized copy q·sbh is added.
// Selective-op and full recompute keep their bf16 terms.
// With MHA, f = 4h, dropout and sequence parallelism this is sbh(34 + 5as/h)/t, the paper's tensor
// + sequence parallel formula (without SP: sbh(10 + 24/t + 5as/(ht))); Megatron-LM's
// theoretical_memory_usage.py uses the same 18 + 4f/h per sbh (selective recompute).
// Recompute (the paper's §5):
//   none       all of the above stays for every layer;
//   selective  the attention core is recomputed: per layer everything except the core
//              (34sbh/t in the paper's case);
//   full       only each layer's input stays: e·sbh (/t with sequence parallelism), the paper's
//              2sbh per layer; the layer being recomputed holds one layer's `none` activations
//              during its backward (counted once, as recompute_working).
// With selective recompute and a materialized core, one layer's core is recomputed at a time
// (recompute_working = the core of one layer).
// Extras per in-flight microbatch: the first global stage adds the embedding's dropout mask sbh
// (/t with sequence parallelism) when the model has dropout; the last global stage adds the
// paper's output-layer term 4sbh/t·(1 + V/h): final-norm input and head input e·sbh each (/t with
// sequence parallelism) and the fp32 softmax of the vocabulary-parallel cross entropy 4·sb·V/t.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "schedules/cross_entropy.hpp"
#include "schedules/layer_kernels.hpp"
#include "schedules/model_catalog.hpp"
#include "schedules/pipeline_orders.hpp"
#include "schedules/precision.hpp"
#include "schedules/ring_attention.hpp"
#include "schedules/sharding.hpp"

namespace meshsim {

struct HardwareProfile;

// selective_op: torchtitan's op-level selective activation checkpointing (its `_custom_policy`
// in activation checkpointing, "op" mode): of each layer, the outputs of the matmuls are saved
// except every second one (counted in forward order: wq, wk, wv, wo, w1, w3, w2 for SwiGLU; wq,
// wk, wv, wo, w1, w2 otherwise), and the attention kernel's output; everything else (norms,
// activation, the skipped matmuls) is recomputed at the layer's backward.
enum class Recompute : std::uint8_t { none, selective, full, selective_op };
std::string_view to_string(Recompute r);  // "none", "selective", "full", "selective-op"
std::optional<Recompute> parse_recompute(std::string_view s);

enum class AttentionCore : std::uint8_t { flash, materialized };
std::string_view to_string(AttentionCore c);  // "flash", "materialized"
std::optional<AttentionCore> parse_attention_core(std::string_view s);

// Layers per global pipeline stage (stage g of n in model order; the pipeline schedule maps
// global stages to ranks and chunks, see global_stage()).
// Rule: even when n divides L (L / n each). Otherwise Megatron's uneven first/last-stage option
// (--decoder-first/last-pipeline-num-layers; the Llama 3 paper's 405B split): every middle stage
// holds k = ceil(L / n) layers, the first and the last stage share the rest r = L - (n - 2)·k,
// first ceil(r / 2), last floor(r / 2) (so both hold at most k; the first stage's embedding is a
// lookup while the last stage also runs the output head and loss, so an odd layer goes first).
// 126 layers over 16 stages: 7, 8 x 14, 7. Infeasible (r < 0, e.g. 10 layers over 8 stages) or
// n = 1 with nothing to split: see split_layers.
struct LayerSplit {
  std::vector<int> layers;  // per global stage
  bool uneven = false;
  int first = 0;   // layers on the first global stage
  int middle = 0;  // on each middle stage (uneven) / on every stage (even)
  int last = 0;
  std::string rule;  // one line stating the split, for the output
  bool operator==(const LayerSplit&) const = default;
};
// Throws InputError when L layers cannot be split over n stages by either rule.
LayerSplit split_layers(int layers, int stages);

// A layer split the user gives instead of the rule above (each field empty: the rule).
//   decoder_first_pipeline_num_layers / decoder_last_pipeline_num_layers (Megatron-LM's
//     --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers): the layers of
//     the first / last pipeline rank; the other ranks share the rest evenly (it must divide, as
//     Megatron-Core's get_num_layers_to_build asserts); each rank's layers are split evenly over
//     its chunks (must divide). Either may be given alone.
//   layers_per_stage: the layers of every global stage in model order (global stage g = c·p + r
//     for the interleaved schedule, the order of Megatron-Core's --pipeline-model-parallel-layout,
//     which lists virtual rank 0's pipeline stages first), any count >= 0 each: a stage of 0
//     layers still runs its pipeline steps and communication (and the embedding or the head when
//     it is the first or last), as Megatron's layout allows empty stages and the Zero Bubble
//     repository's --allow-padding-num-layers builds a no-op layer in a chunk left without layers.
//     Its size must be pp x chunks and its sum the model's layers; not together with first/last.
struct LayerLayout {
  std::optional<int> decoder_first_pipeline_num_layers;
  std::optional<int> decoder_last_pipeline_num_layers;
  std::vector<int> layers_per_stage;
  bool empty() const {
    return !decoder_first_pipeline_num_layers && !decoder_last_pipeline_num_layers &&
           layers_per_stage.empty();
  }
  bool operator==(const LayerLayout&) const = default;
};
// Layers per global stage of `shape` (pp = shape.stages, chunks_of(shape) chunks per rank): the
// layout when given (schedules/layer_layout.cpp), else split_layers(layers, pp x chunks).
// InputError naming the flag
// (`layers_per_stage`, `decoder_first_pipeline_num_layers`, ...) when the layout does not fit.
LayerSplit split_layers(int layers, const PipelineShape& shape, const LayerLayout& layout);

struct MemoryPlan {
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int dp = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int vp = 1;            // chunks per rank for the interleaved schedule (V schedules use 2)
  int microbatches = 1;  // m per step (only for the in-flight count the plan computes itself)
  // Interleaved: microbatches per group (PipelineShape::group_size; 0 = pp). A larger group
  // warms up with (vp - 1)·g forwards, so more chunk-activations are in flight.
  int group_size = 0;
  // Megatron's combined 1F1B (PipelineShape::combined_1f1b): one more warm-up forward, so one
  // more chunk-activation in flight.
  bool combined_1f1b = false;
  std::int64_t microbatch_size = 1;  // b
  std::int64_t seq = 0;              // whole sequence; 0 = the model's seq_len
  bool sequence_parallel = true;
  Recompute recompute = Recompute::none;
  bool distributed_optimizer = false;  // ZeRO-1: optimizer state sharded over dp x cp
  // Megatron-Core's fp8_param_gather: the layers' linear weights held in FP8 only (and their
  // transposes), no bf16 copy (StepPlan::fp8_param_gather).
  bool fp8_param_gather = false;
  ShardingPlan sharding;  // ZeRO-2/3, FSDP, HSDP (schedules/sharding.hpp)
  AttentionCore attention_core = AttentionCore::flash;
  CrossEntropy cross_entropy = CrossEntropy::vocab_parallel;  // the loss (cross_entropy.hpp)
  LayerKernels layer_kernels = LayerKernels::fused;  // what the layer keeps (layer_kernels.hpp)
  // Low-precision linears (schedules/precision.hpp): their saved inputs quantized and, without
  // ZeRO-3 / FSDP, the cached quantized weight copies (StageMemory::quantized_weights).
  Precision precision = Precision::bf16;
  KvRotation kv_rotation = KvRotation::p2p;
  LayerLayout layout;  // layers per stage given by the user (empty: split_layers' rule)
  // Micro-batch-level recompute (StepPlan::num_microbatches_with_partial_activation_checkpoints):
  // of a rank's in-flight chunk-activations, min(N, inflight) are kept whole (no recompute).
  std::optional<int> whole_microbatches;
  double workspace_bytes = 2e9;  // allowance: CUDA context, cuBLAS/NCCL workspaces, fragmentation
  // Bytes per parameter: Megatron's mixed precision — bf16 weights, fp32 gradient buffer
  // (accumulate-allreduce-grads-in-fp32), fp32 master weights + Adam m + v (4 + 4 + 4).
  int ep = 1, etp = 0;  // expert parallelism of the MoE layers (etp 0: = tp; moe_memory.hpp)
  double param_bytes = 2;
  double grad_bytes = 4;
  double optimizer_bytes = 12;
};

// Throws InputError naming the flag for a plan the model cannot take: heads, kv_heads and
// ffn_hidden divisible by tp (Megatron shards query groups over tp), seq divisible by cp and the
// per-rank sequence by tp under sequence parallelism, positive sizes, vp >= 1 (interleaved),
// the layer split (split_layers).
void check_memory_plan(const TransformerModel& model, const MemoryPlan& plan);

// Parameters of one layer on one tensor-parallel rank: every weight matrix and the biases of
// column-parallel linears (QKV, MLP gate/up) split over t; the row-parallel biases (projection,
// MLP down) and the norms replicated.
std::int64_t layer_parameters_tp(const TransformerModel& m, std::int64_t t);
// The weights of a layer's linears (attention and MLP matrices) on one tensor-parallel rank.
std::int64_t layer_linear_parameters_tp(const TransformerModel& m, std::int64_t t);

// Per-layer and per-stage activation terms of one microbatch on one rank (bytes; see the top).
struct ActivationTerms {
  double layer_none = 0;       // one layer, no recompute
  double layer_stored = 0;     // one layer as stored under the plan's recompute choice
  double layer_working = 0;    // transient, once per rank: recomputed layer (full) or core (sel.)
  double embedding_extra = 0;  // first global stage, per in-flight microbatch
  double output_extra = 0;     // last global stage, per in-flight microbatch (MTP included)
  double loss_working = 0;     // last global stage: the loss backward's transient, once
  double kv_rank = 0;     // KV_r = 2·b·s·(kv_heads/t)·d·e: one rank's K and V of one layer
  double cp_buffers = 0;  // cp > 1: p2p/alltoall 2·KV_r (received + arriving), allgather
                          // cp·KV_r (the gathered K/V); 0 without CP
};
ActivationTerms activation_terms(const TransformerModel& model, const MemoryPlan& plan);

struct StageMemory {
  int rank = 0;                   // pipeline rank
  std::vector<int> chunk_layers;  // layers of each local chunk
  bool embedding = false;         // holds the first global stage
  bool output_head = false;       // holds the last global stage (final norm, head, loss)
  int inflight = 0;               // peak in-flight chunk-activations (microbatches for v = 1)
  // This rank's TP shard: layer matrices and column-parallel biases / t, norms and row-parallel
  // biases whole; word embedding and head ceil(V / t) x h (vocabulary-parallel, no padding).
  std::int64_t parameters = 0;
  std::int64_t expert_parameters = 0;  // MoE: local experts' parameters (in `parameters` too)
  int moe_layers = 0;                  // MoE: MoE layers among chunk_layers
  double moe_buffers = 0;              // MoE: dispatch buffers (schedules/moe_memory.hpp)
  double weights = 0;                  // parameters x param_bytes
  double gradients = 0;                // parameters x grad_bytes
  double optimizer = 0;                // parameters x optimizer_bytes (/ (dp·cp) distributed)
  // The most the rank holds along its pipeline order, each in-flight chunk-activation at its own
  // chunk's size (estimate_memory from a plan; inflight x the chunk for v = 1); given only the
  // in-flight counts, inflight x the largest chunk's. With micro-batch-level recompute
  // w = min(N, inflight) of them whole (no recompute) and the rest as recomputed:
  // w x largest chunk without recompute + (inflight - w) x largest chunk as stored.
  double activations = 0;
  double recompute_working = 0;  // ActivationTerms::layer_working (0 when nothing recomputes)
  // The loss backward's transient on the last stage (ActivationTerms::loss_working); it and a
  // layer's recompute are never alive at once, so the larger of the two counts.
  double loss_working = 0;
  double cp_buffers = 0;
  double workspace = 0;
  double unsharded = 0;  // ZeRO-3 / FSDP unsharded unit buffers (schedules/sharding.hpp)
  // Low precision: TE's cached quantized weights, a row-wise and a column-wise copy (Hopper's
  // transpose, or the second block-scaling direction) of every linear weight of the rank's
  // layers, 2 x quant_element_bytes per parameter; 0 under ZeRO-3 / FSDP (the gathered weights
  // are freed, and cast again, after each use).
  double quantized_weights = 0;
  double total() const {
    return weights + gradients + optimizer + activations +
           (recompute_working > loss_working ? recompute_working : loss_working) + cp_buffers +
           moe_buffers + workspace + unsharded + quantized_weights;
  }
};

struct MemoryEstimate {
  LayerSplit split;
  std::vector<StageMemory> stages;  // one per pipeline rank (every TP/CP/DP rank of a stage is
                                    // the same)
  int peak_rank = 0;
  double peak_bytes = 0;
  double capacity_bytes = 0;  // the profile's memory_bytes
  bool oom = false;           // peak_bytes > capacity_bytes
};

// inflight[r] = the schedule's peak in-flight chunk-activations of pipeline rank r (the pipeline
// builder's peak_inflight(), e.g. 1F1B: min(p - r, m)); its size must be pp.
MemoryEstimate estimate_memory(const TransformerModel& model, const MemoryPlan& plan,
                               std::span<const int> inflight, const HardwareProfile& hardware);
// The same with inflight = peak_inflight({plan.schedule, pp, microbatches, vp}); the shape is
// checked first (check_pipeline_shape: Megatron's interleaving rules, m >= 2p for DualPipeV, ...).
MemoryEstimate estimate_memory(const TransformerModel& model, const MemoryPlan& plan,
                               const HardwareProfile& hardware);

// {"oom", "peak_bytes", "peak_rank", "capacity_bytes", "layer_split": {...}, "stages": [{rank,
// layers, inflight, parameters, weights, gradients, optimizer, activations, recompute_working,
// cp_buffers, workspace, total}, ...]} in bytes.
nlohmann::json to_json(const MemoryEstimate& estimate);

}  // namespace meshsim
