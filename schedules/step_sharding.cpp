// The step builder's ZeRO-3 / FSDP2 / HSDP ops (StepPlan::sharding; schedules/sharding.hpp):
// as PyTorch's fully_shard on torchtitan's units (the token embedding, each transformer layer, the
// final norm + output head), each forward or backward of a (microbatch, chunk) all-gathers a unit's
// parameters in the parameter dtype before the unit computes, on the `fsdp_gather` stream, and
// issues the next unit's all-gather as the unit starts (FSDP2's one-unit prefetch: forward order
// in the forward, reverse order in the backward), so it overlaps the unit's compute. Each
// all-gather waits for the compute launched before it (the copy-in FSDP2 does on the current
// stream's data). With reshard_after_forward false the backward finds the parameters gathered and
// all-gathers nothing. After a unit's weight gradients, its fp32 gradients (FSDP2's reduce_dtype,
// torchtitan's default float32) are reduce-scattered over the shard group on dp_comm, then under
// HSDP the shard is all-reduced over the replicas; the optimizer step waits for them all, on
// every microbatch (FSDP2 synchronizes gradients on each backward by default), and updates the
// rank's shard; no parameter all-gather follows the step (the next forward gathers).
// With no_sync (gathers_once_per_step), as torch.distributed.pipelining runs FSDP2 stages
// (stage.py, backward_maybe_with_nosync: set_reshard_after_backward(False) and
// set_requires_gradient_sync(False) on every backward, the reduction after the last): a unit is
// all-gathered by the chunk's first forward of the step only and stays gathered, and its fp32
// gradients are reduce-scattered once, after the chunk's last weight gradients.
// MoE layers: as torchtitan's apply_fsdp (with ep > 1, fully_shard(block.moe.experts,
// mesh=dp_mod_ep) before fully_shard(block)), the routed experts are a unit of their own over the
// expert-data-parallel group, all-gathered right after the layer's unit (in bf16, also under FP8)
// and reduce-scattered after it; the layer's unit holds its attention, router, shared experts and
// norms (the head unit its MTP modules', their experts apart likewise). At ep 1 the experts are
// gathered with their layer. HSDP with ep > 1 is refused (check_step_plan).
#include "schedules/step_builder.hpp"

