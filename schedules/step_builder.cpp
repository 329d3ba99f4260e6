// The step builder's rank context, pipeline actions, gradient buckets and optimizer step.
#include "schedules/step_builder.hpp"

namespace meshsim::step_detail {

std::string StepBuilder::describe(const TransformerModel& m, const StepPlan& p) {
  return fmt::format(
             "training step: model={} tp={} pp={} cp={} dp={} vp={} mbs={} gbs={} seq={} "
             "schedule={} "
             "cp_variant={} cp_rotate={} recompute={} distributed_optimizer={} sp={} fold_dp={} "
             "fold_tp={}",
             m.name, p.tp, p.pp, p.cp, p.dp, p.vp, p.microbatch_size, p.global_batch,
             step_seq(m, p), to_string(p.schedule), to_string(p.cp_variant),
             to_string(p.kv_rotation), to_string(p.recompute), p.distributed_optimizer,
             p.sequence_parallel, p.fold_dp, p.fold_tp && p.tp > 1) +
         (p.sharding.zero > 0 ? " sharding=" + describe_sharding(p.sharding) : "") +
         (p.precision != Precision::bf16 ? fmt::format(" precision={}", to_string(p.precision))
                                         : "") +
         (p.layer_kernels != LayerKernels::fused
              ? fmt::format(" layer_kernels={}", to_string(p.layer_kernels))
              : "");
}

void StepBuilder::init(const TransformerModel& model, const StepPlan& plan, int gpus_per_node) {
  builder_.reserve(static_cast<std::size_t>(
      std::min(estimated_ops(model, plan, folds_tp(plan, gpus_per_node)), kMaxStepOps)));
  builder_.set_host_issue(true);  // a framework's host issues the step op by op
  compute_ = builder_.stream("compute");
  tp_comm_ = builder_.stream("tp_comm");
  cp_comm_ = builder_.stream("cp_comm");
  dp_comm_ = builder_.stream("dp_comm");
  if (shards_parameters(plan.sharding)) gather_comm_ = builder_.stream("fsdp_gather");
  seq_ = step_seq(model, plan);
  tokens_ = plan.microbatch_size * (seq_ / plan.cp);
  local_tokens_ = sp_ ? tokens_ / t_ : tokens_;
  e_ = dtype_bytes(plan.dtype);
  grad_bytes_ = plan.grad_reduce_in_fp32 ? 4 : static_cast<int>(e_);
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
  // torchtitan's repeat_kv hands the attention (and a CP ring) K and V of every query head.
  ring_.kv_heads = attention_kv_heads(model, plan.layer_kernels) / t_;
  ring_.head_dim = model.head_dim();
  ring_.dtype = plan.dtype;
  ring_.variant = plan.cp > 1 ? plan.cp_variant : RingVariant::ring;
  ring_.kv_rotation = plan.kv_rotation;
  const ParameterCount pc = count_parameters(model);
  // TP shard of one layer: matrices (and their biases, approximately) / t, norms whole.
  layer_params_ = (pc.attention + pc.mlp) / t_ + pc.norms;
  // Its linears' weight matrices (no biases, no MLA latent norms).
  layer_linear_params_ = layer_linear_parameters_tp(model, t_);
  const std::int64_t vocab_shard = (model.vocab + t_ - 1) / t_;
  embedding_params_ =
      vocab_shard * model.hidden +
      (model.position == PositionEmbedding::learned ? model.seq_len * model.hidden : 0);
  head_params_ = (model.tied_embeddings ? 0 : vocab_shard * model.hidden) + pc.final_norm;
  vocab_shard_ = vocab_shard;
  moe_setup();
  // The MTP modules' dense parameters go with the head's: its FSDP unit and gradient bucket.
  for (int k = 0; k < model.mtp_layers; ++k) head_params_ += mtp_module_params(k);
}

Program StepBuilder::build() && {
  const PipelineEmitter emitter(shape_);
  const Mesh& mesh = builder_.peek().mesh;
  const int replicas = p_.fold_dp ? 1 : p_.dp;
  const int tp_built = fold_tp_ ? 1 : t_;
  for (int pr = 0; pr < pp_; ++pr) {
    for (int d = 0; d < replicas; ++d) {
      for (int c = 0; c < n_cp_; ++c) {
        for (int t = 0; t < tp_built; ++t) {
          begin_rank(mesh, mesh.rank_of({t, c, d, pr}), pr, c);
          zero_grad_buffer();
          if (p_.overlap_param_gather && dp_size_ > 1) launch_param_gathers();
          emitter.emit(pr, *this);
          finish_rank();
        }
      }
    }
  }
  return std::move(builder_).finish();
}

void StepBuilder::begin_rank(const Mesh& mesh, int rank, int pr, int cp_index) {
  rank_ = rank;
  pr_ = pr;
  cp_index_ = cp_index;
  waits_.clear();
  last_compute_ = -1;
  dp_ops_.clear();
  delayed_.clear();
  bucket_bytes_.clear();
  bucket_layers_.clear();
  wgrad_passes_.assign(static_cast<std::size_t>(v_), 0);
  forwards_.assign(static_cast<std::size_t>(v_), 0);
  param_gathers_.clear();
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
    dp_group_ = full.size() > cp_ranks_.size() ? builder_.group("dp-cp", cp_ranks_, std::move(full))
                                               : builder_.group("dp-cp", cp_ranks_);
  } else {
    dp_group_ = builder_.group("dp-cp", full);
  }
  begin_sharding(mesh, rank);
  moe_begin_rank(rank);
}

