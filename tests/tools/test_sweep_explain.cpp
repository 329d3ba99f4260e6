#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "tools/sweep.hpp"
#include "tools/sweep_explain.hpp"

using namespace meshsim;

namespace {

// llama3-8b (32 layers, 32 heads, 8 KV heads) on 16 H100s, 2 nodes of 8.
PlanLists lists16() {
  PlanLists l;
  l.gpus = 16;
  l.gpus_per_node = 8;
  l.tp = {2, 4};
  l.pp = {1, 2};
  l.cp = {1};
  l.vp = {1};
  l.mbs = {1, 3};
  l.schedules = {PipelineSchedule::one_f_one_b};
  l.cp_variants = {RingVariant::zigzag};
  l.base.seq = 4096;
  l.base.global_batch = 32;
  return l;
}

std::string why_error(std::string_view text) {
  try {
    (void)parse_combination(text, lists16());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("sweep explain: rejections are counted per rule with a real example") {
  const TransformerModel m = *builtin_model("llama3-8b");
  const PlanSpace space = enumerate_plans(m, lists16());
  // mbs 3 never divides gbs 32 with dp = 16 / (tp x pp) in {2, 4, 8}: dp x 3 = 6, 12, 24 do not
  // divide 32, so all 2 (tp) x 2 (pp) combinations with mbs 3 break the rule, none other does.
  CHECK(space.rejected.at("gbs-dp-mbs") == 4);
  CHECK(space.rejected.size() == 1);
  std::ostringstream out;
  print_rejections(out, space);
  // The first is tp 2 pp 1: dp 8, 8 x 3 = 24.
  CHECK(out.str() ==
        "  rejected     4 [gbs-dp-mbs] e.g. tp2 pp1 cp1 vp1 mbs3 1f1b: --gbs 32 must be divisible "
        "by dp x --mbs = 24: every data-parallel rank runs gbs / (dp x mbs) whole "
        "microbatches\n");
  const auto j = rejections_json(space);
  CHECK(j["counts"]["gbs-dp-mbs"] == 4);
  CHECK(j["combinations"].size() == 4);
  CHECK(j["combinations"][0]["mbs"] == 3);
}

TEST_CASE("sweep explain: --why reads a plan as the table labels it") {
  const Combination c = parse_combination("tp4 pp2 dp2 mbs1", lists16());
  CHECK(c.tp == 4);
  CHECK(c.pp == 2);
  CHECK(c.mbs == 1);
  CHECK(c.cp == 1);  // the --cp list's only value
  CHECK(c.schedule == PipelineSchedule::one_f_one_b);
  CHECK(combination_label(parse_combination("tp2,pp1,mbs3", lists16())) ==
        "tp2 pp1 cp1 vp1 mbs3 1f1b");
  CHECK(why_error("pp2 mbs1") == "--why: name tp (the sweep's --tp list has 2 values)");
  CHECK(why_error("tp4 pp2 mbs1 fast").find("got 'fast'") != std::string::npos);
  // A value outside the sweep's lists is not one of its combinations.
  CHECK(why_error("tp8 pp2 mbs1") == "--why: 8 is not in the sweep's --tp list");
  CHECK(why_error("tp4 pp2 mbs1 zb-h1") == "--why: zb-h1 is not in the sweep's --schedule list");
}

TEST_CASE("sweep explain: searched sharding and recompute are labelled and read back") {
  PlanLists l = lists16();
  l.sharding = {ShardingChoice{1, false}, ShardingChoice{3, true}};
  l.recompute = {Recompute::selective, Recompute::full};
  const LabelAxes axes = label_axes(l, false);
  CHECK(axes.sharding);
  CHECK(axes.recompute);
  CHECK_FALSE(label_axes(lists16(), false).sharding);  // one value: the header names it
  const Combination c = parse_combination("tp4 pp2 mbs1 fsdp rc=full", l);
  CHECK(c.sharding == ShardingChoice{3, true});
  CHECK(c.recompute == Recompute::full);
  CHECK(combination_label(c, axes) == "tp4 pp2 cp1 vp1 mbs1 1f1b fsdp rc=full");
  const TransformerModel m = *builtin_model("llama3-8b");
  const CombinationOutcome o = check_combination(m, l, c);
  REQUIRE(o.plan);
  CHECK(plan_label(*o.plan, axes) == "tp4 pp2 cp1 dp2 vp1 mbs1 1f1b fsdp rc=full");
  CHECK(plan_label(*o.plan) == "tp4 pp2 cp1 dp2 vp1 mbs1 1f1b");
  auto error = [&](std::string_view text) {
    try {
      (void)parse_combination(text, l);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error("tp4 pp2 mbs1 rc=full") ==
        "--why: name the sharding (the sweep's --sharding list has 2 values)");
  CHECK(error("tp4 pp2 mbs1 zero2 rc=full") ==
        "--why: zero2 is not in the sweep's --sharding list");
  CHECK(error("tp4 pp2 mbs1 fsdp rc=none") ==
        "--why: rc=none is not in the sweep's --recompute list");
  // A searched precision is labelled and read back the same way.
  l.precision = {Precision::bf16, Precision::fp8_current};
  const Combination q = parse_combination("tp4 pp2 mbs1 zero1 rc=full fp8-current", l);
  CHECK(q.precision == Precision::fp8_current);
  CHECK(combination_label(q, label_axes(l, false)) ==
        "tp4 pp2 cp1 vp1 mbs1 1f1b zero1 rc=full fp8-current");
  CHECK(error("tp4 pp2 mbs1 zero1 rc=full") ==
        "--why: name the precision (the sweep's --precision list has 2 values)");
}

TEST_CASE("sweep explain: --why names expert parallelism as the MoE table labels it") {
  PlanLists l = lists16();
  l.ep = {1, 2, 4, 8};
  l.etp = {1, 2};
  const Combination c = parse_combination("tp2 pp2 mbs1 ep4 etp2", l);
  CHECK(c.ep == 4);
  CHECK(c.etp == 2);
  CHECK(combination_label(c) == "tp2 pp2 cp1 vp1 mbs1 ep4 etp2 1f1b");
  // Left out with several values: named, as for the other fields.
  try {
    (void)parse_combination("tp2 pp2 mbs1", l);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "--why: name ep (the sweep's --ep list has 4 values)");
  }
  // etp's default list {0} means etp = tp: naming etp = tp matches it.
  PlanLists dense_etp = lists16();
  dense_etp.ep = {2};
  CHECK(parse_combination("tp2 pp2 mbs1 etp2", dense_etp).etp == 0);
}

TEST_CASE("sweep explain: one plan's story") {
  const TransformerModel m = *builtin_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm");
  const PlanLists l = lists16();
  const std::string rejected = explain_combination(m, l, hw, parse_combination("tp2 pp1 mbs3", l));
  CHECK(rejected.find("tp2 pp1 cp1 vp1 mbs3 1f1b: rejected by rule [gbs-dp-mbs]: --gbs 32 must "
                      "be divisible by dp x --mbs = 24") == 0);
  // tp 4 pp 2: dp 2, 32 / (2 x 1) = 16 microbatches; the step is the sweep's row for that plan.
  const std::string valid = explain_combination(m, l, hw, parse_combination("tp4 pp2 mbs1", l));
  CHECK(valid.find("tp4 pp2 cp1 vp1 mbs1 1f1b: valid, plan tp4 pp2 cp1 dp2 vp1 mbs1 1f1b (16 "
                   "microbatches)") == 0);
  const CombinationOutcome o = check_combination(m, l, parse_combination("tp4 pp2 mbs1", l));
  REQUIRE(o.plan.has_value());
  const SweepRow row = evaluate_plan(m, *o.plan, hw);
  REQUIRE(row.timed);
  CHECK(valid.find(fmt::format("step time {:.6f} s", row.step_time_s)) != std::string::npos);
  CHECK(valid.find("fits") != std::string::npos);
}

TEST_CASE("sweep explain: the progress bar shows its ETA on a terminal only") {
  std::ostringstream tty, piped;
  const auto bar = progress_bar(tty, true);
  bar(0, 4);
  bar(4, 4);
  progress_bar(piped, false)(2, 4);
  CHECK(piped.str().empty());
  CHECK(tty.str().find("0/4 plans, 0:00 elapsed, ETA -:--") != std::string::npos);
  // Done: ETA 0:00 (no plans left), and the line ends.
  CHECK(tty.str().find("4/4 plans, 0:00 elapsed, ETA 0:00") != std::string::npos);
  CHECK(tty.str().back() == '\n');
}

TEST_CASE("sweep explain: --why on an MoE model reads out its MoE breakdown") {
  // mixtral-8x7b on the 16 GPUs, tp 2 pp 2 (dp 4), ep 8 etp 1.
  const TransformerModel m = *builtin_model("mixtral-8x7b");
  PlanLists l = lists16();
  l.tp = {2};
  l.pp = {2};
  l.mbs = {1};
  l.ep = {8};
  l.etp = {1};
  const Combination c = parse_combination("tp2 pp2 mbs1", l);
  const HardwareProfile hw = *builtin_hardware("h100-sxm");
  const std::string s = explain_combination(m, l, hw, c);
  const CombinationOutcome o = check_combination(m, l, c);
  REQUIRE(o.plan);
  const MoeBreakdown b = evaluate_plan(m, *o.plan, hw).moe_stats;
  CHECK(s.find(fmt::format("moe per rank: dispatch {:.6f} s and combine {:.6f} s", b.dispatch_s,
                           b.combine_s)) != std::string::npos);
  CHECK(s.find(fmt::format("exposed ep comm {:.6f} s", b.exposed_ep_comm_s)) != std::string::npos);
  CHECK(s.find("imbalance 1.00") != std::string::npos);  // uniform routing
}
