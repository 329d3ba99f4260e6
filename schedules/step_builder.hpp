#pragma once
// The builder behind build_training_step (schedules/training_step.cpp states what it emits):
// one rank at a time, the pipeline actions of schedules/pipeline_emitter, each a run of layers
// (schedules/step_layers.cpp: norms, the TP layers of schedules/tp_emitter, the attention core
// and the CP ring of schedules/ring_emitter) with the DP gradient buckets and the optimizer.
// Internal to schedules/: include it only from the step's own .cpp files.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "schedules/gradient_buckets.hpp"
#include "schedules/model_catalog.hpp"
#include "schedules/moe_plan.hpp"
#include "schedules/pipeline_emitter.hpp"
#include "schedules/ring_emitter.hpp"
#include "schedules/step_plan.hpp"
#include "schedules/tp_emitter.hpp"
#include "sim/program.hpp"

namespace meshsim::step_detail {

class StepBuilder final : private PipelineEmitHost, private RingEmitHost, private TpEmitHost {
 public:
  StepBuilder(const TransformerModel& model, const StepPlan& plan, int gpus_per_node)
      : m_(model),
        p_(plan),
        shape_(step_shape(plan)),
        pp_(plan.pp),
        v_(chunks_of(shape_)),
        stages_(plan.pp * v_),
        t_(plan.tp),
        n_cp_(plan.cp),
        sp_(plan.sequence_parallel && plan.tp > 1),
        fold_tp_(folds_tp(plan, gpus_per_node)),
        split_(split_layers(model.layers, shape_, plan.layout)),
        kept_whole_(kept_whole(plan)),
        builder_(make_megatron_mesh(plan.tp, plan.cp, plan.dp, plan.pp, gpus_per_node),
                 plan.tp > 1 || plan.cp > 1, describe(model, plan)) {
    init(model, plan, gpus_per_node);
  }

  static std::string describe(const TransformerModel& m, const StepPlan& p);

  Program build() &&;

 private:
  // The constructor's body: streams, sizes, the ring configuration and parameter counts.
  void init(const TransformerModel& model, const StepPlan& plan, int gpus_per_node);

  // ---- per-rank context -------------------------------------------------------------------------
  void begin_rank(const Mesh& mesh, int rank, int pr, int cp_index);

  void finish_rank();
  void zero_grad_buffer();
  void rank_parameters(std::int64_t& params, std::int64_t& experts) const;

  int gs(int pr, int chunk) const { return global_stage(shape_, pr, chunk); }
  int first_layer(int stage) const { return layer_begin_[static_cast<std::size_t>(stage)]; }
  int layer_count(int stage) const { return split_.layers[static_cast<std::size_t>(stage)]; }

  std::int64_t chunk_params(int stage) const;

  // ---- op helpers
  // --------------------------------------------------------------------------------
  std::vector<OpId> take_waits() {
    std::vector<OpId> w;
    w.swap(waits_);
    return w;
  }
  void wait(OpId op) {
    if (op >= 0) waits_.push_back(op);
  }

  OpId kernel(std::string name, Phase phase, int layer, int mb, int chunk, KernelKind kind,
              KernelShape shape, ElementwiseFn fn = ElementwiseFn::none, int step = -1,
              QuantFormat quant = QuantFormat::none);

  // A collective on tp_comm in the TP group, in the plan's dtype, labelled with the current
  // layer context (tp_ctx_); after_compute: it waits for the last compute kernel (and whatever
  // the next kernel waits for, e.g. a received activation).
  OpId tp_comm_op(std::string name, Phase phase, CollectiveCall call, bool after_compute);

  OpId dp_collective(std::string name, Phase phase, int mb, int chunk, CollectiveKind kind,
                     std::int64_t bytes);

  // Activation bytes of one TP collective: a whole [T, width] tensor.
  std::int64_t act_bytes(std::int64_t width) const { return tokens_ * width * e_; }

