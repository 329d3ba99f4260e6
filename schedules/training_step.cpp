#include "schedules/training_step.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "schedules/gradient_buckets.hpp"
#include "schedules/pipeline_emitter.hpp"
#include "schedules/ring_emitter.hpp"
#include "schedules/tp_emitter.hpp"
#include "sim/error.hpp"

// What build_training_step emits (design §4.4), per mesh rank (Megatron order: tp fastest, then
// cp, then dp, pp outermost), on the streams compute, tp_comm, cp_comm, dp_comm and one
// "pp_comm a-b" stream per pair of pipeline ranks (a < b, pipeline indices):
//
// Notation: t = tp, T = mbs x seq / cp tokens per rank and microbatch, T_s = T / t under sequence
// parallelism (SP) else T, h hidden, h_kv = kv_heads x head_dim, f ffn_hidden, V vocab, e bytes of
// the plan's dtype. GEMMs are GemmShape{m, n, k}: C[m, n] = A[m, k] B[k, n].
//
// Layer forward:  norm (elementwise, T_s h) | SP: all-gather x (T h e) | QKV gemm {T, (h +
//   2 h_kv)/t, h} | attention: cp = 1 one causal attention_fwd block over the local sequence with
//   heads/t and kv_heads/t; cp > 1 the CP ring of ring_attention.cpp (same blocks, K/V rotation by
//   p2p exchange / one all-gather / permutes on cp_comm overlapping the blocks, lse merges) |
//   projection gemm {T, h, h/t} | SP: reduce-scatter, else all-reduce of y (T h e) | norm |
//   SP: all-gather | MLP up gemm {T, (2f gated | f)/t, h} | activation (elementwise, T f/t x (2
//   gated | 1)) | MLP down gemm {T, h, f/t} | SP: reduce-scatter, else all-reduce.
//   Every TP collective waits (as a comm stream does) for the last compute kernel; the kernel that
//   needs its result waits for it. Residual adds and biases are taken as fused into the
//   neighbouring kernels.
// Layer backward (reverse order, seed 002's overlap): MLP down (row): SP all-gather dy, dgrad
//   gemm {T, f/t, h}, wgrad gemm {h, f/t, T}; activation backward; MLP up (column): SP async
//   all-gather of x, dgrad {T, h, n_up}, async reduce-scatter (SP) / all-reduce of dx, wgrad
//   {n_up, h, T}, wait; norm backward; projection (row) as MLP down; attention backward: cp = 1 one
//   attention_bwd block, cp > 1 the ring backward (K/V ring + fp32 dK/dV ring, accumulates); QKV
//   (column) as MLP up; norm backward. Schedules that split the backward (zb-h1, zb-v, dualpipev
//   pairs) run everything but the wgrad gemms in B and the wgrad gemms (after SP's all-gather of
//   the column layers' inputs) in W.
// Recompute: full re-runs the layer's whole forward (collectives and CP ring included) right
//   before its backward; selective re-runs the attention core (the CP ring forward with cp > 1).
// First global stage: embedding lookup (copy, T_s h) before the first layer and its gradient
//   (accumulate, T_s h) after the last layer backward. Last global stage: final norm, the output
//   head (column parallel: SP all-gather, gemm {T, ceil(V/t), h}) and the vocabulary-parallel loss
//   (T ceil(V/t)); backward: head dgrad/wgrad with its TP collectives, final norm backward.
// Pipeline: each pipeline rank runs pipeline_orders() of the schedule; between actions the
//   combined p2p exchanges of schedules/pipeline_emitter, as build_pipeline (same boundaries, same
//   early receives, same explicit commits for the schedules that place their own), message bytes
//   mbs x seq/cp x h / (t if SP) x e. A p2p send waits for the op that produced the activation /
//   input gradient.
// Data parallelism: gradients are reduced over the data-parallel x context-parallel group
//   (Megatron's dp-cp group: CP ranks hold the same weights), dp_buckets buckets per chunk. On
//   the first pipeline rank each bucket is launched on dp_comm as soon as the last
//   weight-gradient pass of the chunk (the last microbatch's backward or W) has produced the
//   bucket's layers (backward order); the other pipeline ranks launch theirs after their last
//   pipeline exchange (Megatron's delay_grad_reduce: under the single hardware queue a bucket
//   waiting behind the previous one would hold back the gradient send that the previous stage
//   waits for, and the delay would chain through every stage); bytes = the
//   bucket's parameters on this rank (TP shard) x 4 (fp32 main grads); reduce-scatter with the
//   distributed optimizer, else all-reduce. Then one optimizer_update over the rank's parameters
//   (/ (dp x cp) distributed) after every reduction, and with the distributed optimizer an
//   all-gather of the updated bf16 parameters per bucket.
// Folding (fold_dp): the mesh is still the whole tp x cp x dp x pp mesh (so every pipeline
//   neighbour and every group sits where it really does), but only the ranks with dp index 0
//   get ops; the others stay empty. Each gradient reduction / parameter all-gather is then a
//   collective over the built members of the dp-cp group (the cp ranks of dp 0; a one-member group
//   when cp = 1) timed as the FULL dp x cp group (Group::timed_as): the cost model prices it at
//   that group's real placement (dp members tp x cp ranks apart) with the same bytes. What
//   is folded: the other replicas' ops (identical programs, same times) and the rendezvous with
//   them. The analytical model has no contention, so the folded and unfolded step times are equal;
//   under the flow-level network the timed-as cost replaces the replicas' flows (the folded DP
//   collectives then do not contend with anything), and metrics' byte counts exclude the DP
//   traffic to other replicas.
// Folding (fold_tp, when folds_tp(): gpus_per_node a multiple or divisor of tp, so every TP rank
//   sees the same placements): only the ranks with tp index 0 get ops. Each TP collective is
//   emitted as before but on a one-member "tp" group (the rank itself) timed as the FULL tp group
//   (Group::timed_as), priced by the cost model at its real placement with the same kind, bytes,
//   dtype and algorithm. The CP ring, the pipeline exchanges and the DP reductions
//   run between the tp index 0 ranks (their groups and peers are unchanged). TP ranks run
//   identical programs in lockstep, so under the analytical network each real TP collective's
//   members all arrive at once and it takes its analytical time: the folded and unfolded step
//   times are equal (tests/schedules, every schedule, SP, CP, distributed optimizer).
// No tensor slots (slot -1): the Program is for simulation.

