#include <doctest/doctest.h>

#include <string>

#include "schedules/moe_plan.hpp"
#include "sim/error.hpp"
#include "tests/schedules/tiny_models.hpp"

using namespace meshsim;

namespace {
MoePlan ep_plan(int ep, int etp = 0) {
  MoePlan p;
  p.ep = ep;
  p.etp = etp;
  return p;
}

std::string plan_error(const TransformerModel& m, const MoePlan& p, int tp, int cp, int dp,
                       bool sp = true) {
  try {
    check_moe_plan(m, p, tp, cp, dp, sp);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("moe plan: Megatron-Core's parallel folding of the expert groups") {
  // tp 2 x dp 4 (8 ranks per stage), etp 1, ep 4: the expert mesh is etp x ep x edp = 1 x 4 x 2,
  // ep fastest: EP groups {0-3}, {4-7}; EDP groups {i, i + 4}.
  ExpertGroups g = expert_groups(5, 2, 1, 4, 1, 4);
  CHECK(g.ep == std::vector<int>{4, 5, 6, 7});
  CHECK(g.ep_index == 1);
  CHECK(g.etp == std::vector<int>{5});
  CHECK(g.edp == std::vector<int>{1, 5});
  // Pipeline stage 1 (ranks 8-15) holds the same groups shifted by 8.
  g = expert_groups(13, 2, 1, 4, 1, 4);
  CHECK(g.ep == std::vector<int>{12, 13, 14, 15});
  // etp 2, ep 2 on tp 2 x dp 2: etp fastest: ETP {2, 3}, EP {1, 3} for rank 3.
  g = expert_groups(3, 2, 1, 2, 2, 2);
  CHECK(g.etp == std::vector<int>{2, 3});
  CHECK(g.ep == std::vector<int>{1, 3});
  CHECK(g.edp == std::vector<int>{3});
  CHECK(g.ep_etp == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("moe plan: rules name the field") {
  TransformerModel m = test::tiny_gqa_model(2);
  CHECK(plan_error(m, ep_plan(2), 1, 1, 4).find("`ep` and `etp` need a model with MoE") !=
        std::string::npos);
  m.moe = MoeBlock{8, 2, 32, 0, 0, 0, 1};
  CHECK(plan_error(m, ep_plan(4), 1, 1, 4).empty());
  CHECK(plan_error(m, ep_plan(8), 1, 1, 4).find("must divide `tp` x `cp` x `dp` = 4") !=
        std::string::npos);
  CHECK(plan_error(m, ep_plan(3), 1, 1, 6).find("must divide the 8 routed experts") !=
        std::string::npos);
  const MoePlan etp3 = ep_plan(1, 3);
  CHECK(plan_error(m, etp3, 3, 1, 1).find("expert FFN size 32") != std::string::npos);
  CHECK(plan_error(m, ep_plan(1), 2, 1, 1, false).find("`sequence_parallel`") != std::string::npos);
  CHECK(expert_tp(MoePlan{}, 4) == 4);  // etp defaults to tp, as in Megatron
}

TEST_CASE("moe plan: dispatcher names") {
  CHECK(to_string(TokenDispatcher::flex) == "flex");
  CHECK(parse_token_dispatcher("allgather") == TokenDispatcher::allgather);
  CHECK_FALSE(parse_token_dispatcher("a2a").has_value());
}
