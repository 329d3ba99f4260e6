// The sweep's flags (tools/sweep_flags.cpp): the lists they give, the defaults, the errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/error.hpp"
#include "tools/sweep_flags.hpp"

using namespace meshsim;

namespace {

PlanLists lists_of(const std::vector<std::string>& argv) {
  const Args args("sweep", sweep_options(), argv);
  return sweep_plan_lists(args, load_hardware("h100-sxm"));
}

}  // namespace

TEST_CASE("sweep flags: comma-separated lists, --nodes as GPUs, the shared settings") {
  const PlanLists l = lists_of({"--nodes", "4", "--tp", "2,8", "--pp", "1", "--schedule",
                                "1f1b,interleaved", "--seq", "4096"});
  CHECK(l.gpus == 32);  // 4 nodes x the profile's 8 GPUs per node
  CHECK(l.tp == std::vector<int>{2, 8});
  CHECK(l.pp == std::vector<int>{1});
  CHECK(l.schedules == std::vector<PipelineSchedule>{PipelineSchedule::one_f_one_b,
                                                     PipelineSchedule::interleaved});
  CHECK(l.base.seq == 4096);
  CHECK(list_text(l.tp) == "2,8");
}

TEST_CASE("sweep flags: bad lists name the flag") {
  CHECK_THROWS_WITH_AS(lists_of({"--tp", "2,,4"}),
                       doctest::Contains("--tp: expected a comma-separated list of integers"),
                       InputError);
  CHECK_THROWS_WITH_AS(lists_of({"--schedule", "1f1b,fast"}),
                       doctest::Contains("--schedule: expected a comma-separated list of"),
                       InputError);
  CHECK_THROWS_WITH_AS(lists_of({"--gpus", "8", "--nodes", "1"}),
                       doctest::Contains("--gpus and --nodes contradict each other"), InputError);
}

TEST_CASE("sweep flags: the MoE dispatcher and shared-expert overlap apply to every plan") {
  const PlanLists plain = lists_of({"--ep", "4,8"});
  CHECK(plain.base.moe.dispatcher == TokenDispatcher::alltoall);
  CHECK_FALSE(plain.base.moe.shared_expert_overlap);
  const PlanLists l =
      lists_of({"--ep", "4,8", "--moe-token-dispatcher", "flex", "--moe-shared-expert-overlap"});
  CHECK(l.base.moe.dispatcher == TokenDispatcher::flex);
  CHECK(l.base.moe.shared_expert_overlap);
  CHECK_THROWS_WITH_AS(lists_of({"--moe-token-dispatcher", "deepep"}),
                       doctest::Contains("--moe-token-dispatcher"), InputError);
}