namespace meshsim {
namespace {

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
        split_(split_layers(model.layers, plan.pp * chunks_of(shape_))),
        builder_(make_megatron_mesh(plan.tp, plan.cp, plan.dp, plan.pp, gpus_per_node),
                 plan.tp > 1 || plan.cp > 1, describe(model, plan)) {
    builder_.reserve(static_cast<std::size_t>(
        std::min(estimated_ops(model, plan, folds_tp(plan, gpus_per_node)), kMaxStepOps)));
    compute_ = builder_.stream("compute");
    tp_comm_ = builder_.stream("tp_comm");
    cp_comm_ = builder_.stream("cp_comm");
    dp_comm_ = builder_.stream("dp_comm");
    seq_ = step_seq(model, plan);
    tokens_ = plan.microbatch_size * (seq_ / plan.cp);
    local_tokens_ = sp_ ? tokens_ / t_ : tokens_;
    e_ = dtype_bytes(plan.dtype);
    msg_bytes_ = plan.microbatch_size * (seq_ / plan.cp) * model.hidden / (sp_ ? t_ : 1) * e_;
    layer_begin_.assign(static_cast<std::size_t>(stages_) + 1, 0);
    for (int s = 0; s < stages_; ++s) {
      layer_begin_[static_cast<std::size_t>(s) + 1] =
          layer_begin_[static_cast<std::size_t>(s)] + split_.layers[static_cast<std::size_t>(s)];
    }
    ring_.cp = plan.cp;
    ring_.seq = seq_;
    ring_.batch = plan.microbatch_size;
    ring_.heads = model.heads / t_;
    ring_.kv_heads = model.kv_heads / t_;
    ring_.head_dim = model.head_dim();
    ring_.dtype = plan.dtype;
    ring_.variant = plan.cp > 1 ? plan.cp_variant : RingVariant::ring;
    ring_.rotate = plan.cp_rotation;
    const ParameterCount pc = count_parameters(model);
    // TP shard of one layer: matrices (and their biases, approximately) / t, norms whole.
    layer_params_ = (pc.attention + pc.mlp) / t_ + pc.norms;
    const std::int64_t vocab_shard = (model.vocab + t_ - 1) / t_;
    embedding_params_ =
        vocab_shard * model.hidden +
        (model.position == PositionEmbedding::learned ? model.seq_len * model.hidden : 0);
    head_params_ = (model.tied_embeddings ? 0 : vocab_shard * model.hidden) + pc.final_norm;
    vocab_shard_ = vocab_shard;
  }