void StepBuilder::finish_rank() {
  flush_buckets();
  // The optimizer step after every gradient reduction, then the parameter all-gathers.
  std::int64_t params = 0, experts = 0;
  rank_parameters(params, experts);
  const bool dist = shards_optimizer();
  waits_.insert(waits_.end(), dp_ops_.begin(), dp_ops_.end());
  // The expert parameters shard over the expert-data-parallel group instead.
  const std::int64_t shard =
      (dist ? (params + state_shards() - 1) / state_shards() : params) +
      (p_.distributed_optimizer ? (experts + edp_size_ - 1) / edp_size_ : experts);
  if (p_.dtype == DType::fp16) {
    // fp16 trains with a dynamic loss scale: the fp32 gradients are unscaled in place and checked
    // for inf/nan before the step (Megatron-LM's _unscale_main_grads_and_check_for_nan).
    const KernelCall unscale{KernelKind::elementwise, DType::fp32, VectorShape{shard}, {}, {},
                             ElementwiseFn::none};
    last_compute_ = builder_.add(rank_, compute_, "unscale grads",
                                 OpLabels{Phase::optimizer, -1, -1, -1, -1}, unscale, take_waits());
  }
  // Gradient clipping's global norm (Megatron-LM's get_grad_norm_fp32: a multi-tensor L2 norm over
  // the rank's fp32 main gradients, one read of 4 bytes per parameter; the scaling by the clip
  // coefficient runs only when the norm exceeds the threshold, and is not modelled).
  update_fp8_scales();
  if (!p_.grad_reduce_in_fp32) {
    // Megatron-Core's optimizer copies the shard's gradients from the bf16 buffer into the fp32
    // main grads (_copy_model_grads_to_main_grads): read e, write 4 bytes per parameter (the fp32
    // write carried as 4 extra bytes per element).
    const KernelCall copy{KernelKind::copy,   p_.dtype, VectorShape{shard, 1, 4}, {}, {},
                          ElementwiseFn::none};
    last_compute_ = builder_.add(rank_, compute_, "copy grads to main",
                                 OpLabels{Phase::optimizer, -1, -1, -1, -1}, copy, take_waits());
  }
  const KernelCall norm{KernelKind::elementwise, DType::fp32, VectorShape{shard, 1}, {}, {},
                        ElementwiseFn::none};
  last_compute_ = builder_.add(rank_, compute_, "grad norm",
                               OpLabels{Phase::optimizer, -1, -1, -1, -1}, norm, take_waits());
  kernel("optimizer step", Phase::optimizer, -1, -1, -1, KernelKind::optimizer_update,
         VectorShape{shard});
  cast_fp8_param_shard();
  precompute_fsdp_scales();
  if (dist && !p_.overlap_param_gather && !shards_parameters(p_.sharding)) {
    for (std::size_t b = 0; b < bucket_bytes_.size(); ++b) {
      // Updated parameters in their dtype: the bucket's gradient bytes / grad bytes x e.
      dp_collective(fmt::format("param all-gather bucket {}", b), Phase::optimizer, -1, -1,
                    CollectiveKind::all_gather,
                    param_gather_bytes(bucket_bytes_[b] / grad_bytes_, bucket_layers_[b]));
    }
  }
}

