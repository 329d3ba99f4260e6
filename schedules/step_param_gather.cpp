// The step builder's overlapped parameter all-gathers (StepPlan::overlap_param_gather): as
// Megatron-Core's --overlap-param-gather with the distributed optimizer, the updated bf16
// parameters of each gradient bucket are all-gathered while the forward runs, and a layer's first
// forward of the step waits for its bucket's all-gather (ARCHITECTURE.md §4.4). The all-gathers
// go on dp_comm in forward order (chunk 0's buckets first, each chunk's last bucket — its first
// layers, and the embedding on the first stage — first), as the forward pre-hooks need them.
#include "schedules/step_builder.hpp"

namespace meshsim::step_detail {

std::int64_t StepBuilder::bucket_params(int stage, const GradientBuckets& b, int j) const {
  std::int64_t n = std::int64_t{b.begin(j + 1) - b.begin(j)} * layer_params_;
  if (j == 0 && stage + 1 == stages_) n += head_params_;  // the head's grads come first
  if (j + 1 == b.count() && stage == 0) n += embedding_params_;
  return n;
}

void StepBuilder::launch_param_gathers() {
  param_gathers_.assign(static_cast<std::size_t>(v_), {});
  for (int chunk = 0; chunk < v_; ++chunk) {
    const int stage = gs(pr_, chunk);
    const GradientBuckets b = buckets_for(stage);
    auto& ops = param_gathers_[static_cast<std::size_t>(chunk)];
    ops.assign(static_cast<std::size_t>(b.count()), -1);
    for (int j = b.count() - 1; j >= 0; --j) {
      // The gathered bucket in the parameters' dtype (as the post-step all-gathers move).
      const std::int64_t bytes =
          param_gather_bytes(bucket_params(stage, b, j), b.begin(j + 1) - b.begin(j));
      const CollectiveCall call{CollectiveKind::all_gather, dp_group_, bytes, p_.dtype};
      ops[static_cast<std::size_t>(j)] =
          builder_.add(rank_, dp_comm_, fmt::format("param all-gather c{} bucket {}", chunk, j),
                       OpLabels{Phase::fwd, -1, -1, -1, chunk}, call, {});
    }
  }
}

void StepBuilder::wait_param_gather(int chunk, int layer) {
  if (param_gathers_.empty()) return;
  const int stage = gs(pr_, chunk);
  const GradientBuckets b = buckets_for(stage);
  const int backward_index = first_layer(stage) + layer_count(stage) - 1 - layer;
  const int j = b.bucket_of(backward_index);
  // Once per bucket: at its first layer in forward order (its last in backward order).
  if (backward_index != b.begin(j + 1) - 1) return;
  wait(param_gathers_[static_cast<std::size_t>(chunk)][static_cast<std::size_t>(j)]);
}

}  // namespace meshsim::step_detail
