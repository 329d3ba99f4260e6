#include <doctest/doctest.h>

#include "schedules/plan_space.hpp"

using namespace meshsim;

namespace {

PlanLists lists_for(int gpus) {
  PlanLists l;
  l.gpus = gpus;
  l.gpus_per_node = 8;
  l.tp = {1, 2, 4, 8, 16};
  l.pp = {1, 2, 4};
  l.cp = {1, 2};
  l.vp = {1, 2};
  l.mbs = {1};
  l.schedules = {PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved};
  l.cp_variants = {RingVariant::zigzag};
  l.base.seq = 4096;
  l.base.global_batch = 64;
  return l;
}

// 16 GPUs as tp 2 x dp 8 only, for the axes beside the mesh.
PlanLists one_mesh_lists() {
  PlanLists l = lists_for(16);
  l.tp = {2};
  l.pp = {1};
  l.cp = {1};
  l.vp = {1};
  l.schedules = {PipelineSchedule::one_f_one_b};
  return l;
}

}  // namespace

TEST_CASE("plan space: every combination is counted once, as a plan or under one rule") {
  const TransformerModel m = *builtin_model("llama3-8b");  // 32 layers, 32 heads, 8 kv heads
  const PlanSpace s = enumerate_plans(m, lists_for(16));
  CHECK(s.combinations == 5 * 3 * 2 * 2 * 1 * 2 * 1);  // the lists' product: 120
  std::int64_t rejected = 0;
  for (const auto& [rule, n] : s.rejected) rejected += n;
  CHECK(static_cast<std::int64_t>(s.plans.size()) + rejected == s.combinations);
  // tp 16 exceeds the 8 GPUs of a node; it divides 16 GPUs only with pp 1 and cp 1 (rule 1 comes
  // first): 1 (pp) x 1 (cp) x 2 (vp) x 1 (mbs) x 2 (schedules) x 1 (variant) = 4 combinations.
  CHECK(s.rejected.at("tp-within-node") == 4);
  CHECK(s.rejections.size() == static_cast<std::size_t>(rejected));
  for (const StepPlan& p : s.plans) {
    CHECK(p.tp * p.pp * p.cp * p.dp == 16);
    CHECK(p.tp <= 8);
    if (p.pp == 1) {
      CHECK(p.schedule == PipelineSchedule::one_f_one_b);
      CHECK(p.vp == 1);
    }
    if (p.vp > 1) CHECK(p.schedule == PipelineSchedule::interleaved);
  }
  // Deterministic order: the same lists give the same plans.
  const PlanSpace again = enumerate_plans(m, lists_for(16));
  REQUIRE(again.plans.size() == s.plans.size());
  for (std::size_t i = 0; i < s.plans.size(); ++i) {
    CHECK(again.plans[i].tp == s.plans[i].tp);
    CHECK(again.plans[i].pp == s.plans[i].pp);
    CHECK(again.plans[i].schedule == s.plans[i].schedule);
  }
}

TEST_CASE("plan space: a GPU count the mesh cannot divide leaves only the rule") {
  const TransformerModel m = *builtin_model("llama3-8b");
  PlanLists l = lists_for(12);
  l.tp = {8};
  l.pp = {1};
  l.cp = {1};
  const PlanSpace s = enumerate_plans(m, l);
  CHECK(s.plans.empty());
  // 8 does not divide 12: every one of the 1 x 1 x 1 x 2 x 1 x 2 x 1 = 4 combinations.
  CHECK(s.rejected.at("mesh-divides-gpus") == 4);
  REQUIRE(s.rejections.size() == 4);
  CHECK(s.rejections[0].reason == "tp x pp x cp = 8 x 1 x 1 = 8 does not divide the 12 GPUs");
}

