#include <doctest/doctest.h>

#include "tools/sweep.hpp"

using namespace meshsim;

namespace {

TransformerModel tiny_model() {
  TransformerModel m;
  m.name = "tiny";
  m.layers = 4;
  m.hidden = 256;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn_hidden = 512;
  m.vocab = 1000;
  m.seq_len = 512;
  return m;
}

std::vector<StepPlan> tiny_plans() {
  std::vector<StepPlan> plans;
  for (int tp : {1, 2}) {
    for (int pp : {1, 2}) {
      StepPlan p;
      p.tp = tp;
      p.pp = pp;
      p.dp = 4 / (tp * pp);
      p.global_batch = 8;
      p.seq = 512;
      plans.push_back(p);
    }
  }
  return plans;
}

}  // namespace

TEST_CASE("sweep rows are the same for any number of jobs and any split of the plans") {
  const TransformerModel m = tiny_model();
  const HardwareProfile hw = load_hardware("h100-sxm");
  const auto plans = tiny_plans();
  const auto one = evaluate_plans(m, plans, hw, 1);
  const auto two = evaluate_plans(m, plans, hw, 2);
  CHECK(sweep_csv(one) == sweep_csv(two));
  // Two "ranks" with stride 2 cover the plans exactly once, in order.
  const auto even = evaluate_plans(m, plans, hw, 1, 0, 2);
  const auto odd = evaluate_plans(m, plans, hw, 1, 1, 2);
  REQUIRE(even.size() == 2);
  REQUIRE(odd.size() == 2);
  CHECK(even[0] == one[0]);
  CHECK(odd[0] == one[1]);
  CHECK(even[1] == one[2]);
  CHECK(odd[1] == one[3]);
  for (const auto& r : one) {
    CHECK(r.timed);
    CHECK_FALSE(r.oom);
    CHECK(r.gpus == 4);
    CHECK(r.step_time_s > 0);
    // tokens/s = global batch x seq / step time
    CHECK(r.tokens_per_s == doctest::Approx(8.0 * 512.0 / r.step_time_s));
    CHECK(r.mfu > 0);
    CHECK(r.mfu < 1);
  }
}

TEST_CASE("sweep: ranking puts the fastest first and leaves OOM rows out; CSV has the columns") {
  SweepRow a, b, c;
  a.timed = true;
  a.step_time_s = 2.0;
  b.timed = true;
  b.step_time_s = 1.0;
  c.oom = true;
  const auto r = ranked({a, b, c});
  REQUIRE(r.size() == 2);
  CHECK(r[0].step_time_s == 1.0);
  const std::string csv = sweep_csv({a, c});
  CHECK(
      csv.starts_with("tp,pp,cp,dp,vp,mbs,schedule,cp_variant,microbatches,step_time_s,"
                      "tokens_per_s,mfu,mem_gb,oom,"));
  CHECK(csv.find(",true,") != std::string::npos);  // c is OOM: no timing columns
}
