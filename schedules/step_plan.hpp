#pragma once
// The plan of a training step (tp, pp, cp, dp, vp, mbs, gbs, schedule, recompute, ...) and its
// rules: the checks a plan must pass, the folding contract (which ranks are built), the memory
// plan, the size estimate and what the step does per iteration (tokens, model FLOPs).
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "schedules/memory_model.hpp"
#include "schedules/model_catalog.hpp"
#include "schedules/moe_plan.hpp"
#include "schedules/pipeline_orders.hpp"
#include "schedules/precision.hpp"
#include "schedules/ring_attention.hpp"
#include "sim/dtype.hpp"
#include "sim/step_metrics.hpp"

namespace meshsim {

// The userbuffers method of the row-parallel forward's reduce-scatter (StepPlan::tp_overlap_rs).
enum class TpOverlapRs : std::uint8_t { pipeline, ring_exchange };
std::string_view to_string(TpOverlapRs method);  // "pipeline", "ring-exchange"
std::optional<TpOverlapRs> parse_tp_overlap_rs(std::string_view name);

struct StepPlan {
  int tp = 1, pp = 1, cp = 1, dp = 1;
  int vp = 1;  // chunks per pipeline rank (interleaved); V schedules use 2
  // g: consecutive microbatches the interleaved schedule runs per chunk (Megatron-LM's
  // --microbatch-group-size-per-virtual-pipeline-stage, PipelineShape::group_size); 0 = pp.
  int microbatch_group_size = 0;
  std::int64_t microbatch_size = 1;  // sequences per microbatch
  std::int64_t global_batch = 0;     // sequences per step; microbatches = gbs / (dp x mbs)
  std::int64_t seq = 0;              // 0: the model's seq_len
  bool sequence_parallel = true;
  RingVariant cp_variant = RingVariant::zigzag;
  KvRotation kv_rotation = KvRotation::p2p;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  Recompute recompute = Recompute::none;
  // Micro-batch-level recompute (Korthikanti et al. 2022, Appendix C; Megatron-LM's
  // --num-microbatches-with-partial-activation-checkpoints N), with recompute selective or full:
  // on each pipeline rank the forwards run in a moving window of W = warmup_forwards(rank)
  // chunk-forwards (Megatron's max_outstanding_backprops: the paper's p - S outstanding
  // backpropagations for 1F1B); the k-th forward of the rank (issue order, every (microbatch,
  // chunk)) keeps all its activations and skips the recompute iff k mod W < N, the others
  // recompute as `recompute` says. Unset: every microbatch recomputes.
  std::optional<int> num_microbatches_with_partial_activation_checkpoints;
  bool distributed_optimizer = false;
  // ZeRO-2/3, FSDP2 and HSDP (schedules/sharding.hpp; the step's ops in step_sharding.cpp).
  ShardingPlan sharding;
  // Megatron-Core's --overlap-param-gather (distributed optimizer only): the updated parameters'
  // all-gathers run during the next step's forward, bucket by bucket, each layer's first forward
  // waiting for its bucket, instead of after the optimizer step. One step is simulated in steady
  // state: the all-gathers are issued at the start of the step.
  bool overlap_param_gather = false;
  // Gradient buckets reduced as the backward releases them (Megatron-Core's
  // --overlap-grad-reduce); false: every bucket after the rank's whole backward, as Megatron-LM's
  // allreduce_gradients() after forward_backward before Megatron-Core (2021-2022 runs).
  bool overlap_grad_reduce = true;
  // Megatron-Core's DistributedDataParallelConfig.grad_reduce_in_fp32: the gradient buffer and
  // its data-parallel reduction in fp32 (true: Megatron-LM forces it for bf16 training) or in the
  // parameters' dtype (false: Megatron-Bridge's performance recipes), the distributed optimizer
  // then copying its shard to fp32 main grads before the step. DDP buffers only (zero <= 1).
  bool grad_reduce_in_fp32 = true;
  // Megatron-Core's fp8_param_gather (--fp8-param-gather; Megatron-Bridge's FP8 current-scaling
  // presets): the layers' linear weights are FP8 parameters (no bf16 copy), the distributed
  // optimizer casts its fp32 master shard into them after the step and all-gathers them in FP8;
  // each step's first forward builds the transposes. Per-tensor FP8, distributed optimizer,
  // dense models.
  bool fp8_param_gather = false;
  // Transformer Engine's userbuffers TP communication overlap as Megatron-Core's --tp-comm-overlap
  // runs it with TE's default per-layer configuration (schedules/tp_emitter_overlap.cpp), with
  // sequence parallelism: the all-gathers before the QKV and MLP-up GEMMs and of dY before the
  // projection and MLP-down dgrad GEMMs as tp ring-exchange steps beside tp chunk GEMMs; the
  // reduce-scatters after the projection and MLP-down GEMMs pipelined over 4 chunk GEMMs; the
  // column layers' backward collectives as userbuffers bulk overlaps.
  bool tp_comm_overlap = false;
  // The userbuffers method of the reduce-scatter after the projection and MLP-down forward GEMMs
  // (TE's proj_fprop / fc2_fprop): pipeline (TE's default) or ring_exchange (tp chunk GEMMs on
  // gpu_sms - 1 SMs, each chunk sent to its owner, one reduction kernel after; Megatron-Bridge's
  // H100 FP8 configurations); with tp_comm_overlap only.
  TpOverlapRs tp_overlap_rs = TpOverlapRs::pipeline;
  // The GPU's streaming multiprocessors, with tp_comm_overlap: the GEMMs beside TE's SM-based
  // communication kernels run on gpu_sms - 16 of them (0: not given).
  int gpu_sms = 0;
  // The attention core: flash (one fused kernel, no s x s scores kept) or materialized (the
  // pre-FlashAttention Megatron core: QK^T and PV GEMMs around a fused scale-mask-softmax and
  // dropout over the b x a x s x s scores, which are also kept for the backward); cp 1 only.
  AttentionCore attention = AttentionCore::flash;
  // The loss over the head's logits (schedules/cross_entropy.hpp): its passes' bytes and memory.
  CrossEntropy cross_entropy = CrossEntropy::vocab_parallel;
  // The kernels of the norms, RoPE, the gated activation and grouped-query K/V
  // (schedules/layer_kernels.hpp): Megatron-Core's fused ones, or PyTorch eager / compiled.
  LayerKernels layer_kernels = LayerKernels::fused;
  DType dtype = DType::bf16;
  // The linears' low-precision recipe (schedules/precision.hpp): the QKV, projection and MLP GEMMs
  // of every layer (not the embedding or the head) with their casts, amax and scale updates.
  Precision precision = Precision::bf16;
  int dp_buckets = 4;  // DP gradient buckets per chunk, reduced as the backward releases them
  // Layers per global stage given by the user (--decoder-first/last-pipeline-num-layers,
  // --layers-per-stage; memory_model.hpp); empty: split_layers' even / uneven rule.
  LayerLayout layout;
  // Simulate one DP replica: DP ranks run identical programs, so only dp index 0 is built and its
  // gradient reductions are collectives timed as the whole DP group. Exactly: the
  // Program's mesh stays the whole tp x cp x dp x pp mesh (every group and pipeline neighbour
  // sits where it really does; ranks with dp index > 0 simply have no ops); each gradient
  // reduce-scatter / all-reduce and each parameter all-gather of the distributed optimizer is a
  // collective over the built members of the dp-cp group (the cp ranks of dp index 0, one member
  // when cp = 1) whose Group::timed_as is the FULL dp x cp group: the cost model prices it at
  // that group's real placement, same kind and bytes (the graph holds no time).
  // What is left out: the other replicas' ops and the rendezvous with them (they would arrive at
  // the same time: identical programs), and under --network flow their flows, which the
  // quotient network of sim/flow_fold.hpp stands for (meshsim step unfolds where it cannot);
  // RunMetrics' byte counts leave out the DP traffic to other replicas. With the analytical
  // network, folded and unfolded step times are equal (tests/schedules).
  bool fold_dp = true;
  // Simulate one TP rank per (cp, dp, pp) coordinate: the TP ranks of a TP group run identical
  // programs (the same shapes: heads / t, ffn / t, ceil(V / t) each), so with the analytical
  // network they move in lockstep and each TP collective takes exactly its analytical time.
  // Exactly: the mesh stays whole; only ranks with tp index 0 get ops (with fold_dp, only those
  // with tp index 0 and dp index 0); every TP all-gather / reduce-scatter / all-reduce is a
  // collective over a one-member "tp" group (the rank itself) whose Group::timed_as is the FULL
  // tp group, priced at its real placement with the same kind, bytes, dtype and algorithm. The
  // CP ring exchanges, the pipeline p2p and the DP reductions run between the
  // built (tp index 0) ranks as before; the DP group placement and times are those of the real
  // group (the same for every tp index). What is left out: the other TP ranks' ops, the rendezvous
  // with them (simultaneous: lockstep), under --network flow their flows (sim/flow_fold.hpp);
  // RunMetrics' byte counts leave out the TP traffic and the other TP ranks' CP / PP / DP traffic.
  // Holds exactly when every TP rank sees the same placements: gpus_per_node a multiple or a
  // divisor of tp (every profile); with the analytical network, folded and unfolded step times
  // are equal (tests/schedules).
  bool fold_tp = true;
  // Expert parallelism of the MoE layers (ep, etp, dispatcher, routing; schedules/moe_plan.hpp).
  MoePlan moe;
  bool operator==(const StepPlan&) const = default;
};

int world_size(const StepPlan& plan);
// Whether the step builder folds TP for this plan: fold_tp, tp > 1, and gpus_per_node a multiple
// or a divisor of tp (otherwise TP ranks could sit differently across nodes and it builds them
// all).
bool folds_tp(const StepPlan& plan, int gpus_per_node);
// Whether an MoE plan's expert groups allow folding (expert_groups_fold_evenly); true for a dense
// plan. build_training_step builds every rank of an MoE plan that does not.
bool moe_folds(const StepPlan& plan, int gpus_per_node);
int microbatches(const StepPlan& plan);
MemoryPlan memory_plan(const StepPlan& plan);
// The loss a plan computes when none is given: torchtitan's (torch-fp32) for its op-level
// recompute policy, which only torchtitan runs (selective-op), Megatron-LM's vocab-parallel one
// otherwise.
CrossEntropy default_cross_entropy(Recompute recompute);

// Throws InputError naming the rule the plan breaks (divisibility of heads/kv heads/ffn by tp,
// seq by cp (2 cp for zigzag) and tp under SP, gbs by dp x mbs, layers over pp x vp, the
// schedule's shape rules, world size = tp x pp x cp x dp).
void check_step_plan(const TransformerModel& model, const StepPlan& plan);
// The rules of tp_comm_overlap (tp > 1, sequence parallel, bf16 linears, the GPU's SMs, tokens per
// microbatch by TE's 4 reduce-scatter chunks); part of check_step_plan.
void check_tp_comm_overlap(const StepPlan& plan, std::int64_t seq);

// The builder's size estimate of the plan's Program: built ranks (tp x pp x cp x dp, less the
// folded tp and dp) x microbatches x layers per pipeline rank x (40 + 8 cp) ops per layer, an
// upper bound for the usual plans. The size guard checks it; `meshsim sweep` uses it to keep
// large plans from being simulated at the same time.
std::int64_t estimated_step_ops(const TransformerModel& model, const StepPlan& plan,
                                int gpus_per_node);

// What the step does per iteration (tokens, model FLOPs per token with causal attention, GPUs),
// for sim/step_metrics' evaluate_step.
StepWork step_work(const TransformerModel& model, const StepPlan& plan);

// Micro-batch-level recompute: [pipeline rank][microbatch x chunks + chunk] = whether that forward
// keeps all its activations (no recompute at its backward). All true with recompute none; all
// false without num_microbatches_with_partial_activation_checkpoints.
std::vector<std::vector<bool>> kept_whole(const StepPlan& plan);
// The paper's choice of N ("uses all the available device memory"): the largest N in [0, the
// largest window] whose memory estimate fits the hardware (0 when none does).
int fitting_whole_microbatches(const TransformerModel& model, const StepPlan& plan,
                               const HardwareProfile& hardware);

// The whole sequence of the plan (0 in the plan: the model's).
std::int64_t step_seq(const TransformerModel& model, const StepPlan& plan);
// The pipeline the plan runs (schedule, stages, microbatches, chunks).
PipelineShape step_shape(const StepPlan& plan);
// The size guard: refuses (InputError) a plan whose Program would exceed kMaxStepOps.
inline constexpr std::int64_t kMaxStepOps = std::int64_t{24} << 20;  // ~500 bytes each at run time
void check_step_size(const TransformerModel& model, const StepPlan& plan, bool tp_folded);
std::int64_t estimated_ops(const TransformerModel& model, const StepPlan& plan, bool tp_folded);

}  // namespace meshsim