  // ---- tensor-parallel linear layers (tp_linear.cpp's placement) --------------------------------
  struct Ctx {
    int layer = -1, mb = 0, chunk = 0;
    Phase phase = Phase::fwd;
  };

  // ---- tensor-parallel linear layers: schedules/tp_emitter, without tensors -------------------
  OpId tp_kernel(std::string name, Phase phase, KernelCall call) override;
  OpId tp_collective(std::string name, Phase phase, CollectiveKind kind, std::int64_t bytes,
                     SlotId /*in*/, SlotId /*out*/) override {
    if (t_ == 1) return -1;
    return tp_comm_op(std::move(name), phase, CollectiveCall{.kind = kind, .bytes = bytes}, true);
  }
  void tp_wait(OpId op) override { wait(op); }
  OpId tp_userbuffers(std::string name, Phase phase, CollectiveKind kind, std::int64_t bytes,
                      bool after_compute, int shift) override;

  // The op names of a layer ("qkv", "recompute mlp up", ...), made once per name.
  const TpNames& tp_names(const std::string& what);

  // One rank's layer: column n = out / t, k = in; row n = out, k = in / t; W stored [k, n]. Its
  // GEMMs in the plan's precision, but for the output head (`what` "head"), which stays bf16.
  TpLayerEmitter tp_layer(const Ctx& c, bool column, std::int64_t n, std::int64_t k,
                          const std::string& what);

  void column_forward(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k) {
    tp_layer(c, true, n, k, what).forward(*this, {}, tp_names(what), c.phase);
  }
  void row_forward(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k) {
    tp_layer(c, false, n, k, what).forward(*this, {}, tp_names(what), c.phase);
  }
  // with_wgrad false: B of a split backward (the wgrad comes in W).
  void column_backward(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k,
                       bool with_wgrad) {
    tp_layer(c, true, n, k, what).backward(*this, {}, tp_names(what), with_wgrad);
  }
  void row_backward(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k,
                    bool with_wgrad) {
    tp_layer(c, false, n, k, what).backward(*this, {}, tp_names(what), with_wgrad);
  }
  void column_wgrad(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k) {
    tp_layer(c, true, n, k, what).wgrad(*this, {}, tp_names(what));
  }
  void row_wgrad(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k) {
    tp_layer(c, false, n, k, what).wgrad(*this, {}, tp_names(what));
  }

  // ---- attention: one causal block, or the CP ring of schedules/ring_emitter
  // ---------------------- The step's names and types: no tensors, its own cast and all-gather
  // names, and lse merges costed in the storage dtype.
  static inline const RingEmitStyle kRingStyle{false, "attn out cast", "kv all-gather", true};

  OpId ring_kernel(OpName name, Phase phase, int step, KernelCall call) override;
  OpId ring_comm(OpName name, Phase phase, int step, OpBody body, std::vector<OpId> deps) override;
  void ring_wait(OpId op) override { wait(op); }
  // K/V come out of the QKV gemm (and whatever the next kernel waits for).
  std::vector<OpId> kv_producer() override;
  int cp_rank(int cp_index) const override { return cp_ranks_[static_cast<std::size_t>(cp_index)]; }
  GroupId cp_group() const override { return cp_group_; }
  SlotId ring_slot(std::string, DType, std::vector<std::int64_t>,
                   std::vector<TokenRange>) override {
    return -1;
  }

  AttentionShape whole_sequence_block() const;

  // The attention core forward (phase fwd, or bwd when recomputed).
  void attention_forward(const Ctx& c, Phase phase);

  void attention_backward(const Ctx& c);

