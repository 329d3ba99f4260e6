#include "schedules/sharding.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

void check_sharding(const ShardingPlan& s, int dp) {
  if (s.zero < 0 || s.zero > 3) {
    throw InputError(fmt::format("`zero` must be 0, 1, 2 or 3 (got {})", s.zero));
  }
  if (s.fsdp && s.zero != 3) {
    throw InputError("`fsdp` shards parameters, gradients and optimizer state: `zero` must be 3");
  }
  require_positive(s.replicate, "hsdp");
  if (s.replicate > 1 && s.zero != 3) {
    throw InputError("`hsdp` replicates a sharded model: it needs `fsdp` (or `zero` 3)");
  }
  if (dp % s.replicate != 0) {
    throw InputError(fmt::format(
        "`hsdp` {} must divide `dp` {}: the state is sharded over dp / hsdp ranks and replicated "
        "hsdp times",
        s.replicate, dp));
  }
  if (!s.reshard_after_forward && s.zero != 3) {
    throw InputError(
        "`no_reshard_after_forward` needs `fsdp` (or `zero` 3): only sharded parameters are "
        "resharded");
  }
  if (s.no_sync && s.zero != 3) {
    throw InputError(
        "`fsdp_no_sync` needs `fsdp` (or `zero` 3): only sharded parameters and gradients are "
        "kept unsharded over the microbatches");
  }
}

std::string describe_sharding(const ShardingPlan& s) {
  std::string d;
  if (s.zero == 0) return "none";
  if (s.fsdp) {
    d = s.replicate > 1 ? fmt::format("hsdp {}", s.replicate) : "fsdp";
  } else {
    d = fmt::format("zero-{}", s.zero);
    if (s.replicate > 1) d += fmt::format(" (replicated {}x)", s.replicate);
  }
  if (!s.reshard_after_forward) d += ", no reshard after forward";
  if (s.no_sync) d += ", no sync";
  return d;
}

ShardedBytes sharded_state(double params, int zero, double shards, const ParameterBytes& b) {
  MESHSIM_CHECK(shards >= 1, "sharded_state: shards >= 1");
  ShardedBytes out;
  out.weights = zero >= 3 ? params * b.param / shards : params * b.param;
  out.gradients = zero >= 2 ? params * b.grad / shards : params * b.grad;
  out.optimizer = zero >= 1 ? params * b.optimizer / shards : params * b.optimizer;
  return out;
}

double unsharded_unit_bytes(const ShardingPlan& s, std::span<const FsdpUnit> units, double e) {
  if (!shards_parameters(s) || units.empty()) return 0;
  // The two largest gathered units, the largest unit's parameters, and the sums.
  double first = 0, second = 0, gathered = 0, rank_params = 0, largest = 0;
  for (const FsdpUnit& u : units) {
    gathered += u.gathered_bytes;
    rank_params += static_cast<double>(u.params);
    largest = std::max(largest, static_cast<double>(u.params));
    if (u.gathered_bytes > first) {
      second = first;
      first = u.gathered_bytes;
    } else {
      second = std::max(second, u.gathered_bytes);
    }
  }
  if (gathers_once_per_step(s)) return gathered + rank_params * 4 + largest * e;
  // The unit's unsharded gradient (parameter dtype) and its fp32 reduce-scatter input.
  const double gradient_buffers = largest * (e + 4);
  if (!s.reshard_after_forward) return gathered + gradient_buffers;
  return first + second + gradient_buffers;
}

}  // namespace meshsim