  static std::string describe(const TransformerModel& m, const StepPlan& p) {
    return fmt::format(
        "training step: model={} tp={} pp={} cp={} dp={} vp={} mbs={} gbs={} seq={} schedule={} "
        "cp_variant={} cp_rotate={} recompute={} distributed_optimizer={} sp={} fold_dp={} "
        "fold_tp={}",
        m.name, p.tp, p.pp, p.cp, p.dp, p.vp, p.microbatch_size, p.global_batch, step_seq(m, p),
        to_string(p.schedule), to_string(p.cp_variant), to_string(p.cp_rotation),
        to_string(p.recompute), p.distributed_optimizer, p.sequence_parallel, p.fold_dp,
        p.fold_tp && p.tp > 1);
  }

  Program build() && {
    const PipelineEmitter emitter(shape_);
    const Mesh& mesh = builder_.peek().mesh;
    const int replicas = p_.fold_dp ? 1 : p_.dp;
    const int tp_built = fold_tp_ ? 1 : t_;
    for (int pr = 0; pr < pp_; ++pr) {
      for (int d = 0; d < replicas; ++d) {
        for (int c = 0; c < n_cp_; ++c) {
          for (int t = 0; t < tp_built; ++t) {
            begin_rank(mesh, mesh.rank_of({t, c, d, pr}), pr, c);
            emitter.emit(pr, *this);
            finish_rank();
          }
        }
      }
    }
    return std::move(builder_).finish();
  }

 private:
  // ---- per-rank context -------------------------------------------------------------------------
  void begin_rank(const Mesh& mesh, int rank, int pr, int cp_index) {
    rank_ = rank;
    pr_ = pr;
    cp_index_ = cp_index;
    waits_.clear();
    last_compute_ = -1;
    dp_ops_.clear();
    delayed_.clear();
    bucket_bytes_.clear();
    wgrad_passes_.assign(static_cast<std::size_t>(v_), 0);
    {
      // Folded: a one-member group (the rank itself), timed as the whole TP group.
      std::vector<int> tp_full = mesh.group_of("tp", rank);
      tp_group_ = fold_tp_ ? builder_.group("tp", {rank}, std::move(tp_full))
                           : builder_.group("tp", std::move(tp_full));
    }
    cp_ranks_ = mesh.group_of("cp", rank);
    ring_emitter_.emplace(ring_, cp_index, kRingStyle);
    peer_ranks_.clear();
    pair_streams_.clear();
    for (int q = 0; q < pp_; ++q) {
      auto coords = mesh.coords(rank);
      coords.back() = q;
      peer_ranks_.push_back(mesh.rank_of(coords));
      pair_streams_.push_back(-1);  // created on first use
    }
    cp_group_ = builder_.group("cp", cp_ranks_);
    // The dp-cp group: every rank with this rank's tp and pp coordinates.
    std::vector<int> full;
    for (int d : mesh.group_of("dp", rank)) {
      for (int r : mesh.group_of("cp", d)) full.push_back(r);
    }
    std::sort(full.begin(), full.end());
    dp_size_ = static_cast<int>(full.size());
    if (p_.fold_dp) {
      // The built members only, timed as the whole dp-cp group.
      dp_group_ = full.size() > cp_ranks_.size()
                      ? builder_.group("dp-cp", cp_ranks_, std::move(full))
                      : builder_.group("dp-cp", cp_ranks_);
    } else {
      dp_group_ = builder_.group("dp-cp", full);
    }
  }

