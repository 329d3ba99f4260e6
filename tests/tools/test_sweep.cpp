#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "schedules/plan_space.hpp"
#include "sim/hardware_profile.hpp"
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
      csv.starts_with("tp,pp,cp,dp,vp,mbs,schedule,cp_variant,recompute,sharding,precision,"
                      "microbatches,step_time_s,tokens_per_s,mfu,mem_gb,oom,"));
  CHECK(csv.find(",true,") != std::string::npos);  // c is OOM: no timing columns
}

TEST_CASE("sweep: plans of different sizes, started largest first, give rows in plan order") {
  // 1 to 8 microbatches (gbs 4 to 32 over dp 4): sizes differ, so the order they start in
  // (largest first, within 1.25 x the largest) is not the plan order; rows, progress counts and
  // files are the same for any number of jobs.
  const TransformerModel m = tiny_model();
  const HardwareProfile hw = load_hardware("h100-sxm");
  std::vector<StepPlan> plans;
  for (std::int64_t gbs : {4, 32, 8, 16, 12, 28}) {
    StepPlan p;
    p.dp = 4;
    p.global_batch = gbs;
    p.seq = 512;
    plans.push_back(p);
  }
  const auto one = evaluate_plans(m, plans, hw, 1);
  REQUIRE(one.size() == plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) CHECK(one[i].plan == plans[i]);
  std::size_t calls = 0;
  const auto three = evaluate_plans(m, plans, hw, 3, 0, 1, [&](std::size_t done, std::size_t n) {
    CHECK(n == plans.size());
    CHECK(done == ++calls);
  });
  CHECK(calls == plans.size());
  CHECK(sweep_csv(one) == sweep_csv(three));
  CHECK(sweep_csv(one) == sweep_csv(evaluate_plans(m, plans, hw, 2)));
}

TEST_CASE("sweep defaults: the lists and the plan space of `meshsim sweep` without flags") {
  const PlanLists d = default_plan_lists(8);
  CHECK(d.gpus == kSweepDefaultGpus);
  CHECK(d.gpus == 1024);
  CHECK(d.tp == std::vector<int>{1, 2, 4, 8});
  CHECK(d.pp == std::vector<int>{1, 2, 4, 8, 16});
  CHECK(d.cp == std::vector<int>{1, 2, 4});
  CHECK(d.vp == std::vector<int>{1, 2});
  CHECK(d.mbs == std::vector<std::int64_t>{1, 2});
  CHECK(d.schedules == std::vector<PipelineSchedule>{PipelineSchedule::one_f_one_b,
                                                     PipelineSchedule::interleaved,
                                                     PipelineSchedule::zb_h1});
  CHECK(d.cp_variants == std::vector<RingVariant>{RingVariant::zigzag});
  CHECK(d.base.seq == 8192);
  CHECK(d.base.global_batch == 512);
  CHECK(d.base.recompute == Recompute::selective);
  CHECK(d.base.sequence_parallel);
  CHECK_FALSE(d.base.distributed_optimizer);
  const PlanSpace space = enumerate_plans(load_model(kSweepDefaultModel), d);
  // 4 tp x 5 pp x 3 cp x 2 vp x 2 mbs x 3 schedules x 1 variant
  CHECK(space.combinations == 4 * 5 * 3 * 2 * 2 * 3);
  // 720 less those the rules reject: 240 vp > 1 without interleaving, 72 pp = 1 (one plan kept),
  // 95 interleaved with one chunk, 24 uneven layer splits, 11 interleaving groups, 8 gbs by dp x
  // mbs: 720 - 450 = 270.
  CHECK(space.plans.size() == 270);
}

TEST_CASE("sweep: an MoE model's rows carry its MoE breakdown as columns") {
  // tiny_model with 8 experts of f_e 256, top 2, uniform routing, alltoall, ep 4 on 4 GPUs.
  TransformerModel m = tiny_model();
  MoeBlock b;
  b.experts = 8;
  b.top_k = 2;
  b.expert_ffn = 256;
  m.moe = b;
  StepPlan p;
  p.dp = 4;
  p.moe.ep = 4;
  p.global_batch = 8;
  p.seq = 512;
  const HardwareProfile hw = *builtin_hardware("h100-sxm");
  const SweepRow r = evaluate_plan(m, p, hw);
  REQUIRE(r.timed);
  REQUIRE(r.moe);
  const MoeBreakdown& s = r.moe_stats;
  // Uniform routing: every EP rank receives T·k/ep copies, imbalance exactly 1.
  CHECK(s.imbalance == 1.0);
  // Dispatch (forward dispatch + combine's gradient) and combine (forward combine + dispatch's
  // gradient) move the same T·k·h·e bytes over the same group, as many times each.
  CHECK(s.dispatch_s > 0);
  CHECK(s.dispatch_s == doctest::Approx(s.combine_s).epsilon(1e-9));
  // Exposed EP comm is a part of the EP comm.
  CHECK(s.exposed_ep_comm_s <= s.dispatch_s + s.combine_s + 1e-12);
  CHECK(s.expert_compute_s > 0);
  // CSV: five columns after oom, in the order of the header.
  const std::string csv = sweep_csv({r});
  CHECK(csv.find(",mem_gb,oom,dispatch_s,combine_s,expert_compute_s,exposed_ep_comm_s,imbalance,"
                 "critical_path\n") != std::string::npos);
  CHECK(csv.find(fmt::format(",false,{:.9g},{:.9g},{:.9g},{:.9g},{:.6f},", s.dispatch_s,
                             s.combine_s, s.expert_compute_s, s.exposed_ep_comm_s, s.imbalance)) !=
        std::string::npos);
  // JSON: the same five fields; the MPI hand-over keeps every number.
  const auto j = sweep_row_json(r);
  CHECK(j["dispatch_s"] == s.dispatch_s);
  CHECK(j["exposed_ep_comm_s"] == s.exposed_ep_comm_s);
  CHECK(j["imbalance"] == 1.0);
  CHECK(moe_stats_from_json(moe_stats_json(s)) == s);
  // A dense model's rows keep their columns.
  CHECK(sweep_csv({evaluate_plan(tiny_model(), tiny_plans().front(), hw)}).find("dispatch_s") ==
        std::string::npos);
}