TEST_CASE("plan space: every rejection says its rule and its numbers") {
  const TransformerModel m = *builtin_model("llama3-8b");  // 32 layers, 32 heads, 8 kv heads
  PlanLists l = lists_for(16);
  l.tp = {2};
  l.pp = {2};
  l.cp = {1};
  l.vp = {1};
  l.mbs = {3};  // gbs 64 over dp 4 x mbs 3 = 12: not whole microbatches
  l.schedules = {PipelineSchedule::one_f_one_b};
  const PlanSpace s = enumerate_plans(m, l);
  REQUIRE(s.rejections.size() == 1);
  const Rejection& r = s.rejections[0];
  CHECK(r.rule == "gbs-dp-mbs");
  CHECK(r.reason.find("`gbs` 64 must be divisible by `dp` x `mbs` = 12") == 0);
  CHECK(s.rejected.at("gbs-dp-mbs") == 1);
  // The same combination checked alone gives the same rejection; a valid one its plan (dp 16 /
  // (2 x 2) = 4).
  CHECK(check_combination(m, l, r.combination).rejection.reason == r.reason);
  Combination ok = r.combination;
  ok.mbs = 1;
  const CombinationOutcome o = check_combination(m, l, ok);
  REQUIRE(o.plan.has_value());
  CHECK(o.plan->dp == 4);
  // Rules 3: the pipeline-less plan is listed once, as the first schedule.
  l.pp = {1};
  l.schedules = {PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved};
  l.mbs = {1};
  const PlanSpace single = enumerate_plans(m, l);
  REQUIRE(single.rejections.size() == 1);
  CHECK(single.rejections[0].rule == "pp1-one-plan");
  CHECK(single.rejections[0].reason ==
        "pp 1 runs no pipeline schedule: interleaved vp 1 is the plan listed as 1f1b vp 1");
}

TEST_CASE("plan space: the V schedules are plans (two chunks per rank, vp 1 in the plan)") {
  const TransformerModel m = *builtin_model("llama3-8b");
  PlanLists l = lists_for(16);
  l.tp = {8};
  l.pp = {2};
  l.cp = {1};
  l.vp = {1};
  l.schedules = {PipelineSchedule::zb_v, PipelineSchedule::dualpipev};
  // dp 1, gbs 64: 64 microbatches >= 2 pp for DualPipeV; 32 layers over 2 ranks x 2 chunks.
  const PlanSpace s = enumerate_plans(m, l);
  CHECK(s.rejections.empty());
  REQUIRE(s.plans.size() == 2);
  CHECK(s.plans[0].schedule == PipelineSchedule::zb_v);
  CHECK(s.plans[0].vp == 1);
}

TEST_CASE("plan space: rule ids from a message's fields, else its first words") {
  CHECK(rule_id("`seq` 100 must be divisible by 2 x `cp` = 4 with `cp_variant` zigzag") ==
        "seq-cp-cp-variant");
  CHECK(
      rule_id("`chunks` must be at least 2 for `schedule` interleaved (that is `schedule` 1f1b)") ==
      "chunks-schedule");
  CHECK(rule_id("the step would have about 900 million ops") == "the-step-would-have");
  CHECK(rule_id("") == "");
}

TEST_CASE("plan space: ep and etp of an MoE model fold onto tp x cp x dp") {
  // mixtral-8x7b (8 experts, expert FFN 14336) on 16 GPUs, pp 1, cp 1: tp 1 or 2, dp 16 / tp.
  const TransformerModel m = *builtin_model("mixtral-8x7b");
  PlanLists l = lists_for(16);
  l.tp = {1, 2};
  l.pp = {1};
  l.cp = {1};
  l.vp = {1};
  l.schedules = {PipelineSchedule::one_f_one_b};
  l.ep = {1, 2, 4, 8, 16};
  l.etp = {1, 2};
  const PlanSpace s = enumerate_plans(m, l);
  CHECK(s.combinations == 2 * 5 * 2);
  // ep x etp must divide tp x dp = 16 (all but ep 16 x etp 2) and ep the 8 experts (not 16):
  // ep 1, 2, 4, 8 with etp 1 or 2, for tp 1 and 2: 16 plans.
  CHECK(s.plans.size() == 16);
  for (const StepPlan& p : s.plans) CHECK(p.moe.ep <= 8);
  // A dense model takes only ep 1.
  const PlanSpace dense = enumerate_plans(*builtin_model("llama3-8b"), l);
  for (const StepPlan& p : dense.plans) CHECK(p.moe.ep == 1);
}