  // The materialized core (StepPlan::attention) on the whole sequence of this rank's heads.
  void materialized_forward(const Ctx& c, Phase phase, const std::string& pre);
  void materialized_backward(const Ctx& c);
  // One of its batched GEMMs, costed as one GEMM of m = b·(a/t)·s rows, n x k per row block.
  void core_gemm(const Ctx& c, Phase phase, const std::string& name, std::int64_t n,
                 std::int64_t k);
  // One element-wise pass over its b·(a/t)·s·s scores moving `operands` score-sized tensors
  // (and `mask_bytes` per score for dropout's 1-byte mask).
  void score_pass(const Ctx& c, Phase phase, const std::string& name, std::int32_t operands,
                  std::int32_t mask_bytes);

  // ---- one transformer layer
  // ---------------------------------------------------------------------
  std::int64_t qkv_n() const {
    // MLA: the q and kv down-projections, whole on every TP rank (step_moe.cpp).
    if (m_.mla) return m_.mla->q_lora_rank + m_.mla->kv_lora_rank + m_.mla->qk_rope_head_dim;
    return (m_.q_width() + 2 * m_.kv_hidden()) / t_;
  }
  // The projection's input width per rank: the core's output channels / t.
  std::int64_t proj_k() const {
    return (m_.mla ? m_.heads * m_.mla->v_head_dim : m_.q_width()) / t_;
  }
  std::int64_t up_n() const { return (m_.gated_mlp ? 2 : 1) * m_.ffn_hidden / t_; }
  // The MLP activation over the rank's tokens x f/t outputs. GELU (Megatron-LM's fused bias-GELU):
  // read x, write y; backward read x and dy, write dx. SwiGLU reads both halves of the up
  // projection and writes their product; its backward reads both halves and dy and writes the
  // gradient of both halves.
  VectorShape activation_shape(bool backward) const {
    return activation_shape(backward, tokens_, m_.ffn_hidden / t_);
  }
  // The same over `rows` x `f` outputs (routed expert copies, shared experts).
  // SwiGLU's passes are the plan's layer kernels' (schedules/layer_kernels.hpp).
  VectorShape activation_shape(bool backward, std::int64_t rows, std::int64_t f) const {
    if (m_.gated_mlp) return vector_of(rows * f, gated_activation_pass(p_.layer_kernels, backward));
    return VectorShape{rows * f, backward ? 3 : 2};
  }
  static VectorShape vector_of(std::int64_t elements, PassBytes pass) {
    return VectorShape{elements, pass.operands, pass.fp32_bytes};
  }

  // LayerNorm/RMSNorm forward and backward over the rank's tokens x h, by the plan's layer kernels
  // (fused: read x, write y; backward read x and dy, write dx).
  void norm(const Ctx& c, const std::string& name, Phase phase);
  void norm_backward(const Ctx& c, const std::string& name);
  // RoPE on this rank's Q and K (step_layers.cpp), and torchtitan's repeat_kv copy of K and V to
  // every query head (eager and compiled PyTorch), forward or recomputed, and their backward.
  void rope(const Ctx& c, const std::string& pre, Phase phase);
  void rope_backward(const Ctx& c);

  // The end of a residual branch, as Megatron-LM's fused bias-dropout-add: the branch output
  // (with its bias and dropout mask) added to the residual stream — read both, write the sum
  // (kernel_bytes of an accumulate: 3 passes over the rank's tokens x h).
  void residual_add(const Ctx& c, const std::string& name, Phase phase);
  // Its backward: the dropout mask applied to the incoming gradient when the model has dropout
  // (read the gradient and the 1-byte mask, write it masked), and the branch's input gradient added
  // to the residual stream's (3 passes).
  void residual_backward(const Ctx& c, const std::string& name);

  void layer_forward(const Ctx& c);

  // Whether this rank's (microbatch, chunk) recomputes in its backward (micro-batch-level
  // recompute keeps some whole: StepPlan::num_microbatches_with_partial_activation_checkpoints).
  bool recomputes(const Ctx& c) const {
    return !kept_whole_[static_cast<std::size_t>(pr_)]
                       [static_cast<std::size_t>(c.mb * v_ + c.chunk)];
  }