  void finish_rank() {
    flush_buckets();
    // The optimizer step after every gradient reduction, then the parameter all-gathers.
    std::int64_t params = 0;
    for (int c = 0; c < v_; ++c) params += chunk_params(gs(pr_, c));
    const bool dist = p_.distributed_optimizer && dp_size_ > 1;
    waits_.insert(waits_.end(), dp_ops_.begin(), dp_ops_.end());
    kernel("optimizer step", Phase::optimizer, -1, -1, -1, KernelKind::optimizer_update,
           VectorShape{dist ? (params + dp_size_ - 1) / dp_size_ : params});
    if (dist) {
      for (std::size_t b = 0; b < bucket_bytes_.size(); ++b) {
        // Updated bf16 parameters: the bucket's fp32 grad bytes / 2 (4-byte grads, 2-byte params).
        dp_collective(fmt::format("param all-gather bucket {}", b), Phase::optimizer, -1, -1,
                      CollectiveKind::all_gather, bucket_bytes_[b] / 4 * e_);
      }
    }
  }

  int gs(int pr, int chunk) const { return global_stage(shape_, pr, chunk); }
  int first_layer(int stage) const { return layer_begin_[static_cast<std::size_t>(stage)]; }
  int layer_count(int stage) const { return split_.layers[static_cast<std::size_t>(stage)]; }

  std::int64_t chunk_params(int stage) const {
    std::int64_t n = layer_count(stage) * layer_params_;
    if (stage == 0) n += embedding_params_;
    if (stage + 1 == stages_) n += head_params_;
    return n;
  }

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
              KernelShape shape, ElementwiseFn fn = ElementwiseFn::none, int step = -1) {
    KernelCall call{kind, p_.dtype, std::move(shape), {}, {}, fn};
    last_compute_ =
        builder_.add(rank_, compute_, std::move(name), OpLabels{phase, layer, mb, step, chunk},
                     std::move(call), take_waits());
    return last_compute_;
  }

  // A collective on tp_comm: waits for the last compute kernel (and whatever the next kernel
  // waits for, e.g. a received activation). -1 when t = 1.
  OpId tp_collective(std::string name, Phase phase, int layer, int mb, int chunk,
                     CollectiveKind kind, std::int64_t bytes) {
    if (t_ == 1) return -1;
    std::vector<OpId> deps = waits_;
    if (last_compute_ >= 0) deps.push_back(last_compute_);
    const CollectiveCall call{kind, tp_group_, bytes, p_.dtype};
    return builder_.add(rank_, tp_comm_, std::move(name), OpLabels{phase, layer, mb, -1, chunk},
                        call, std::move(deps));
  }

  OpId dp_collective(std::string name, Phase phase, int mb, int chunk, CollectiveKind kind,
                     std::int64_t bytes) {
    std::vector<OpId> deps;
    if (last_compute_ >= 0) deps.push_back(last_compute_);
    const DType dtype = phase == Phase::optimizer ? p_.dtype : DType::fp32;
    return builder_.add(rank_, dp_comm_, std::move(name), OpLabels{phase, -1, mb, -1, chunk},
                        CollectiveCall{kind, dp_group_, bytes, dtype}, std::move(deps));
  }

  // Activation bytes of one TP collective: a whole [T, width] tensor.
  std::int64_t act_bytes(std::int64_t width) const { return tokens_ * width * e_; }

  // ---- tensor-parallel linear layers (tp_linear.cpp's placement) --------------------------------
  struct Ctx {
    int layer = -1, mb = 0, chunk = 0;
    Phase phase = Phase::fwd;
  };