// The step begins by zeroing the rank's main-gradient buffer (Megatron-LM's zero_grad_buffer: a
// memset, one write of grad_bytes per parameter of the rank's chunks: fp32, or the parameters'
// dtype without grad_reduce_in_fp32).
void StepBuilder::zero_grad_buffer() {
  std::int64_t params = 0, experts = 0;
  rank_parameters(params, experts);
  const KernelCall zero{KernelKind::elementwise,
                        p_.grad_reduce_in_fp32 ? DType::fp32 : p_.dtype,
                        VectorShape{params + experts, 1},
                        {},
                        {},
                        ElementwiseFn::none};
  last_compute_ = builder_.add(rank_, compute_, "zero grad buffer",
                               OpLabels{Phase::optimizer, -1, -1, -1, -1}, zero, take_waits());
}

// The rank's parameters over its chunks: dense (chunk_params) and routed experts apart.
void StepBuilder::rank_parameters(std::int64_t& params, std::int64_t& experts) const {
  for (int c = 0; c < v_; ++c) {
    const int stage = gs(pr_, c);
    params += chunk_params(stage);
    for (int l = first_layer(stage); l < first_layer(stage) + layer_count(stage); ++l) {
      experts += expert_params(l);
    }
  }
}

std::int64_t StepBuilder::chunk_params(int stage) const {
  std::int64_t n = 0;
  for (int l = first_layer(stage); l < first_layer(stage) + layer_count(stage); ++l) {
    n += layer_params(l);
  }
  if (stage == 0) n += embedding_params_;
  if (stage + 1 == stages_) n += head_params_;
  return n;
}

OpId StepBuilder::kernel(std::string name, Phase phase, int layer, int mb, int chunk,
                         KernelKind kind, KernelShape shape, ElementwiseFn fn, int step,
                         QuantFormat quant) {
  KernelCall call{kind, p_.dtype, std::move(shape), {}, {}, fn};
  call.quant = quant;
  last_compute_ =
      builder_.add(rank_, compute_, std::move(name), OpLabels{phase, layer, mb, step, chunk},
                   std::move(call), take_waits());
  return last_compute_;
}

OpId StepBuilder::tp_comm_op(std::string name, Phase phase, CollectiveCall call,
                             bool after_compute) {
  std::vector<OpId> deps;
  if (after_compute) {
    deps = waits_;
    if (last_compute_ >= 0) deps.push_back(last_compute_);
  }
  call.group = tp_group_;
  call.dtype = p_.dtype;
  return builder_.add(rank_, tp_comm_, std::move(name),
                      OpLabels{phase, tp_ctx_.layer, tp_ctx_.mb, -1, tp_ctx_.chunk}, call,
                      std::move(deps));
}

OpId StepBuilder::dp_collective(std::string name, Phase phase, int mb, int chunk,
                                CollectiveKind kind, std::int64_t bytes) {
  std::vector<OpId> deps;
  if (last_compute_ >= 0) deps.push_back(last_compute_);
  // Parameters (the optimizer's all-gathers) in their dtype; gradients in the buffer's.
  const DType dtype = phase == Phase::optimizer || !p_.grad_reduce_in_fp32 ? p_.dtype : DType::fp32;
  return builder_.add(rank_, dp_comm_, std::move(name), OpLabels{phase, -1, mb, -1, chunk},
                      CollectiveCall{kind, dp_group_, bytes, dtype}, std::move(deps));
}

