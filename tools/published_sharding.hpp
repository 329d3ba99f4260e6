#pragma once
// The sharding fields of a published run (data/published/README.md: `parallel.fsdp`,
// `parallel.sharding`, `parallel.reshard_after_forward`, with `parallel.distributed_optimizer`)
// as the plan's ShardingPlan, set exactly as `meshsim step`'s flags set it (apply_sharding,
// tools/sharding_flags.hpp). Called once dp and cp are known. Rules:
//   parallel.fsdp        the sharding group size: how many ranks one parameter is sharded over,
//                        counted over dp x cp (torchtitan and meshsim shard over the data- and
//                        context-parallel ranks together: torchtitan's "FSDP 4, CP 2" is a group
//                        of 8). 0: no FSDP. N = dp x cp: --fsdp. N < dp x cp: --hsdp R with
//                        R = dp x cp / N replicas (R must divide dp: meshsim replicates over dp;
//                        else skipped). N not dividing dp x cp, or not an integer: bad input.
//   parallel.sharding    the source's words: "FSDP" / "FSDP2" / "fully_shard" (FSDP; with
//                        parallel.fsdp null, the group is dp x cp, FSDP's default of one
//                        replica), "HSDP" (parallel.fsdp required, else skipped), "ZeRO-1",
//                        "ZeRO-2", "ZeRO-3" (--zero N), "none" / "DDP" (no sharding); other
//                        words skipped. Words that contradict parallel.fsdp: bad input.
//   parallel.reshard_after_forward  true, false or null (null: true, FSDP2's default); false
//                        is --no-reshard-after-forward and needs FSDP / ZeRO-3 (bad input
//                        otherwise).
//   parallel.distributed_optimizer  every ZeRO stage and FSDP shard the optimizer state: false
//                        beside one of them is bad input.
// All fields absent or null: no sharding beyond the distributed optimizer (as before).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/step_plan.hpp"
#include "tools/published_runs.hpp"

namespace meshsim {

// Sets plan.sharding (and the distributed optimizer) from the row's `parallel` object; the
// reason to skip otherwise; InputError naming the field (`parallel.fsdp`, ...) for a malformed
// or contradictory value. Notes list the conventions applied.
std::optional<SkippedRun> published_sharding_plan(const nlohmann::json& parallel, StepPlan& plan,
                                                  std::vector<std::string>& notes);

}  // namespace meshsim