  // ---- tensor-parallel linear layers: schedules/tp_emitter, without tensors -------------------
  OpId tp_kernel(std::string name, Phase phase, KernelCall call) override {
    last_compute_ = builder_.add(rank_, compute_, std::move(name),
                                 OpLabels{phase, tp_ctx_.layer, tp_ctx_.mb, -1, tp_ctx_.chunk},
                                 std::move(call), take_waits());
    return last_compute_;
  }
  OpId tp_collective(std::string name, Phase phase, CollectiveKind kind, std::int64_t bytes,
                     SlotId /*in*/, SlotId /*out*/) override {
    return tp_collective(std::move(name), phase, tp_ctx_.layer, tp_ctx_.mb, tp_ctx_.chunk, kind,
                         bytes);
  }
  void tp_wait(OpId op) override { wait(op); }

  // The op names of a layer ("qkv", "recompute mlp up", ...), made once per name.
  const TpNames& tp_names(const std::string& what) {
    auto it = tp_names_.find(what);
    if (it != tp_names_.end()) return it->second;
    TpNames n{what + " gemm",
              what + " dgrad",
              what + " wgrad",
              {},
              {},
              what + " x all-gather",
              what + " x all-gather (bwd)",
              what + " x all-gather (wgrad)",
              what + " dy all-gather",
              what + " y reduce-scatter",
              what + " y all-reduce",
              what + " dx reduce-scatter",
              what + " dx all-reduce"};
    return tp_names_.emplace(what, std::move(n)).first->second;
  }

  // One rank's layer: column n = out / t, k = in; row n = out, k = in / t; W stored [k, n].
  TpLayerEmitter tp_layer(const Ctx& c, bool column, std::int64_t n, std::int64_t k) {
    tp_ctx_ = c;
    TpLayerSpec spec;
    spec.column = column;
    spec.tokens = tokens_;
    spec.local_tokens = local_tokens_;
    spec.n = n;
    spec.k = k;
    spec.sequence_parallel = sp_;
    spec.comm = t_ > 1;
    spec.tensors = false;
    spec.w_out_major = false;
    spec.dtype = p_.dtype;
    return TpLayerEmitter(spec);
  }

  void column_forward(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k) {
    tp_layer(c, true, n, k).forward(*this, {}, tp_names(what), c.phase);
  }
  void row_forward(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k) {
    tp_layer(c, false, n, k).forward(*this, {}, tp_names(what), c.phase);
  }
  // with_wgrad false: B of a split backward (the wgrad comes in W).
  void column_backward(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k,
                       bool with_wgrad) {
    tp_layer(c, true, n, k).backward(*this, {}, tp_names(what), with_wgrad);
  }
  void row_backward(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k,
                    bool with_wgrad) {
    tp_layer(c, false, n, k).backward(*this, {}, tp_names(what), with_wgrad);
  }
  void column_wgrad(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k) {
    tp_layer(c, true, n, k).wgrad(*this, {}, tp_names(what));
  }
  void row_wgrad(const Ctx& c, const std::string& what, std::int64_t n, std::int64_t k) {
    tp_layer(c, false, n, k).wgrad(*this, {}, tp_names(what));
  }

  // ---- attention: one causal block, or the CP ring of schedules/ring_emitter
  // ---------------------- The step's names and types: no tensors, its own cast and all-gather
  // names, and lse merges costed in the storage dtype.
  static inline const RingEmitStyle kRingStyle{false, "attn out cast", "kv all-gather", true};