void StepBuilder::launch_ready(GradientBuckets& b, int mb, int chunk) {
  const std::vector<ReadyBucket> ready = b.take_ready();
  if (ready.empty() || dp_size_ <= 1 || shards_parameters(p_.sharding)) return;
  for (const ReadyBucket& r : ready) delayed_.push_back(DelayedBucket{r.bytes, mb, chunk, r.index});
  // Megatron's delay_grad_reduce: every pipeline rank but the first launches its reductions
  // after its last exchange (under the single hardware queue a reduction waiting behind
  // another would otherwise hold back the gradient send the previous stage waits for).
  // Without overlap_grad_reduce every rank reduces after its whole backward (finish_rank).
  if (pr_ == 0 && p_.overlap_grad_reduce) flush_buckets();
}

void StepBuilder::flush_buckets() {
  const bool dist = p_.distributed_optimizer || p_.sharding.zero >= 1;
  for (const DelayedBucket& d : delayed_) {
    dp_ops_.push_back(
        dp_collective(fmt::format("grad {} c{} bucket {}", dist ? "reduce-scatter" : "all-reduce",
                                  d.chunk, d.index),
                      Phase::wgrad, d.mb, d.chunk,
                      dist ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce, d.bytes));
    bucket_bytes_.push_back(d.bytes);
    const GradientBuckets b = buckets_for(gs(pr_, d.chunk));
    bucket_layers_.push_back(b.begin(d.index + 1) - b.begin(d.index));
  }
  delayed_.clear();
}

OpId StepBuilder::emit_compute(int /*pr*/, PipeWork work, int mb, int chunk,
                               std::vector<OpId> deps) {
  waits_.insert(waits_.end(), deps.begin(), deps.end());
  const int stage = gs(pr_, chunk);
  if (work == PipeWork::forward) return forward_pass(stage, mb, chunk);
  const bool with_wgrad = work == PipeWork::backward || work == PipeWork::weight_grad;
  bool final_wgrad = false;
  if (with_wgrad) {
    final_wgrad = ++wgrad_passes_[static_cast<std::size_t>(chunk)] == shape_.microbatches;
    // ZeRO-2 reduce-scatters every microbatch's gradients into the rank's shard.
    if (p_.sharding.zero == 2) final_wgrad = true;
  }
  if (work == PipeWork::weight_grad) return weight_grad_pass(stage, mb, chunk, final_wgrad);
  return backward_pass(stage, mb, chunk, with_wgrad, final_wgrad);  // B + W, or B
}

OpId StepBuilder::forward_pass(int stage, int mb, int chunk) {
  const int first = first_layer(stage), count = layer_count(stage);
  const bool last_stage = stage + 1 == stages_;
  Ctx c{-1, mb, chunk, Phase::fwd};
  const bool first_forward = forwards_[static_cast<std::size_t>(chunk)]++ == 0;
  first_forward_ = first_forward;
  begin_unit_pass(stage);
  if (stage == 0) {
    gather_unit(c, stage, 0, 1);
    if (first_forward && count > 0) wait_param_gather(chunk, first);  // the embedding's bucket
    kernel("embedding", Phase::fwd, -1, mb, chunk, KernelKind::copy,
           VectorShape{local_tokens_ * m_.hidden});
  }
  for (int l = first; l < first + count; ++l) {
    c.layer = l;
    if (first_forward) wait_param_gather(chunk, l);
    gather_unit(c, stage, layer_unit(stage, l), 1);
    layer_forward(c);
  }
  if (last_stage) {
    c.layer = -1;
    gather_unit(c, stage, head_unit(stage), 1);
    norm(c, "final norm", Phase::fwd);
    column_forward(c, "head", vocab_shard_, m_.hidden);
    // Forward and backward of the cross entropy: read the logits and write their gradient
    // (2 operands) plus the fp32 passes of the implementation (schedules/cross_entropy.hpp).
    kernel("loss", Phase::fwd, -1, mb, chunk, KernelKind::loss,
           VectorShape{tokens_ * vocab_shard_, 2,
                       cross_entropy_fp32_bytes_per_logit(p_.cross_entropy)});
    mtp_forward(c);
  }
  // The activation is complete once the last TP reduction is (the send waits for it).
  // The activation is complete once the last TP reduction is (the send waits for it).
  return waits_.empty() ? last_compute_ : waits_.back();
}

