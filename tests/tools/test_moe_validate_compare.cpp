#include <doctest/doctest.h>

#include <chrono>

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

TEST_CASE("the runner's phases follow the simulated MoE layer's ops in order") {
  // ep 2 x etp 2 (every phase present in the step: all-to-alls and ETP collectives): the
  // builder's MoE ops on rank 0 (schedules/step_moe.cpp), collapsed to phases, must be the
  // phases the runner executes and times, in the same order. A one-rank run names the same
  // phases (its collectives are copies).
  MoeLayerConfig c;
  c.ep = 2;
  c.etp = 2;
  const std::vector<std::string> simulated = simulated_moe_phases(c, 8);
  MoeLayerConfig solo;
  solo.tokens = 64;
  const auto comm = make_solo_moe_comm();
  const MoeRankResult r =
      run_moe_layer(solo, 1, 0, *comm, MoeFault::none, std::chrono::steady_clock::now());
  std::vector<std::string> ran;
  for (const auto& p : r.phases) ran.push_back(p.name);
  CHECK(simulated == ran);
  CHECK(ran.size() == 18);
}

TEST_CASE("the prediction simulates the run's realised routing, not the configured one") {
  // ep 2, 8 experts (4 per EP rank), top-2, 8,192 tokens: 16,384 copies. The configured routing
  // is uniform; the run's router sent every copy to experts 0 and 1 (EP rank 0). The prediction
  // must equal the layer simulated with that table (routing = {8192, 8192, 0, ...}) and its expert
  // phase must be longer than the uniform one's: EP rank 0 computes all 16,384 copies instead of
  // 8,192 (sizes at which the expert GEMMs, not kernel launches, set the time).
  MoeLayerConfig c;
  c.ep = 2;
  c.tokens = 8192;
  c.hidden = 4096;
  c.ffn = 8192;
  MoeRankResult r;
  r.phases = {{"router", 0, 1000}, {"experts", 1000, 2000}};
  r.routed_per_expert = {4096, 4096, 0, 0, 0, 0, 0, 0};  // each rank: 4,096 tokens x 2 copies
  const HardwareProfile hw = *builtin_hardware("h100-sxm");
  const MoeLayerComparison skewed = compare_moe_layer(c, hw, {r, r});
  MoeLayerConfig table = c;
  table.routing = Routing{Routing::Kind::table, 0, {8192, 8192, 0, 0, 0, 0, 0, 0}, "table"};
  MoeRankResult no_counts = r;
  no_counts.routed_per_expert.clear();  // without counts the configured routing is simulated
  const MoeLayerComparison by_table = compare_moe_layer(table, hw, {no_counts, no_counts});
  const MoeLayerComparison uniform = compare_moe_layer(c, hw, {no_counts, no_counts});
  CHECK(skewed.predicted_s == by_table.predicted_s);
  REQUIRE(skewed.phases.size() == 2);
  CHECK(skewed.phases[1].predicted_s == by_table.phases[1].predicted_s);
  CHECK(skewed.phases[1].predicted_s > uniform.phases[1].predicted_s);
}