  OpId ring_kernel(std::string name, Phase phase, int step, KernelCall call) override {
    last_compute_ =
        builder_.add(rank_, compute_, std::move(name),
                     OpLabels{phase, ring_ctx_.layer, ring_ctx_.mb, step, ring_ctx_.chunk},
                     std::move(call), take_waits());
    return last_compute_;
  }
  OpId ring_comm(std::string name, Phase phase, int step, OpBody body,
                 std::vector<OpId> deps) override {
    return builder_.add(rank_, cp_comm_, std::move(name),
                        OpLabels{phase, ring_ctx_.layer, ring_ctx_.mb, step, ring_ctx_.chunk},
                        std::move(body), std::move(deps));
  }
  void ring_wait(OpId op) override { wait(op); }
  // K/V come out of the QKV gemm (and whatever the next kernel waits for).
  std::vector<OpId> kv_producer() override {
    std::vector<OpId> deps = waits_;
    if (last_compute_ >= 0) deps.push_back(last_compute_);
    return deps;
  }
  int cp_rank(int cp_index) const override { return cp_ranks_[static_cast<std::size_t>(cp_index)]; }
  GroupId cp_group() const override { return cp_group_; }
  SlotId ring_slot(std::string, DType, std::vector<std::int64_t>,
                   std::vector<TokenRange>) override {
    return -1;
  }

  AttentionShape whole_sequence_block() const {
    const auto all = rank_tokens(ring_, 0);
    return AttentionShape{
        ring_.batch, ring_.heads, ring_.kv_heads, ring_.head_dim, MaskMode::causal, all, all};
  }

  // The attention core forward (phase fwd, or bwd when recomputed).
  void attention_forward(const Ctx& c, Phase phase) {
    const std::string pre = phase == Phase::fwd ? "" : "recompute ";
    if (n_cp_ == 1) {
      kernel(pre + "attn fwd", phase, c.layer, c.mb, c.chunk, KernelKind::attention_fwd,
             whole_sequence_block());
      return;
    }
    ring_ctx_ = c;
    ring_emitter_->forward(*this, RingTensors{}, phase, pre);
  }

  void attention_backward(const Ctx& c) {
    if (n_cp_ == 1) {
      kernel("attn bwd", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::attention_bwd,
             whole_sequence_block());
      return;
    }
    ring_ctx_ = c;
    ring_emitter_->backward(*this, RingTensors{});
  }

  // ---- one transformer layer
  // ---------------------------------------------------------------------
  std::int64_t qkv_n() const { return (m_.hidden + 2 * m_.kv_hidden()) / t_; }
  std::int64_t up_n() const { return (m_.gated_mlp ? 2 : 1) * m_.ffn_hidden / t_; }

  void norm(const Ctx& c, const std::string& name, Phase phase) {
    kernel(name, phase, c.layer, c.mb, c.chunk, KernelKind::elementwise,
           VectorShape{local_tokens_ * m_.hidden});
  }

  void layer_forward(const Ctx& c) {
    const std::string pre = c.phase == Phase::fwd ? "" : "recompute ";
    norm(c, pre + "attn norm", c.phase);
    column_forward(c, pre + "qkv", qkv_n(), m_.hidden);
    attention_forward(c, c.phase);
    row_forward(c, pre + "proj", m_.hidden, m_.hidden / t_);
    norm(c, pre + "mlp norm", c.phase);
    column_forward(c, pre + "mlp up", up_n(), m_.hidden);
    kernel(pre + "activation", c.phase, c.layer, c.mb, c.chunk, KernelKind::elementwise,
           VectorShape{tokens_ * up_n()}, m_.gated_mlp ? ElementwiseFn::none : ElementwiseFn::gelu);
    row_forward(c, pre + "mlp down", m_.hidden, m_.ffn_hidden / t_);
  }

  void layer_backward(const Ctx& c, bool with_wgrad) {
    if (p_.recompute == Recompute::full) {
      Ctx rc = c;
      rc.phase = Phase::bwd;
      layer_forward(rc);
    }
    row_backward(c, "mlp down", m_.hidden, m_.ffn_hidden / t_, with_wgrad);
    kernel("activation bwd", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::elementwise,
           VectorShape{tokens_ * up_n()});
    column_backward(c, "mlp up", up_n(), m_.hidden, with_wgrad);
    norm(c, "mlp norm bwd", Phase::bwd);
    row_backward(c, "proj", m_.hidden, m_.hidden / t_, with_wgrad);
    if (p_.recompute == Recompute::selective) attention_forward(c, Phase::bwd);
    attention_backward(c);
    column_backward(c, "qkv", qkv_n(), m_.hidden, with_wgrad);
    norm(c, "attn norm bwd", Phase::bwd);
  }