  void layer_backward(const Ctx& c, bool with_wgrad);
  // Recompute::selective_op at the layer's backward: the norms, the residual add feeding the MLP
  // norm, the activation and the matmuls the policy did not save (wk, wo, and w3 with SwiGLU or w2
  // without), as compute kernels (at tp > 1 the sequence-parallel all-gather a recomputed column
  // matmul would repeat is not emitted).
  void recompute_selective_op(const Ctx& c);

  void layer_wgrad(const Ctx& c);

  // ---- multi-token prediction (step_mtp.cpp) ----------------------------------------------------
  // The MTP modules on the last stage, after the head: forward, backward (B, or B + W) and W.
  void mtp_forward(Ctx c);
  void mtp_backward(Ctx c, bool with_wgrad);
  void mtp_wgrad(Ctx c);
  // Module k's parameters on a TP rank, experts apart: enorm, hnorm and its final norm (h each),
  // the 2h x h projection / t and its layer (layer index layers + k).
  std::int64_t mtp_module_params(int k) const {
    return 3 * m_.hidden + 2 * m_.hidden * m_.hidden / t_ + layer_params(m_.layers + k);
  }

  // ---- MoE layers and MLA (step_moe.cpp) --------------------------------------------------------
  void moe_setup();
  void moe_begin_rank(int rank);
  // The MLP part of layer c.layer: the dense MLP, or the MoE layer (router, dispatch, experts,
  // combine, shared experts).
  void mlp_forward(const Ctx& c, const std::string& pre);
  void mlp_backward(const Ctx& c, bool with_wgrad);
  void mlp_wgrad(const Ctx& c);
  void moe_forward(const Ctx& c, const std::string& pre);
  void moe_backward(const Ctx& c, bool with_wgrad);
  void shared_up_forward(const Ctx& c, const std::string& pre);
  void shared_down_forward(const Ctx& c, const std::string& pre);
  void shared_backward(const Ctx& c, bool with_wgrad);
  template <typename Emit>
  void beside_all_to_all(Emit emit);
  void moe_wgrad(const Ctx& c);
  void experts_pass(const Ctx& c, const std::string& pre, bool backward, bool with_wgrad);
  void expert_wgrads(const Ctx& c);
  // The routed experts' low-precision spec (TE's GroupedLinear casts as a dense linear does;
  // quant none in bf16) and the cast of `elements` elements of a tensor of the experts, with its
  // amax pass under current scaling, into row- and column-wise copies.
  TpLayerSpec expert_quant_spec(const Ctx& c) const;
  void expert_cast(const Ctx& c, const TpLayerSpec& q, const std::string& name, Phase phase,
                   std::int64_t elements);
  // yield: hand an overlapped pair's baton to the other part after an EP collective (false: the
  // caller yields itself, after what it emits next).
  OpId moe_collective(const Ctx& c, std::string name, CollectiveKind kind, GroupId group,
                      std::int64_t bytes, bool yield = true, StreamId stream = -1);
  // flex (schedules/deepep_volume.hpp): DeepEP's groups and bytes for this rank's EP group.
  void deepep_setup(const std::vector<int>& ep_ranks);
  std::vector<int> built_members(const std::vector<int>& ranks) const;
  GroupId expert_group(std::string_view dim, const std::vector<int>& ranks);
  void deepep_all_to_all(const Ctx& c, const std::string& name, bool to_experts, bool yield);
  // The dispatcher's collectives moving token copies to the experts (dispatch, or the combine's
  // backward) or back (combine, or the dispatch's backward).
  // `beside` (--moe-shared-expert-overlap): emitted right after the EP all-to-all, not waiting
  // for it. Returns the allgather dispatcher's collective (-1: none or another dispatcher).
  OpId move_tokens(const Ctx& c, const std::string& name, bool to_experts, bool yield = true,
                   const std::function<void()>& beside = {});
  // MLA's q and kv up-projections (per rank: a / t heads) around the core.
  void mla_up_forward(const Ctx& c, Phase phase, const std::string& pre);
  void mla_up_backward(const Ctx& c, bool with_wgrad);
  void mla_up_wgrad(const Ctx& c);
  // Parameters of layer l on this rank that reduce over dp x cp (an MoE layer's experts reduce
  // over the expert-data-parallel group instead) and those of its experts.
  std::int64_t layer_params(int layer) const {
    return is_moe_layer(m_, layer) ? moe_layer_params_ : layer_params_;
  }
  // Of those, the linear weights (an MoE layer's attention and shared-expert linears).
  std::int64_t layer_linear_params(int layer) const {
    return is_moe_layer(m_, layer) ? moe_layer_linear_params_ : layer_linear_params_;
  }
  std::int64_t expert_params(int layer) const {
    return is_moe_layer(m_, layer) ? expert_layer_params_ : 0;
  }
  // The expert gradients of a chunk over the expert-data-parallel group (after its last wgrad).
  void reduce_expert_grads(int stage, int mb, int chunk);

