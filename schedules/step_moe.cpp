// The step builder's MLP part of a layer — the dense MLP, or an MoE layer as Megatron-Core runs it
// (router GEMM and top-k, aux loss, permute, dispatch, grouped expert GEMMs, combine, unpermute,
// shared experts) — and MLA's up-projections. Expert groups: schedules/moe_plan.hpp.
//
// An MoE layer on a rank with T tokens (b·s / (cp·tp): sequence parallel), k experts per token,
// h hidden, e bytes, E_l = E / ep local experts, forward:
//   router     gemm [T, E, h]; top-k and the auxiliary load-balancing loss: elementwise [T·E]
//   permute    copy [T·k·h] (alltoall, allgather; fused into the dispatch kernel with flex)
//   dispatch   alltoall / flex: all-to-all over EP of T·k·h·e bytes (the per-rank buffer, as
//              nccl-tests sizes it; (ep-1)/ep of it leaves the rank), then with etp > 1 an
//              all-gather over ETP of the received tokens (etp x T·k·h·e);
//              allgather: all-gather over the EP x ETP group of the tokens (T·h·e per rank)
//   experts    per local expert j with m_j token copies (the routing's share, capped by the
//              capacity; after the ETP all-gather): up gemm [m_j, 2·f_e / etp (gated), h], one
//              activation over the rank's copies, down gemm [m_j, h, f_e / etp]
//   combine    the reverse: reduce-scatter over ETP, all-to-all over EP (allgather: reduce-scatter
//              over EP x ETP)
//   unpermute  copy [T·k·h] (the weighted sum of the k expert outputs)
//   shared     S shared experts as a TP MLP of width S·f_s (column up, row down); after the
//              unpermute, or with --moe-shared-expert-overlap up beside the dispatch and down
//              beside the combine (backward: beside the combine's backward all-to-all)
// The backward runs the same collectives in reverse order (combine's gradient is dispatched,
// dispatch's combined), dgrad and (unless split off into W) wgrad GEMMs per expert. With
// folding, a built rank's experts carry the busiest EP rank's tokens (every EP rank waits for it
// at the combine); unfolded, each rank its own.
#include <algorithm>
#include <cmath>
#include <functional>

#include "schedules/step_builder.hpp"