OpId StepBuilder::weight_grad_pass(int stage, int mb, int chunk, bool final_wgrad) {
  const int first = first_layer(stage), count = layer_count(stage);
  const bool last_stage = stage + 1 == stages_;
  GradientBuckets b = buckets_for(stage);
  Ctx c{-1, mb, chunk, Phase::bwd};
  if (last_stage) {
    mtp_wgrad(c);
    c.layer = -1;
    column_wgrad(c, "head", vocab_shard_, m_.hidden);
    if (final_wgrad) b.add(head_params_);
    reduce_unit(c, stage, head_unit(stage));
  }
  for (int l = first + count - 1; l >= first; --l) {
    c.layer = l;
    layer_wgrad(c);
    reduce_unit(c, stage, layer_unit(stage, l));
    b.layer_done();
    if (final_wgrad) {
      b.add(layer_params(l));
      launch_ready(b, mb, chunk);
    }
  }
  if (final_wgrad && count == 0) launch_ready(b, mb, chunk);
  if (stage == 0) reduce_unit(c, stage, 0);  // the embedding's gradient came with B
  if (final_wgrad) reduce_expert_grads(stage, mb, chunk);
  return last_compute_;
}

OpId StepBuilder::backward_pass(int stage, int mb, int chunk, bool with_wgrad, bool final_wgrad) {
  const int first = first_layer(stage), count = layer_count(stage);
  const bool last_stage = stage + 1 == stages_;
  GradientBuckets b = buckets_for(stage);
  Ctx c{-1, mb, chunk, Phase::bwd};
  begin_unit_pass(stage);
  if (last_stage) {
    c.layer = -1;
    gather_unit(c, stage, head_unit(stage), -1);
    mtp_backward(c, with_wgrad);
    c.layer = -1;
    column_backward(c, "head", vocab_shard_, m_.hidden, with_wgrad);
    norm_backward(c, "final norm bwd");
    if (final_wgrad) b.add(head_params_);
    if (with_wgrad) reduce_unit(c, stage, head_unit(stage));
  }
  for (int l = first + count - 1; l >= first; --l) {
    c.layer = l;
    gather_unit(c, stage, layer_unit(stage, l), -1);
    layer_backward(c, with_wgrad);
    if (with_wgrad) reduce_unit(c, stage, layer_unit(stage, l));
    b.layer_done();
    if (final_wgrad) {
      b.add(layer_params(l));
      launch_ready(b, mb, chunk);
    }
  }
  if (final_wgrad && count == 0) launch_ready(b, mb, chunk);
  if (final_wgrad) reduce_expert_grads(stage, mb, chunk);
  OpId out = last_compute_;
  if (!waits_.empty()) {
    // The input gradient is complete once the last TP reduction is; the send waits for it.
    out = waits_.back();
  }
  if (stage == 0) {
    c.layer = -1;
    gather_unit(c, stage, 0, -1);
    kernel("embedding grad", Phase::wgrad, -1, mb, chunk, KernelKind::accumulate,
           VectorShape{local_tokens_ * m_.hidden});
    out = last_compute_;
    if (with_wgrad) reduce_unit(c, stage, 0);
  }
  return out;
}

StreamId StepBuilder::peer_stream(int peer) {
  StreamId& s = pair_streams_[static_cast<std::size_t>(peer)];
  if (s < 0) s = pair_stream(pr_, peer);
  return s;
}

OpId StepBuilder::emit_exchange(int /*pr*/, int peer, std::string name, P2PCall call, int boundary,
                                OpId after) {
  return builder_.add(rank_, peer_stream(peer), std::move(name),
                      OpLabels{Phase::none, -1, -1, boundary, -1}, std::move(call),
                      after >= 0 ? std::vector<OpId>{after} : std::vector<OpId>{});
}

}  // namespace meshsim::step_detail