  // ---- gradient buckets (schedules/gradient_buckets) --------------------------------------------
  GradientBuckets buckets_for(int stage) const {
    return GradientBuckets(layer_count(stage), p_.dp_buckets, stage == 0 ? embedding_params_ : 0,
                           grad_bytes_);
  }

  void launch_ready(GradientBuckets& b, int mb, int chunk);

  // ---- overlapped parameter all-gathers (overlap_param_gather; step_param_gather.cpp) ----------
  // Issued at the rank's start, chunk by chunk, each chunk's buckets in forward order.
  void launch_param_gathers();
  void cast_fp8_param_shard();
  std::int64_t param_gather_bytes(std::int64_t params, std::int64_t layers) const;
  // Makes the chunk's first forward of `layer` wait for its bucket's all-gather.
  void wait_param_gather(int chunk, int layer);
  std::int64_t bucket_params(int stage, const GradientBuckets& b, int j) const;

  void flush_buckets();

  // ---- low-precision linears (StepPlan::precision; step_precision.cpp) --------------------------
  // The TP layer's quantization fields for layer `what` (none for the head).
  void quantize_spec(TpLayerSpec& spec, const Ctx& c, const std::string& what) const;
  // Delayed scaling, once per step before the optimizer: the amax all-reduce of the rank's FP8
  // tensors and the scale update over their histories.
  void update_fp8_scales();
  // FP8 tensors of the rank's linears (input, weight, output gradient of each).
  std::int64_t rank_layers() const;  // the transformer layers of this rank's chunks
  std::int64_t fp8_tensors() const;
  // Whether FSDP all-gathers unit u (a layer) with its linear weights quantized, and that gather:
  // the cast of the rank's shard on the gather stream; returns the all-gather's bytes.
  bool gathers_quantized_unit(int stage, int u) const;
  std::int64_t quantized_unit_gather(const Ctx& c, int stage, int u);
  // torchtitan's per-step amax of the FP8 weights for the next step's quantized all-gathers.
  void precompute_fsdp_scales();

