#include "tools/sharding_flags.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

std::vector<OptionSpec> sharding_options() {
  return {
      {"--zero", "1|2|3",
       "ZeRO stage over dp x cp: 1 optimizer state (= --distributed-optimizer), 2 + gradients "
       "(reduce-scattered every microbatch), 3 + parameters (all-gathered per layer)"},
      {"--fsdp", "",
       "FSDP2 (ZeRO-3 with fp32 sharded parameters): per-unit parameter all-gather before forward "
       "and backward, next unit prefetched, gradient reduce-scatter per unit"},
      {"--hsdp", "R",
       "FSDP2 sharded within dp x cp / R ranks and replicated over R (implies --fsdp)"},
      {"--no-reshard-after-forward", "",
       "with --fsdp: keep parameters gathered from forward to backward (no backward all-gather)"},
      {"--fsdp-no-sync", "",
       "with --fsdp: accumulate gradients unsharded in fp32 and reduce-scatter them once per step, "
       "parameters kept gathered after their first forward (FSDP's no_sync; torchtitan's PP)"},
  };
}

ShardingPlan fsdp_sharding(int replicate, bool reshard_after_forward) {
  return ShardingPlan{.zero = 3,
                      .fsdp = true,
                      .replicate = replicate,
                      .reshard_after_forward = reshard_after_forward};
}

void apply_sharding(StepPlan& p, const ShardingPlan& s) {
  p.sharding = s;
  if (s.zero >= 1) p.distributed_optimizer = true;
}

void read_sharding(const Args& args, StepPlan& p) {
  ShardingPlan s;
  s.zero = static_cast<int>(args.get_int("--zero", p.distributed_optimizer ? 1 : 0, 1, 3));
  if (args.has("--fsdp") || args.has("--hsdp")) {
    if (args.has("--zero") && s.zero != 3) {
      throw InputError(
          fmt::format("--fsdp shards parameters (ZeRO-3); it contradicts --zero {}", s.zero));
    }
    s = fsdp_sharding(1, true);
  }
  s.replicate = static_cast<int>(args.get_int("--hsdp", 1, 1, 1 << 16));
  s.reshard_after_forward = !args.has("--no-reshard-after-forward");
  s.no_sync = args.has("--fsdp-no-sync");
  apply_sharding(p, s);
  if (p.overlap_param_gather && s.zero >= 3) {
    throw InputError(
        "--overlap-param-gather applies to ZeRO-1/2; with --fsdp or --zero 3 the parameters are "
        "all-gathered per unit before each forward");
  }
}

}  // namespace meshsim