  void layer_wgrad(const Ctx& c) {
    row_wgrad(c, "mlp down", m_.hidden, m_.ffn_hidden / t_);
    column_wgrad(c, "mlp up", up_n(), m_.hidden);
    row_wgrad(c, "proj", m_.hidden, m_.hidden / t_);
    column_wgrad(c, "qkv", qkv_n(), m_.hidden);
  }

  // ---- gradient buckets (schedules/gradient_buckets) --------------------------------------------
  GradientBuckets buckets_for(int stage) const {
    return GradientBuckets(layer_count(stage), p_.dp_buckets, stage == 0 ? embedding_params_ : 0);
  }

  void launch_ready(GradientBuckets& b, int mb, int chunk) {
    const std::vector<ReadyBucket> ready = b.take_ready();
    if (ready.empty() || dp_size_ <= 1) return;
    for (const ReadyBucket& r : ready)
      delayed_.push_back(DelayedBucket{r.bytes, mb, chunk, r.index});
    // Megatron's delay_grad_reduce: every pipeline rank but the first launches its reductions
    // after its last exchange (under the single hardware queue a reduction waiting behind
    // another would otherwise hold back the gradient send the previous stage waits for).
    if (pr_ == 0) flush_buckets();
  }

  void flush_buckets() {
    const bool dist = p_.distributed_optimizer;
    for (const DelayedBucket& d : delayed_) {
      dp_ops_.push_back(dp_collective(
          fmt::format("grad {} c{} bucket {}", dist ? "reduce-scatter" : "all-reduce", d.chunk,
                      d.index),
          Phase::wgrad, d.mb, d.chunk,
          dist ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce, d.bytes));
      bucket_bytes_.push_back(d.bytes);
    }
    delayed_.clear();
  }

  // Emits one compute part; returns the op after which its output (activation or input gradient
  // sent to the neighbour stage) is ready.
  OpId emit_compute(int /*pr*/, PipeWork work, int mb, int chunk, std::vector<OpId> deps) override {
    waits_.insert(waits_.end(), deps.begin(), deps.end());
    const int stage = gs(pr_, chunk);
    const int first = first_layer(stage), count = layer_count(stage);
    const bool last_stage = stage + 1 == stages_;
    Ctx c{-1, mb, chunk, Phase::fwd};
    if (work == PipeWork::forward) {
      if (stage == 0) {
        kernel("embedding", Phase::fwd, -1, mb, chunk, KernelKind::copy,
               VectorShape{local_tokens_ * m_.hidden});
      }
      for (int l = first; l < first + count; ++l) {
        c.layer = l;
        layer_forward(c);
      }
      if (last_stage) {
        c.layer = -1;
        norm(c, "final norm", Phase::fwd);
        column_forward(c, "head", vocab_shard_, m_.hidden);
        kernel("loss", Phase::fwd, -1, mb, chunk, KernelKind::loss,
               VectorShape{tokens_ * vocab_shard_});
      }
      // The activation is complete once the last TP reduction is (the send waits for it).
      return waits_.empty() ? last_compute_ : waits_.back();
    }
    const bool with_wgrad = work == PipeWork::backward || work == PipeWork::weight_grad;
    bool final_wgrad = false;
    if (with_wgrad) {
      final_wgrad = ++wgrad_passes_[static_cast<std::size_t>(chunk)] == shape_.microbatches;
    }
    GradientBuckets b = buckets_for(stage);
    c.phase = Phase::bwd;
    if (work == PipeWork::weight_grad) {
      if (last_stage) {
        c.layer = -1;
        column_wgrad(c, "head", vocab_shard_, m_.hidden);
        if (final_wgrad) b.add(head_params_);
      }
      for (int l = first + count - 1; l >= first; --l) {
        c.layer = l;
        layer_wgrad(c);
        b.layer_done();
        if (final_wgrad) {
          b.add(layer_params_);
          launch_ready(b, mb, chunk);
        }
      }
      if (final_wgrad && count == 0) launch_ready(b, mb, chunk);
      return last_compute_;
    }
    // backward (B + W) or input_grad (B)
    if (last_stage) {
      c.layer = -1;
      column_backward(c, "head", vocab_shard_, m_.hidden, with_wgrad);
      norm(c, "final norm bwd", Phase::bwd);
      if (final_wgrad) b.add(head_params_);
    }
    for (int l = first + count - 1; l >= first; --l) {
      c.layer = l;
      layer_backward(c, with_wgrad);
      b.layer_done();
      if (final_wgrad) {
        b.add(layer_params_);
        launch_ready(b, mb, chunk);
      }
    }
    if (final_wgrad && count == 0) launch_ready(b, mb, chunk);
    OpId out = last_compute_;
    if (!waits_.empty()) {
      // The input gradient is complete once the last TP reduction is; the send waits for it.
      out = waits_.back();
    }
    if (stage == 0) {
      kernel("embedding grad", Phase::wgrad, -1, mb, chunk, KernelKind::accumulate,
             VectorShape{local_tokens_ * m_.hidden});
      out = last_compute_;
    }
    return out;
  }