  // ---- ZeRO-2/3, FSDP, HSDP (step_sharding.cpp) -------------------------------------------------
  // The shard group (dp x cp / hsdp ranks) and, under HSDP, the replicate group of this rank.
  void begin_sharding(const Mesh& mesh, int rank);
  bool shards_optimizer() const {
    return (p_.distributed_optimizer || p_.sharding.zero >= 1) && dp_size_ > 1;
  }
  // Ranks the optimizer state is sharded over.
  int state_shards() const { return shards_parameters(p_.sharding) ? shard_size_ : dp_size_; }
  bool gathers_params() const { return shards_parameters(p_.sharding) && shard_size_ > 1; }
  // FSDP's no_sync: units gathered once per step and their gradients reduced once
  // (gathers_once_per_step, schedules/sharding.hpp).
  bool gathers_once() const { return gathers_params() && gathers_once_per_step(p_.sharding); }
  // FSDP units of a stage: [embedding (stage 0)] [each layer] [final norm + head (last stage)].
  int unit_count(int stage) const;
  int layer_unit(int stage, int layer) const;
  int head_unit(int stage) const { return unit_count(stage) - 1; }
  // The model layer of unit u (-1: the embedding or the head unit).
  int unit_layer(int stage, int u) const;
  // A unit's parameters without an MoE layer's routed experts: with ep > 1 torchtitan wraps those
  // in their own FSDP unit over the expert-data-parallel group (apply_fsdp's dp_mod_ep mesh),
  // gathered and reduce-scattered right after the layer's (unit_experts); at ep 1 they are the
  // layer's. The head unit carries the MTP modules' experts.
  std::int64_t unit_params(int stage, int u) const;
  std::int64_t unit_experts(int stage, int u) const;
  std::int64_t unit_routed_experts(int stage, int u) const;
  // A forward or backward of one (microbatch, chunk) starts: no unit gathered yet.
  void begin_unit_pass(int stage);
  // Before unit u's compute: waits for its parameter all-gather (issued now unless prefetched)
  // and prefetches unit u + step. In the backward only when parameters were resharded; with
  // gathers_once() in the chunk's first forward of the step only.
  void gather_unit(const Ctx& c, int stage, int u, int step);
  // After unit u's weight gradients: its gradient reduce-scatter (HSDP: then an all-reduce of
  // the shard over the replicas), waited for by the optimizer step; with gathers_once() after
  // the chunk's last weight gradients of the step only.
  void reduce_unit(const Ctx& c, int stage, int u);
  OpId issue_gather(const Ctx& c, int stage, int u);

  // Emits one compute part; returns the op after which its output (activation or input gradient
  // sent to the neighbour stage) is ready.
  OpId emit_compute(int /*pr*/, PipeWork work, int mb, int chunk, std::vector<OpId> deps) override;
  // Its three kinds on global stage `stage`: the forward (embedding, layers, head and loss), the
  // deferred weight gradients (W) and the backward (B, with W when with_wgrad); final_wgrad: the
  // chunk's last microbatch, whose gradients go to the buckets.
  OpId forward_pass(int stage, int mb, int chunk);
  OpId weight_grad_pass(int stage, int mb, int chunk, bool final_wgrad);
  OpId backward_pass(int stage, int mb, int chunk, bool with_wgrad, bool final_wgrad);
  // --overlap-moe-comm (step_overlap.cpp): the pair's two parts emitted on two threads that hand
  // a baton back and forth at every EP collective (only one runs at a time: the Program is the
  // same on every run), each with its own waits and last compute op. DualPipeV's forward leads;
  // in Megatron's combined 1F1B the backward leads (its combine's gradient first).
  OpId emit_pair(int pr, Part first, Part second) override;
  void yield_to_pair();  // at an EP collective: let the pair's other part emit until its next

  // ---- the pipeline exchanges (schedules/pipeline_emitter; pipeline indices) -------------------
  int mesh_peer(int peer_pp) const { return peer_ranks_[static_cast<std::size_t>(peer_pp)]; }

  StreamId peer_stream(int peer);

  StreamId pair_stream(int a, int b) {
    return builder_.stream(fmt::format("pp_comm {}-{}", std::min(a, b), std::max(a, b)));
  }

  Transfer emit_transfer(int /*pr*/, const PipeMessage& m, int tag, bool /*send*/) const override {
    return Transfer{mesh_peer(m.peer), msg_bytes_, tag, -1};
  }

  OpId emit_exchange(int /*pr*/, int peer, std::string name, P2PCall call, int boundary,
                     OpId after) override;