namespace meshsim::step_detail {

void StepBuilder::begin_sharding(const Mesh& mesh, int rank) {
  const int replicas = p_.sharding.replicate;
  shard_size_ = dp_size_ / replicas;
  shard_group_ = dp_group_;
  replicate_group_ = -1;
  if (!shards_parameters(p_.sharding) || replicas == 1) return;
  // HSDP: dp = replicas x shard; a shard group holds consecutive dp indices (torchtitan's
  // ("dp_replicate", "dp_shard") mesh, dp_shard fastest) and all their cp ranks.
  const int per = p_.dp / replicas;
  const std::vector<int> dp_ranks = mesh.group_of("dp", rank);  // in dp-index order
  const int d =
      static_cast<int>(std::find(dp_ranks.begin(), dp_ranks.end(), rank) - dp_ranks.begin());
  std::vector<int> shard;
  for (int k = 0; k < per; ++k) {
    for (int r : mesh.group_of("cp", dp_ranks[static_cast<std::size_t>(d / per * per + k)])) {
      shard.push_back(r);
    }
  }
  std::sort(shard.begin(), shard.end());
  shard_group_ = p_.fold_dp && shard.size() > cp_ranks_.size()
                     ? builder_.group("dp-cp", cp_ranks_, std::move(shard))
                     : builder_.group("dp-cp", std::move(shard));
  std::vector<int> replicas_of;
  for (int k = 0; k < replicas; ++k) {
    replicas_of.push_back(dp_ranks[static_cast<std::size_t>(k * per + d % per)]);
  }
  replicate_group_ = p_.fold_dp ? builder_.group("dp", {rank}, std::move(replicas_of))
                                : builder_.group("dp", std::move(replicas_of));
}

int StepBuilder::unit_count(int stage) const {
  return (stage == 0 ? 1 : 0) + layer_count(stage) + (stage + 1 == stages_ ? 1 : 0);
}

int StepBuilder::layer_unit(int stage, int layer) const {
  return (stage == 0 ? 1 : 0) + layer - first_layer(stage);
}

int StepBuilder::unit_layer(int stage, int u) const {
  if ((stage == 0 && u == 0) || (stage + 1 == stages_ && u == head_unit(stage))) return -1;
  return first_layer(stage) + u - (stage == 0 ? 1 : 0);
}

// The routed experts of unit u: its layer's, or on the head unit its MTP modules' (the MTP
// modules' dense parameters are in head_params_).
std::int64_t StepBuilder::unit_routed_experts(int stage, int u) const {
  if (stage == 0 && u == 0) return 0;
  if (stage + 1 == stages_ && u == head_unit(stage)) {
    std::int64_t n = 0;
    for (int k = 0; k < m_.mtp_layers; ++k) n += expert_params(m_.layers + k);
    return n;
  }
  return expert_params(unit_layer(stage, u));
}

// torchtitan wraps the experts on their own only with expert parallelism (ep_degree > 1); at ep 1
// they are gathered with the layer.
std::int64_t StepBuilder::unit_params(int stage, int u) const {
  const std::int64_t with = ep_ > 1 ? 0 : unit_routed_experts(stage, u);
  if (stage == 0 && u == 0) return embedding_params_;
  if (stage + 1 == stages_ && u == head_unit(stage)) return head_params_ + with;
  return layer_params(unit_layer(stage, u)) + with;
}

std::int64_t StepBuilder::unit_experts(int stage, int u) const {
  return ep_ > 1 ? unit_routed_experts(stage, u) : 0;
}

void StepBuilder::begin_unit_pass(int stage) {
  if (!gathers_params()) return;
  const auto n = static_cast<std::size_t>(unit_count(stage));
  unit_gathers_.assign(n, -1);
  unit_waited_.assign(n, false);
}

OpId StepBuilder::issue_gather(const Ctx& c, int stage, int u) {
  std::vector<OpId> deps;
  if (last_compute_ >= 0) deps.push_back(last_compute_);
  const std::int64_t bytes = gathers_quantized_unit(stage, u) ? quantized_unit_gather(c, stage, u)
                                                              : unit_params(stage, u) * e_;
  const OpLabels labels{c.phase, c.layer, c.mb, -1, c.chunk};
  const CollectiveCall call{CollectiveKind::all_gather, shard_group_, bytes, p_.dtype};
  OpId gathered =
      builder_.add(rank_, gather_comm_, fmt::format("fsdp all-gather c{} unit {}", c.chunk, u),
                   labels, call, std::move(deps));
  const std::int64_t experts = unit_experts(stage, u);
  if (experts > 0 && edp_size_ > 1) {
    // The layer's routed experts, their own unit over the expert-data-parallel group, in the
    // parameter dtype (not in FSDP's FP8 all-gather), next on the same stream.
    const CollectiveCall e{CollectiveKind::all_gather, edp_group_, experts * e_, p_.dtype};
    gathered =
        builder_.add(rank_, gather_comm_,
                     fmt::format("fsdp expert all-gather c{} unit {}", c.chunk, u), labels, e, {});
  }
  return gathered;
}

void StepBuilder::gather_unit(const Ctx& c, int stage, int u, int step) {
  if (!gathers_params()) return;
  if (gathers_once() && (c.phase != Phase::fwd || !first_forward_)) return;
  if (c.phase != Phase::fwd && !p_.sharding.reshard_after_forward) return;
  const auto i = static_cast<std::size_t>(u);
  if (unit_waited_[i]) return;
  if (unit_gathers_[i] < 0) unit_gathers_[i] = issue_gather(c, stage, u);
  wait(unit_gathers_[i]);
  unit_waited_[i] = true;
  const int next = u + step;
  if (next >= 0 && next < unit_count(stage) && unit_gathers_[static_cast<std::size_t>(next)] < 0) {
    unit_gathers_[static_cast<std::size_t>(next)] = issue_gather(c, stage, next);
  }
}

void StepBuilder::reduce_unit(const Ctx& c, int stage, int u) {
  // With no_sync only the chunk's last weight gradients of the step (emit_compute has counted the
  // pass being emitted).
  const bool last = wgrad_passes_[static_cast<std::size_t>(c.chunk)] == shape_.microbatches;
  if (!gathers_params() || (gathers_once() && !last)) return;
  const std::int64_t bytes = unit_params(stage, u) * 4;  // fp32 gradients
  std::vector<OpId> deps;
  if (last_compute_ >= 0) deps.push_back(last_compute_);
  const OpLabels labels{Phase::wgrad, c.layer, c.mb, -1, c.chunk};
  const OpId rs = builder_.add(
      rank_, dp_comm_, fmt::format("fsdp grad reduce-scatter c{} unit {}", c.chunk, u), labels,
      CollectiveCall{CollectiveKind::reduce_scatter, shard_group_, bytes, DType::fp32},
      std::move(deps));
  dp_ops_.push_back(rs);
  const std::int64_t experts = unit_experts(stage, u);
  if (experts > 0 && edp_size_ > 1) {
    dp_ops_.push_back(builder_.add(
        rank_, dp_comm_, fmt::format("fsdp expert grad reduce-scatter c{} unit {}", c.chunk, u),
        labels,
        CollectiveCall{CollectiveKind::reduce_scatter, edp_group_, experts * 4, DType::fp32},
        {rs}));
  }
  if (replicate_group_ < 0) return;
  const std::int64_t shard = (bytes / 4 + shard_size_ - 1) / shard_size_ * 4;
  dp_ops_.push_back(builder_.add(
      rank_, dp_comm_, fmt::format("hsdp grad all-reduce c{} unit {}", c.chunk, u), labels,
      CollectiveCall{CollectiveKind::all_reduce, replicate_group_, shard, DType::fp32}, {rs}));
}

}  // namespace meshsim::step_detail