  // ---- the pipeline exchanges (schedules/pipeline_emitter; pipeline indices) -------------------
  int mesh_peer(int peer_pp) const { return peer_ranks_[static_cast<std::size_t>(peer_pp)]; }

  StreamId peer_stream(int peer) {
    StreamId& s = pair_streams_[static_cast<std::size_t>(peer)];
    if (s < 0) s = pair_stream(pr_, peer);
    return s;
  }

  StreamId pair_stream(int a, int b) {
    return builder_.stream(fmt::format("pp_comm {}-{}", std::min(a, b), std::max(a, b)));
  }

  Transfer emit_transfer(int /*pr*/, const PipeMessage& m, int tag, bool /*send*/) const override {
    return Transfer{mesh_peer(m.peer), msg_bytes_, tag, -1};
  }

  OpId emit_exchange(int /*pr*/, int peer, std::string name, P2PCall call, int boundary,
                     OpId after) override {
    return builder_.add(rank_, peer_stream(peer), std::move(name),
                        OpLabels{Phase::none, -1, -1, boundary, -1}, std::move(call),
                        after >= 0 ? std::vector<OpId>{after} : std::vector<OpId>{});
  }

  const TransformerModel& m_;
  const StepPlan& p_;
  PipelineShape shape_;
  int pp_, v_, stages_, t_, n_cp_;
  bool sp_, fold_tp_;
  LayerSplit split_;
  ProgramBuilder builder_;
  StreamId compute_ = 0, tp_comm_ = 0, cp_comm_ = 0, dp_comm_ = 0;
  std::int64_t seq_ = 0, tokens_ = 0, local_tokens_ = 0, e_ = 2, msg_bytes_ = 0;
  std::int64_t layer_params_ = 0, embedding_params_ = 0, head_params_ = 0, vocab_shard_ = 0;
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
  struct DelayedBucket {
    std::int64_t bytes = 0;
    int mb = 0, chunk = 0, index = 0;
  };
  std::vector<DelayedBucket> delayed_;
  std::vector<int> wgrad_passes_;
};

}  // namespace

Program build_training_step(const TransformerModel& model, const StepPlan& plan,
                            int gpus_per_node) {
  check_step_plan(model, plan);
  require_positive(gpus_per_node, "gpus_per_node");
  if (plan.fold_tp && plan.tp > 1 && !folds_tp(plan, gpus_per_node)) {
    check_step_size(model, plan, false);
  }
  return StepBuilder(model, plan, gpus_per_node).build();
}

}  // namespace meshsim
