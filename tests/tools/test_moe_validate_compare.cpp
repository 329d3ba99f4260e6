#include <doctest/doctest.h>

#include "sim/hardware_profile.hpp"
#include "tools/moe_validate_compare.hpp"

using namespace meshsim;

TEST_CASE("moe_phase_of_op maps the step builder's MoE op names to the measured phases") {
  CHECK(moe_phase_of_op("router", false) == "router");
  CHECK(moe_phase_of_op("router topk", false) == "router");
  CHECK(moe_phase_of_op("aux loss", false) == "router");
  CHECK(moe_phase_of_op("dispatch all-to-all", false) == "dispatch all-to-all");
  CHECK(moe_phase_of_op("expert 3 up", false) == "experts");
  CHECK(moe_phase_of_op("expert activation", false) == "experts");
  CHECK(moe_phase_of_op("expert 0 down wgrad", true) == "experts bwd");
  CHECK(moe_phase_of_op("router wgrad", true) == "router wgrad");
  CHECK(moe_phase_of_op("mlp up", false).empty());
  CHECK(moe_phase_of_op("attention", false).empty());
}

TEST_CASE("the simulated MoE layer has the measured phases (ep 2: an all-to-all dispatch)") {
  // Measured phases named as the runner names them, 1 ms each: the prediction must find the
  // simulator's router, dispatch all-to-all and expert ops for them (a name that drifts in
  // schedules/step_moe.cpp leaves its phase at 0 and fails here).
  MoeLayerConfig c;
  c.ep = 2;
  MoeRankResult r;
  std::int64_t t = 0;
  for (const char* name : {"router", "permute", "dispatch all-to-all", "experts",
                           "combine all-to-all", "unpermute", "experts bwd", "router dgrad"}) {
    r.phases.push_back({name, t, t + 1000000});
    t += 1000000;
  }
  const MoeLayerComparison cmp = compare_moe_layer(c, *builtin_hardware("h100-sxm"), {r, r});
  CHECK(cmp.measured_s == doctest::Approx(8e-3));
  CHECK(cmp.predicted_s > 0);
  REQUIRE(cmp.phases.size() == 8);
  for (const auto& p : cmp.phases) {
    INFO(p.phase);
    CHECK(p.predicted_s > 0);
    CHECK(p.measured_s == doctest::Approx(1e-3));
  }
}