  const TransformerModel& m_;
  const StepPlan& p_;
  PipelineShape shape_;
  int pp_, v_, stages_, t_, n_cp_;
  bool sp_, fold_tp_;
  LayerSplit split_;
  std::vector<std::vector<bool>> kept_whole_;  // [pipeline rank][mb x v + chunk]
  ProgramBuilder builder_;
  StreamId compute_ = 0, tp_comm_ = 0, cp_comm_ = 0, dp_comm_ = 0, gather_comm_ = -1;
  std::int64_t seq_ = 0, tokens_ = 0, local_tokens_ = 0, e_ = 2, msg_bytes_ = 0;
  int grad_bytes_ = 4;  // bytes per gradient element in the DDP buffer (grad_reduce_in_fp32)
  std::int64_t layer_params_ = 0, layer_linear_params_ = 0, embedding_params_ = 0, head_params_ = 0,
               vocab_shard_ = 0;
  std::vector<int> layer_begin_;
  RingAttentionConfig ring_;
  // Per-rank state.
  int rank_ = 0, pr_ = 0, cp_index_ = 0, dp_size_ = 1;
  GroupId tp_group_ = 0, cp_group_ = 0, dp_group_ = 0;
  std::vector<int> cp_ranks_;
  std::optional<RingEmitter> ring_emitter_;  // this rank's CP ring
  Ctx ring_ctx_;                             // labels of the ring being emitted
  Ctx tp_ctx_;                               // labels of the layer being emitted
  std::map<std::string, TpNames> tp_names_;
  std::vector<int> peer_ranks_;  // the rank at each pipeline index with this rank's other coords
  std::vector<StreamId> pair_streams_;  // the pp_comm stream to each pipeline index
  std::vector<OpId> waits_;
  OpId last_compute_ = -1;
  std::vector<OpId> dp_ops_;
  std::vector<std::int64_t> bucket_bytes_;
  std::vector<std::int64_t> bucket_layers_;  // layers in each bucket of bucket_bytes_
  struct DelayedBucket {
    std::int64_t bytes = 0;
    int mb = 0, chunk = 0, index = 0;
  };
  std::vector<DelayedBucket> delayed_;
  std::vector<int> wgrad_passes_;
  std::vector<std::vector<OpId>> param_gathers_;  // [chunk][bucket], overlap_param_gather
  std::vector<int> forwards_;                     // forward passes emitted per chunk
  bool first_forward_ = false;  // the forward being emitted is its chunk's first of the step
  int shard_size_ = 1;          // ranks of the shard group
  GroupId shard_group_ = 0, replicate_group_ = -1;
  std::vector<OpId> unit_gathers_;  // this pass's all-gather per unit (-1: not issued)
  std::vector<bool> unit_waited_;
  // MoE (step_moe.cpp).
  int ep_ = 1, etp_ = 1, edp_size_ = 1;
  StreamId ep_comm_ = 0;
  GroupId ep_group_ = 0, etp_group_ = 0, edp_group_ = 0, ep_etp_group_ = 0;
  std::int64_t moe_layer_params_ = 0, moe_layer_linear_params_ = 0, expert_layer_params_ = 0,
               dispatch_bytes_ = 0;
  std::int64_t gathered_bytes_ = 0;  // the ETP all-gather of the received token copies
  // flex: NVLink all-to-all over the node's EP ranks (the whole EP group on one node) and, over
  // nodes, the RDMA all-to-all among the EP ranks of this local index (rdma_group_ 0: one node).
  StreamId ep_nvl_comm_ = -1;
  GroupId nvl_group_ = 0, rdma_group_ = 0;
  std::int64_t nvl_bytes_ = 0, rdma_bytes_ = 0;
  std::vector<std::int64_t> expert_tokens_;  // token copies per local expert (after ETP gather)
  struct PairBaton;
  PairBaton* baton_ = nullptr;  // set while an overlapped pair is emitted
};

}  // namespace meshsim::step_detail
