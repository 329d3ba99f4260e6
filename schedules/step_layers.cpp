// The step builder's transformer layers: norms, the tensor-parallel linear layers
// (schedules/tp_emitter), the attention core (one causal block, or the CP ring of
// schedules/ring_emitter), forward, backward, recompute and the split backward's W.
#include "schedules/step_builder.hpp"

namespace meshsim::step_detail {

OpId StepBuilder::tp_kernel(std::string name, Phase phase, KernelCall call) {
  last_compute_ = builder_.add(rank_, compute_, std::move(name),
                               OpLabels{phase, tp_ctx_.layer, tp_ctx_.mb, -1, tp_ctx_.chunk},
                               std::move(call), take_waits());
  return last_compute_;
}

const TpNames& StepBuilder::tp_names(const std::string& what) {
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

TpLayerEmitter StepBuilder::tp_layer(const Ctx& c, bool column, std::int64_t n, std::int64_t k,
                                     const std::string& what) {
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
  spec.what = what;
  spec.tp = t_;
  // TE's userbuffers overlap covers the TransformerLayer's four linears (ub names qkv, proj, fc1,
  // fc2), not the output head or MoE shared experts.
  const std::string base = what.rfind("recompute ", 0) == 0 ? what.substr(10) : what;
  if (p_.tp_comm_overlap && sp_ &&
      (base == "qkv" || base == "proj" || base == "mlp up" || base == "mlp down")) {
    spec.ub_overlap = true;
    spec.ub_sm_share = static_cast<double>(p_.gpu_sms - kTpOverlapCommSms) / p_.gpu_sms;
    spec.ub_rs_ring = p_.tp_overlap_rs == TpOverlapRs::ring_exchange;
    spec.ub_rs_ring_sm_share = static_cast<double>(p_.gpu_sms - kTpOverlapRingRsSms) / p_.gpu_sms;
  }
  quantize_spec(spec, c, what);
  return TpLayerEmitter(spec);
}

OpId StepBuilder::tp_userbuffers(std::string name, Phase phase, CollectiveKind kind,
                                 std::int64_t bytes, bool after_compute, int shift) {
  CollectiveCall call{.kind = kind, .bytes = bytes, .algo = CollectiveAlgo::userbuffers};
  if (kind == CollectiveKind::permute) call.shift = shift;  // to the TP rank `shift` on
  return tp_comm_op(std::move(name), phase, call, after_compute);
}

OpId StepBuilder::ring_kernel(OpName name, Phase phase, int step, KernelCall call) {
  last_compute_ = builder_.add(
      rank_, compute_, name, OpLabels{phase, ring_ctx_.layer, ring_ctx_.mb, step, ring_ctx_.chunk},
      std::move(call), take_waits());
  return last_compute_;
}

OpId StepBuilder::ring_comm(OpName name, Phase phase, int step, OpBody body,
                            std::vector<OpId> deps) {
  return builder_.add(rank_, cp_comm_, name,
                      OpLabels{phase, ring_ctx_.layer, ring_ctx_.mb, step, ring_ctx_.chunk},
                      std::move(body), std::move(deps));
}

std::vector<OpId> StepBuilder::kv_producer() {
  std::vector<OpId> deps = waits_;
  if (last_compute_ >= 0) deps.push_back(last_compute_);
  return deps;
}

void StepBuilder::norm(const Ctx& c, const std::string& name, Phase phase) {
  kernel(name, phase, c.layer, c.mb, c.chunk, KernelKind::elementwise,
         vector_of(local_tokens_ * m_.hidden, norm_pass(p_.layer_kernels, m_.norm, false)));
}

void StepBuilder::norm_backward(const Ctx& c, const std::string& name) {
  kernel(name, Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::elementwise,
         vector_of(local_tokens_ * m_.hidden, norm_pass(p_.layer_kernels, m_.norm, true)));
}

void StepBuilder::residual_add(const Ctx& c, const std::string& name, Phase phase) {
  kernel(name, phase, c.layer, c.mb, c.chunk, KernelKind::accumulate,
         VectorShape{local_tokens_ * m_.hidden});
}

void StepBuilder::residual_backward(const Ctx& c, const std::string& name) {
  if (m_.dropout) {
    kernel(name + " dropout bwd", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::elementwise,
           VectorShape{local_tokens_ * m_.hidden, 2, 1});
  }
  kernel(name + " grad", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::accumulate,
         VectorShape{local_tokens_ * m_.hidden});
}

AttentionShape StepBuilder::whole_sequence_block() const {
  const auto all = rank_tokens(ring_, 0);
  return AttentionShape{ring_.batch, ring_.heads, ring_.kv_heads, ring_.head_dim, MaskMode::causal,
                        all,         all};
}

void StepBuilder::attention_forward(const Ctx& c, Phase phase) {
  const std::string pre = phase == Phase::fwd ? "" : "recompute ";
  if (p_.attention == AttentionCore::materialized) {
    materialized_forward(c, phase, pre);
    return;
  }
  if (n_cp_ == 1) {
    kernel(pre + "attn fwd", phase, c.layer, c.mb, c.chunk, KernelKind::attention_fwd,
           whole_sequence_block());
    return;
  }
  ring_ctx_ = c;
  ring_emitter_->forward(*this, RingTensors{}, phase, pre);
}

void StepBuilder::attention_backward(const Ctx& c) {
  if (p_.attention == AttentionCore::materialized) {
    materialized_backward(c);
    return;
  }
  if (n_cp_ == 1) {
    kernel("attn bwd", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::attention_bwd,
           whole_sequence_block());
    return;
  }
  ring_ctx_ = c;
  ring_emitter_->backward(*this, RingTensors{});
}

// Per query head of this rank (a / t heads, batch b, sequence s, head dim d), as Megatron-LM's
// CoreAttention before FlashAttention: scores = Q K^T (b·a/t GEMMs of s x s x d), a fused
// scale-mask-softmax over the b·(a/t)·s·s scores, dropout on them when the model has dropout,
// context = P V (s x d x s). The batched GEMMs are costed as one GEMM of the same FLOPs
// (m = b·(a/t)·s); the score kernels as element-wise passes over b·(a/t)·s·s elements.
void StepBuilder::core_gemm(const Ctx& c, Phase phase, const std::string& name, std::int64_t n,
                            std::int64_t k) {
  kernel(name, phase, c.layer, c.mb, c.chunk, KernelKind::gemm,
         GemmShape{ring_.batch * ring_.heads * seq_, n, k});
}

void StepBuilder::score_pass(const Ctx& c, Phase phase, const std::string& name,
                             std::int32_t operands, std::int32_t mask_bytes) {
  kernel(name, phase, c.layer, c.mb, c.chunk, KernelKind::elementwise,
         VectorShape{ring_.batch * ring_.heads * seq_ * seq_, operands, mask_bytes});
}

// Softmax: read the scores, write the probabilities. Dropout (PyTorch's native dropout): read the
// probabilities, write them dropped and the 1-byte keep mask.
void StepBuilder::materialized_forward(const Ctx& c, Phase phase, const std::string& pre) {
  core_gemm(c, phase, pre + "attn scores", seq_, ring_.head_dim);
  score_pass(c, phase, pre + "attn softmax", 2, 0);
  if (m_.dropout) score_pass(c, phase, pre + "attn dropout", 2, 1);
  core_gemm(c, phase, pre + "attn context", ring_.head_dim, seq_);
}

// The backward of materialized_forward: dP = dO V^T and dV = P^T dO, dropout's mask on dP,
// the softmax backward (dS), dQ = dS K and dK = dS^T Q. Dropout's backward reads dP and the mask
// and writes the masked dP; softmax's reads P and dP and writes dS (3 operands).
void StepBuilder::materialized_backward(const Ctx& c) {
  const std::int64_t s = seq_, d = ring_.head_dim;
  core_gemm(c, Phase::bwd, "attn dprobs", s, d);
  core_gemm(c, Phase::bwd, "attn dv", d, s);
  if (m_.dropout) score_pass(c, Phase::bwd, "attn dropout bwd", 2, 1);
  score_pass(c, Phase::bwd, "attn softmax bwd", 3, 0);
  core_gemm(c, Phase::bwd, "attn dq", d, s);
  core_gemm(c, Phase::bwd, "attn dk", d, s);
}

// RoPE rotates this rank's Q and K on the whole sequence (after the QKV column layer): a / t
// query heads and kv / t key heads of head_dim channels, or with MLA the qk_rope_head_dim
// channels of each query head and of the one shared key. Then, with torchtitan's repeat_kv
// (schedules/layer_kernels.hpp), K and V copied to the a / t query heads: read kv, write
// n_rep x kv, counted as (1 + n_rep) passes over K and V at one operand each; its backward sums
// the copies back (the same bytes).
void StepBuilder::rope(const Ctx& c, const std::string& pre, Phase phase) {
  if (m_.position != PositionEmbedding::rope) return;
  const bool backward = phase == Phase::bwd && pre.empty();
  const std::int64_t rotated = m_.mla ? tokens_ * (m_.heads / t_ + 1) * m_.mla->qk_rope_head_dim
                                      : tokens_ * (m_.heads + m_.kv_heads) / t_ * m_.head_dim();
  kernel(pre + (backward ? "rope bwd" : "rope"), phase, c.layer, c.mb, c.chunk,
         KernelKind::elementwise, vector_of(rotated, rope_pass(p_.layer_kernels, backward)));
  if (attention_kv_heads(m_, p_.layer_kernels) == m_.kv_heads) return;  // no repeat_kv copy
  const std::int64_t n_rep = m_.heads / m_.kv_heads;
  const std::int64_t kv = 2 * tokens_ * m_.kv_heads / t_ * m_.head_dim();
  kernel(pre + (backward ? "repeat kv bwd" : "repeat kv"), phase, c.layer, c.mb, c.chunk,
         KernelKind::copy, VectorShape{kv * (1 + n_rep), 1});
}

void StepBuilder::rope_backward(const Ctx& c) {
  rope(c, "", Phase::bwd);
}

void StepBuilder::layer_forward(const Ctx& c) {
  const std::string pre = c.phase == Phase::fwd ? "" : "recompute ";
  norm(c, pre + "attn norm", c.phase);
  column_forward(c, pre + "qkv", qkv_n(), m_.hidden);
  if (m_.mla) mla_up_forward(c, c.phase, pre);
  rope(c, pre, c.phase);
  attention_forward(c, c.phase);
  row_forward(c, pre + "proj", m_.hidden, proj_k());
  residual_add(c, pre + "attn residual", c.phase);
  norm(c, pre + "mlp norm", c.phase);
  mlp_forward(c, pre);
  residual_add(c, pre + "mlp residual", c.phase);
}

void StepBuilder::recompute_selective_op(const Ctx& c) {
  const std::string pre = "recompute ";
  const auto gemm = [&](const std::string& name, std::int64_t n, std::int64_t k) {
    // In the plan's precision: the recomputed matmul reads the saved quantized input.
    kernel(pre + name, Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::gemm,
           GemmShape{tokens_, n, k}, ElementwiseFn::none, -1, linear_format(p_.precision));
  };
  norm(c, pre + "attn norm", Phase::bwd);
  gemm("k gemm", m_.kv_hidden() / t_, m_.hidden);
  rope(c, pre, Phase::bwd);
  gemm("proj gemm", m_.hidden, m_.hidden / t_);
  residual_add(c, pre + "attn residual", Phase::bwd);
  norm(c, pre + "mlp norm", Phase::bwd);
  if (m_.gated_mlp) gemm("mlp up w3 gemm", m_.ffn_hidden / t_, m_.hidden);
  kernel(pre + "activation", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::elementwise,
         activation_shape(false), m_.gated_mlp ? ElementwiseFn::none : ElementwiseFn::gelu);
  if (!m_.gated_mlp) gemm("mlp down gemm", m_.hidden, m_.ffn_hidden / t_);
}

void StepBuilder::layer_backward(const Ctx& c, bool with_wgrad) {
  if (p_.recompute == Recompute::selective_op && recomputes(c)) recompute_selective_op(c);
  if (p_.recompute == Recompute::full && recomputes(c)) {
    Ctx rc = c;
    rc.phase = Phase::bwd;
    layer_forward(rc);
  }
  residual_backward(c, "mlp residual");
  mlp_backward(c, with_wgrad);
  norm_backward(c, "mlp norm bwd");
  residual_backward(c, "attn residual");
  row_backward(c, "proj", m_.hidden, proj_k(), with_wgrad);
  if (p_.recompute == Recompute::selective && recomputes(c)) attention_forward(c, Phase::bwd);
  attention_backward(c);
  rope_backward(c);
  if (m_.mla) mla_up_backward(c, with_wgrad);
  column_backward(c, "qkv", qkv_n(), m_.hidden, with_wgrad);
  norm_backward(c, "attn norm bwd");
}

void StepBuilder::layer_wgrad(const Ctx& c) {
  mlp_wgrad(c);
  row_wgrad(c, "proj", m_.hidden, proj_k());
  if (m_.mla) mla_up_wgrad(c);
  column_wgrad(c, "qkv", qkv_n(), m_.hidden);
}

}  // namespace meshsim::step_detail