namespace meshsim::step_detail {

namespace {
std::int64_t mlp_width(const TransformerModel& m, std::int64_t f) {
  return (m.gated_mlp ? 2 : 1) * f;
}
}  // namespace

void StepBuilder::moe_setup() {
  if (m_.mla) {
    // The core's channels: d_qk + d_v per (query, key) pair, as a head dim of (d_qk + d_v) / 2
    // (4·d FLOPs forward per pair), every head its own K/V.
    ring_.kv_heads = ring_.heads;
    ring_.head_dim = (m_.mla->qk_head_dim() + m_.mla->v_head_dim) / 2;
  }
  ep_comm_ = m_.moe ? builder_.stream("ep_comm") : 0;
  if (!m_.moe) return;
  const MoeBlock& moe = *m_.moe;
  ep_ = p_.moe.ep;
  etp_ = expert_tp(p_.moe, t_);
  edp_size_ = t_ * n_cp_ * p_.dp / (etp_ * ep_);
  const ParameterCount pc = count_parameters(m_);
  const std::int64_t shared =
      moe.shared_experts * (m_.gated_mlp ? 3 : 2) * m_.hidden * moe.shared_ffn;
  const std::int64_t router = m_.hidden * moe.experts;
  moe_layer_params_ = (pc.attention + shared) / t_ + router + pc.norms;
  moe_layer_linear_params_ = (attention_matrices(m_) + shared) / t_;  // no MLA norms or biases
  expert_layer_params_ = moe.experts / ep_ * pc.routed_expert / etp_;
  dispatch_bytes_ = local_tokens_ * moe.top_k * m_.hidden * e_;
}

// Built members only, timed as the whole group (ARCHITECTURE.md §2 folding), like the TP and DP
// groups: a rank is built when its tp index is 0 (fold_tp) and its dp index 0 (fold_dp).
std::vector<int> StepBuilder::built_members(const std::vector<int>& ranks) const {
  std::vector<int> out;
  for (int r : ranks) {
    const auto c = builder_.peek().mesh.coords(r);
    if ((!fold_tp_ || c[0] == 0) && (!p_.fold_dp || c[2] == 0)) out.push_back(r);
  }
  return out;
}

GroupId StepBuilder::expert_group(std::string_view dim, const std::vector<int>& ranks) {
  std::vector<int> members = built_members(ranks);
  return members.size() == ranks.size() ? builder_.group(dim, ranks)
                                        : builder_.group(dim, std::move(members), ranks);
}

void StepBuilder::moe_begin_rank(int rank) {
  if (!m_.moe) return;
  const ExpertGroups g = expert_groups(rank, t_, n_cp_, p_.dp, etp_, ep_);
  ep_group_ = expert_group("ep", g.ep);
  etp_group_ = expert_group("etp", g.etp);
  edp_group_ = expert_group("edp", g.edp);
  ep_etp_group_ =
      p_.moe.dispatcher == TokenDispatcher::allgather ? expert_group("ep", g.ep_etp) : 0;
  if (p_.moe.dispatcher == TokenDispatcher::flex && ep_ > 1) deepep_setup(g.ep);
  // Token copies per local expert per microbatch, after the ETP all-gather.
  const ExpertLoad load = expert_load(*m_.moe, p_.moe, local_tokens_);
  const bool folded = built_members(g.ep).size() < g.ep.size();
  int q = g.ep_index;
  if (folded) {
    q = static_cast<int>(std::max_element(load.per_rank.begin(), load.per_rank.end()) -
                         load.per_rank.begin());
  }
  const int local = m_.moe->experts / ep_;
  expert_tokens_.clear();
  for (int j = 0; j < local; ++j) {
    const double n = load.tokens[static_cast<std::size_t>(q * local + j)] * etp_;
    expert_tokens_.push_back(static_cast<std::int64_t>(std::llround(n)));
  }
  gathered_bytes_ = 0;
  for (const std::int64_t n : expert_tokens_) gathered_bytes_ += n * m_.hidden * e_;
}

OpId StepBuilder::moe_collective(const Ctx& c, std::string name, CollectiveKind kind, GroupId group,
                                 std::int64_t bytes, bool yield, StreamId stream) {
  std::vector<OpId> deps = waits_;
  if (last_compute_ >= 0) deps.push_back(last_compute_);
  const OpId op = builder_.add(rank_, stream >= 0 ? stream : ep_comm_, std::move(name),
                               OpLabels{c.phase, c.layer, c.mb, -1, c.chunk},
                               CollectiveCall{kind, group, bytes, p_.dtype}, std::move(deps));
  wait(op);
  if (yield && group != etp_group_) yield_to_pair();  // after each EP collective (overlap_comm)
  return op;
}

OpId StepBuilder::move_tokens(const Ctx& c, const std::string& name, bool to_experts, bool yield,
                              const std::function<void()>& beside) {
  const CollectiveKind spread =
      to_experts ? CollectiveKind::all_gather : CollectiveKind::reduce_scatter;
  const std::string word = to_experts ? " all-gather" : " reduce-scatter";
  if (p_.moe.dispatcher == TokenDispatcher::allgather) {
    if (ep_ * etp_ <= 1) return -1;
    return moe_collective(c, name + word, spread, ep_etp_group_,
                          local_tokens_ * m_.hidden * e_ * ep_ * etp_, yield);
  }
  const auto all_to_all = [&] {
    if (ep_ <= 1) return;
    if (p_.moe.dispatcher == TokenDispatcher::flex) {
      deepep_all_to_all(c, name, to_experts, yield);
    } else {
      moe_collective(c, name + " all-to-all", CollectiveKind::all_to_all, ep_group_,
                     dispatch_bytes_, yield);
    }
    if (beside) beside_all_to_all(beside);
  };
  const auto over_etp = [&] {
    if (etp_ > 1) moe_collective(c, name + " etp" + word, spread, etp_group_, gathered_bytes_);
  };
  if (to_experts) {
    all_to_all();
    over_etp();
  } else {
    over_etp();
    all_to_all();
  }
  return -1;
}

// The grouped expert GEMMs of the local experts (one GEMM per expert holding tokens) and their
// activation; backward: dgrad (and wgrad unless split off) in reverse order. With low-precision
// linears they run in the recipe's format as Megatron-Core's TE GroupedLinear does: the permuted
// tokens, the activation's output and each output gradient cast (row- and column-wise) before
// their GEMMs, the local experts' weights cast when quantize_spec says (the chunk's first forward
// of the step; every forward under ZeRO-3 / FSDP).
void StepBuilder::experts_pass(const Ctx& c, const std::string& pre, bool backward,
                               bool with_wgrad) {
  const std::int64_t h = m_.hidden, f = m_.moe->expert_ffn / etp_;
  const std::int64_t up = mlp_width(m_, f);
  std::int64_t copies = 0;
  for (const std::int64_t n : expert_tokens_) copies += n;
  const TpLayerSpec q = expert_quant_spec(c);
  const auto each = [&](const std::string& what, auto shape_of) {
    for (std::size_t j = 0; j < expert_tokens_.size(); ++j) {
      const std::int64_t n = expert_tokens_[j];
      if (n == 0) continue;
      kernel(fmt::format("{}expert {} {}", pre, j, what), c.phase, c.layer, c.mb, c.chunk,
             KernelKind::gemm, shape_of(n), ElementwiseFn::none, -1, q.quant);
    }
  };
  if (!backward) {
    if (q.cast_weight) {
      const auto local = static_cast<std::int64_t>(expert_tokens_.size());
      expert_cast(c, q, pre + "experts w", c.phase, local * (up * h + h * f));
    }
    expert_cast(c, q, pre + "experts x", c.phase, copies * h);
    each("up", [&](std::int64_t n) { return GemmShape{n, up, h}; });
    if (copies > 0) {
      kernel(pre + "expert activation", c.phase, c.layer, c.mb, c.chunk, KernelKind::elementwise,
             activation_shape(false, copies, f),
             m_.gated_mlp ? ElementwiseFn::none : ElementwiseFn::gelu);
    }
    expert_cast(c, q, pre + "experts act", c.phase, copies * f);
    each("down", [&](std::int64_t n) { return GemmShape{n, h, f}; });
    return;
  }
  expert_cast(c, q, "experts down dy", Phase::bwd, copies * h);
  each("down dgrad", [&](std::int64_t n) { return GemmShape{n, f, h, false, true, false}; });
  if (copies > 0) {
    kernel("expert activation bwd", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::elementwise,
           activation_shape(true, copies, f));
  }
  expert_cast(c, q, "experts up dy", Phase::bwd, copies * up);
  each("up dgrad", [&](std::int64_t n) { return GemmShape{n, h, up, false, true, false}; });
  if (!with_wgrad) return;
  Ctx w = c;
  w.phase = Phase::wgrad;
  expert_wgrads(w);
}

void StepBuilder::expert_wgrads(const Ctx& c) {
  const std::int64_t h = m_.hidden, f = m_.moe->expert_ffn / etp_, up = mlp_width(m_, f);
  const QuantFormat quant = expert_quant_spec(c).quant;
  for (std::size_t j = 0; j < expert_tokens_.size(); ++j) {
    const std::int64_t n = expert_tokens_[j];
    if (n == 0) continue;
    kernel(fmt::format("expert {} down wgrad", j), Phase::wgrad, c.layer, c.mb, c.chunk,
           KernelKind::gemm, GemmShape{h, f, n, true, false, true}, ElementwiseFn::none, -1, quant);
    kernel(fmt::format("expert {} up wgrad", j), Phase::wgrad, c.layer, c.mb, c.chunk,
           KernelKind::gemm, GemmShape{up, h, n, true, false, true}, ElementwiseFn::none, -1,
           quant);
  }
}

// The shared experts as a TP MLP of width S·f_s: the up GEMM (column layer) and activation, the
// down GEMM (row layer), their backward.
void StepBuilder::shared_up_forward(const Ctx& c, const std::string& pre) {
  const std::int64_t fs = m_.moe->shared_experts * m_.moe->shared_ffn / t_;
  column_forward(c, pre + "shared up", mlp_width(m_, fs), m_.hidden);
  kernel(pre + "shared activation", c.phase, c.layer, c.mb, c.chunk, KernelKind::elementwise,
         activation_shape(false, tokens_, fs));
}

void StepBuilder::shared_down_forward(const Ctx& c, const std::string& pre) {
  row_forward(c, pre + "shared down", m_.hidden, m_.moe->shared_experts * m_.moe->shared_ffn / t_);
}

void StepBuilder::shared_backward(const Ctx& c, bool with_wgrad) {
  const std::int64_t fs = m_.moe->shared_experts * m_.moe->shared_ffn / t_;
  row_backward(c, "shared down", m_.hidden, fs, with_wgrad);
  kernel("shared activation bwd", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::elementwise,
         activation_shape(true, tokens_, fs));
  column_backward(c, "shared up", mlp_width(m_, fs), m_.hidden, with_wgrad);
}

// `emit` runs beside the all-to-all just launched (--moe-shared-expert-overlap's shared experts,
// --delay-wgrad-compute's expert weight gradients): its kernels do not wait for it (the pending
// waits are set aside and restored after them).
template <typename Emit>
void StepBuilder::beside_all_to_all(Emit emit) {
  std::vector<OpId> pending = take_waits();
  emit();
  waits_.insert(waits_.end(), pending.begin(), pending.end());
}

void StepBuilder::moe_forward(const Ctx& c, const std::string& pre) {
  const MoeBlock& moe = *m_.moe;
  const std::int64_t tk = local_tokens_ * moe.top_k * m_.hidden;
  const bool overlap = moe.shared_experts > 0 && p_.moe.shared_expert_overlap;
  kernel(pre + "router", c.phase, c.layer, c.mb, c.chunk, KernelKind::gemm,
         GemmShape{local_tokens_, moe.experts, m_.hidden});
  kernel(pre + "router topk", c.phase, c.layer, c.mb, c.chunk, KernelKind::elementwise,
         VectorShape{local_tokens_ * moe.experts});
  const OpId routed = kernel(pre + "aux loss", c.phase, c.layer, c.mb, c.chunk,
                             KernelKind::elementwise, VectorShape{local_tokens_ * moe.experts});
  const bool fused = p_.moe.dispatcher == TokenDispatcher::flex;
  const bool alltoall = p_.moe.dispatcher == TokenDispatcher::alltoall;
  // The host reads the token counts (Megatron's cuda sync point): alltoall with a capacity factor
  // before the permute, dropless before the EP all-to-all (ep or etp > 1) or the experts; DeepEP's
  // dispatch call spins on the received counts before it launches the dispatch kernel.
  if (alltoall && p_.moe.capacity_factor > 0) builder_.host_wait_next(routed);
  if (!fused) {
    kernel(pre + "permute", c.phase, c.layer, c.mb, c.chunk, KernelKind::copy, VectorShape{tk});
  }
  if ((alltoall && p_.moe.capacity_factor <= 0) || fused) builder_.host_wait_next(routed);
  // Megatron's dispatch_postprocess launches the shared up GEMM right after the all-to-all,
  // before the ETP all-gather; the shared down after the combine's all-to-all.
  const std::function<void()> none;
  const std::function<void()> up = [&] { shared_up_forward(c, pre); };
  const std::function<void()> down = [&] { shared_down_forward(c, pre); };
  const OpId gathered = move_tokens(c, pre + "dispatch", true, true, overlap ? up : none);
  if (p_.moe.dispatcher == TokenDispatcher::allgather) {  // `.cpu()` of the gathered counts
    builder_.host_wait_next(gathered >= 0 ? gathered : routed);
  }
  experts_pass(c, pre, false, false);
  move_tokens(c, pre + "combine", false, true, overlap ? down : none);
  if (!fused) {
    kernel(pre + "unpermute", c.phase, c.layer, c.mb, c.chunk, KernelKind::copy, VectorShape{tk});
  }
  if (moe.shared_experts > 0 && !overlap) {
    shared_up_forward(c, pre);
    shared_down_forward(c, pre);
  }
}

void StepBuilder::moe_backward(const Ctx& c, bool with_wgrad) {
  const MoeBlock& moe = *m_.moe;
  const std::int64_t tk = local_tokens_ * moe.top_k * m_.hidden;
  const bool overlap = moe.shared_experts > 0 && p_.moe.shared_expert_overlap;
  if (moe.shared_experts > 0 && !overlap) shared_backward(c, with_wgrad);
  const bool fused = p_.moe.dispatcher == TokenDispatcher::flex;
  if (!fused) {
    kernel("unpermute bwd", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::copy, VectorShape{tk});
  }
  const std::function<void()> shared = [&] { shared_backward(c, with_wgrad); };
  move_tokens(c, "combine bwd", true, true, overlap ? shared : std::function<void()>());
  // --delay-wgrad-compute: the dispatch backward waits for the input gradients only; the expert
  // weight gradients follow it on the compute stream, beside its all-to-all (and the other part
  // of an overlapped pair resumes after them, as Megatron's mlp.backward_dw precedes the
  // dispatch backward's launch).
  const bool delay = with_wgrad && p_.moe.delay_wgrad;
  experts_pass(c, "", true, with_wgrad && !delay);
  move_tokens(c, "dispatch bwd", false, !delay);
  if (delay) {
    Ctx w = c;
    w.phase = Phase::wgrad;
    beside_all_to_all([&] { expert_wgrads(w); });  // the all-to-all waits for the permute bwd
    yield_to_pair();
  }
  if (!fused) {
    kernel("permute bwd", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::copy, VectorShape{tk});
  }
  kernel("router topk bwd", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::elementwise,
         VectorShape{local_tokens_ * moe.experts});
  kernel("router dgrad", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::gemm,
         GemmShape{local_tokens_, m_.hidden, moe.experts, false, true, false});
  if (with_wgrad) {
    kernel("router wgrad", Phase::wgrad, c.layer, c.mb, c.chunk, KernelKind::gemm,
           GemmShape{moe.experts, m_.hidden, local_tokens_, true, false, true});
  }
}

void StepBuilder::moe_wgrad(const Ctx& c) {
  const MoeBlock& moe = *m_.moe;
  if (moe.shared_experts > 0) {
    const std::int64_t fs = moe.shared_experts * moe.shared_ffn / t_;
    row_wgrad(c, "shared down", m_.hidden, fs);
    column_wgrad(c, "shared up", mlp_width(m_, fs), m_.hidden);
  }
  expert_wgrads(c);
  kernel("router wgrad", Phase::wgrad, c.layer, c.mb, c.chunk, KernelKind::gemm,
         GemmShape{moe.experts, m_.hidden, local_tokens_, true, false, true});
}

void StepBuilder::mlp_forward(const Ctx& c, const std::string& pre) {
  if (is_moe_layer(m_, c.layer)) {
    moe_forward(c, pre);
    return;
  }
  column_forward(c, pre + "mlp up", up_n(), m_.hidden);
  kernel(pre + "activation", c.phase, c.layer, c.mb, c.chunk, KernelKind::elementwise,
         activation_shape(false), m_.gated_mlp ? ElementwiseFn::none : ElementwiseFn::gelu);
  row_forward(c, pre + "mlp down", m_.hidden, m_.ffn_hidden / t_);
}

void StepBuilder::mlp_backward(const Ctx& c, bool with_wgrad) {
  if (is_moe_layer(m_, c.layer)) {
    moe_backward(c, with_wgrad);
    return;
  }
  row_backward(c, "mlp down", m_.hidden, m_.ffn_hidden / t_, with_wgrad);
  kernel("activation bwd", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::elementwise,
         activation_shape(true));
  column_backward(c, "mlp up", up_n(), m_.hidden, with_wgrad);
}

void StepBuilder::mlp_wgrad(const Ctx& c) {
  if (is_moe_layer(m_, c.layer)) {
    moe_wgrad(c);
    return;
  }
  row_wgrad(c, "mlp down", m_.hidden, m_.ffn_hidden / t_);
  column_wgrad(c, "mlp up", up_n(), m_.hidden);
}

// MLA's up-projections on the whole sequence of this rank's a / t heads (after the
// down-projections' column layer, which all-gathers the tokens under sequence parallelism):
// q up [T, a/t·d_qk, r_q] (none when r_q = 0: the column layer projects q directly... costed as
// r_q = 0 skipping it), kv up [T, a/t·(d_nope + d_v), r_kv].
void StepBuilder::mla_up_forward(const Ctx& c, Phase phase, const std::string& pre) {
  const MlaBlock& a = *m_.mla;
  const std::int64_t heads = m_.heads / t_;
  if (a.q_lora_rank > 0) {
    kernel(pre + "q up", phase, c.layer, c.mb, c.chunk, KernelKind::gemm,
           GemmShape{tokens_, heads * a.qk_head_dim(), a.q_lora_rank});
  }
  kernel(pre + "kv up", phase, c.layer, c.mb, c.chunk, KernelKind::gemm,
         GemmShape{tokens_, heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank});
}

void StepBuilder::mla_up_backward(const Ctx& c, bool with_wgrad) {
  const MlaBlock& a = *m_.mla;
  const std::int64_t heads = m_.heads / t_;
  const std::int64_t kv_n = heads * (a.qk_nope_head_dim + a.v_head_dim);
  kernel("kv up dgrad", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::gemm,
         GemmShape{tokens_, a.kv_lora_rank, kv_n, false, true, false});
  if (a.q_lora_rank > 0) {
    kernel("q up dgrad", Phase::bwd, c.layer, c.mb, c.chunk, KernelKind::gemm,
           GemmShape{tokens_, a.q_lora_rank, heads * a.qk_head_dim(), false, true, false});
  }
  if (with_wgrad) mla_up_wgrad(c);
}

void StepBuilder::mla_up_wgrad(const Ctx& c) {
  const MlaBlock& a = *m_.mla;
  const std::int64_t heads = m_.heads / t_;
  kernel("kv up wgrad", Phase::wgrad, c.layer, c.mb, c.chunk, KernelKind::gemm,
         GemmShape{heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, tokens_, true,
                   false, true});
  if (a.q_lora_rank > 0) {
    kernel("q up wgrad", Phase::wgrad, c.layer, c.mb, c.chunk, KernelKind::gemm,
           GemmShape{heads * a.qk_head_dim(), a.q_lora_rank, tokens_, true, false, true});
  }
}

void StepBuilder::reduce_expert_grads(int stage, int mb, int chunk) {
  // Under ZeRO-3 / FSDP each layer's experts are reduce-scattered with its unit (reduce_unit).
  if (!m_.moe || edp_size_ <= 1 || gathers_params()) return;
  std::int64_t params = 0;
  for (int l = first_layer(stage); l < first_layer(stage) + layer_count(stage); ++l) {
    params += expert_params(l);
  }
  if (stage + 1 == stages_) {
    for (int k = 0; k < m_.mtp_layers; ++k) params += expert_params(m_.layers + k);
  }
  if (params == 0) return;
  const bool dist = p_.distributed_optimizer;
  std::vector<OpId> deps;
  if (last_compute_ >= 0) deps.push_back(last_compute_);
  // Main gradients in the buffer's dtype (grad_reduce_in_fp32: fp32), as the dense buckets.
  dp_ops_.push_back(builder_.add(
      rank_, dp_comm_,
      fmt::format("expert grad {} c{}", dist ? "reduce-scatter" : "all-reduce", chunk),
      OpLabels{Phase::wgrad, -1, mb, -1, chunk},
      CollectiveCall{dist ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce, edp_group_,
                     params * grad_bytes_, p_.grad_reduce_in_fp32 ? DType::fp32 : p_.dtype},
      std::move(deps)));
}

}  // namespace meshsim::step_detail