TEST_CASE("plan space: recompute and sharding are axes, turning fastest, set on each plan") {
  const TransformerModel m = *builtin_model("llama3-8b");
  PlanLists l = one_mesh_lists();
  l.recompute = {Recompute::selective, Recompute::full};
  l.sharding = {ShardingChoice{0, false}, ShardingChoice{1, false}, ShardingChoice{3, true}};
  const PlanSpace s = enumerate_plans(m, l);
  CHECK(s.combinations == 2 * 3);
  REQUIRE(s.plans.size() == 6);
  // sharding innermost: none, zero1, fsdp for selective, then the same for full
  CHECK(s.plans[0].recompute == Recompute::selective);
  CHECK(s.plans[0].sharding.zero == 0);
  CHECK_FALSE(s.plans[0].distributed_optimizer);
  CHECK(s.plans[1].sharding.zero == 1);
  CHECK(s.plans[1].distributed_optimizer);  // ZeRO-1 is Megatron's distributed optimizer
  CHECK(s.plans[2].sharding.zero == 3);
  CHECK(s.plans[2].sharding.fsdp);
  CHECK(s.plans[3].recompute == Recompute::full);
  CHECK(s.plans[3].sharding.zero == 0);
}

TEST_CASE("plan space: empty recompute and sharding lists take the base plan's") {
  const TransformerModel m = *builtin_model("llama3-8b");
  PlanLists l = lists_for(16);
  l.base.recompute = Recompute::full;
  l.base.distributed_optimizer = true;  // without a ZeRO stage set: ZeRO-1
  CHECK(recompute_list(l) == std::vector<Recompute>{Recompute::full});
  CHECK(sharding_list(l) == std::vector<ShardingChoice>{ShardingChoice{1, false}});
  const PlanSpace s = enumerate_plans(m, l);
  REQUIRE_FALSE(s.plans.empty());
  CHECK(s.plans.front().recompute == Recompute::full);
  CHECK(s.plans.front().distributed_optimizer);
}

TEST_CASE("plan space: each plan's loss follows its recompute unless one is given") {
  // selective-op is torchtitan's policy, so its plans compute torchtitan's loss (torch-fp32);
  // the others Megatron-LM's (vocab-parallel). A loss given for the sweep holds for every plan.
  const TransformerModel m = *builtin_model("llama3-8b");
  PlanLists l = one_mesh_lists();
  l.recompute = {Recompute::selective, Recompute::selective_op};
  PlanSpace s = enumerate_plans(m, l);
  REQUIRE(s.plans.size() == 2);
  CHECK(s.plans[0].cross_entropy == CrossEntropy::vocab_parallel);
  CHECK(s.plans[1].cross_entropy == CrossEntropy::torch_fp32);
  l.cross_entropy = CrossEntropy::vocab_parallel;
  s = enumerate_plans(m, l);
  REQUIRE(s.plans.size() == 2);
  CHECK(s.plans[1].cross_entropy == CrossEntropy::vocab_parallel);
}

TEST_CASE("sharding choice names") {
  for (const char* name : {"none", "zero1", "zero2", "zero3", "fsdp"}) {
    const auto c = parse_sharding_choice(name);
    REQUIRE(c);
    CHECK(to_string(*c) == name);
  }
  CHECK(parse_sharding_choice("fsdp")->zero == 3);
  CHECK_FALSE(parse_sharding_choice("zero4"));
  CHECK_FALSE(parse_sharding_choice("hsdp"));
}

TEST_CASE("plan space: precision is the innermost axis") {
  const TransformerModel m = *builtin_model("llama3-8b");
  PlanLists l = one_mesh_lists();
  l.sharding = {ShardingChoice{1, false}, ShardingChoice{3, true}};
  l.precision = {Precision::bf16, Precision::fp8_delayed};
  const PlanSpace s = enumerate_plans(m, l);
  REQUIRE(s.plans.size() == 4);
  CHECK(s.plans[0].precision == Precision::bf16);
  CHECK(s.plans[1].precision == Precision::fp8_delayed);
  CHECK(s.plans[1].sharding.zero == 1);
  CHECK(s.plans[2].sharding.fsdp);
  CHECK(s.plans[2].precision == Precision::bf16);
  l.precision.clear();
  l.base.precision = Precision::fp8_current;
  CHECK(precision_list(l) == std::vector<Precision>{Precision::fp8_current});
}
