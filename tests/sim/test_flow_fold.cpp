#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "schedules/step_plan.hpp"
#include "schedules/training_step.hpp"
#include "sim/flow_fold.hpp"
#include "sim/flow_plan.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/run.hpp"
#include "tests/case_sample.hpp"
#include "tests/sim/small_models.hpp"
#include "tests/sim/spine_tier.hpp"

using namespace meshsim;

namespace {

HardwareProfile node_profile(int gpus_per_node, int nics_per_node) {
  HardwareProfile hw = load_hardware("h100-sxm");
  hw.gpus_per_node = gpus_per_node;
  hw.network.nics_per_node = nics_per_node;
  return hw;
}

// Units of a gang on one port, 0 when it does not cross it.
double units_on(const GangFlow& g, PortId p) {
  for (const auto& u : g.usage) {
    if (u.port == p) return u.units;
  }
  return 0;
}

using test::small_llama;  // tests/sim/small_models.hpp

Nanos flow_step(const StepPlan& plan, const HardwareProfile& hw, const FlowOptions& options,
                bool fold) {
  StepPlan p = plan;
  p.fold_dp = fold;
  p.fold_tp = fold;
  const Program program = build_training_step(small_llama(), p, hw.gpus_per_node);
  return run_simulation(program, hw, NetworkChoice{true, options}).metrics.makespan;
}

using test::spine;  // tests/sim/spine_tier.hpp

StepPlan generated_plan(int tp, int pp, int cp, int dp) {
  StepPlan plan;
  plan.tp = tp;
  plan.pp = pp;
  plan.cp = cp;
  plan.dp = dp;
  plan.vp = pp == 2 ? 2 : 1;
  plan.schedule = pp == 2 ? PipelineSchedule::interleaved : PipelineSchedule::one_f_one_b;
  plan.global_batch = std::int64_t{dp} * 2 * pp;
  return plan;
}

}  // namespace

TEST_CASE("the quotient network: orbits of ports under TP and DP shifts") {
  // tp 8 x dp 4 on four 8-GPU nodes with 8 NICs each, uplinks oversubscribed: G = 8 x 4 = 32
  // shifts. Every GPU's NVLink out port lies in one orbit (32 ports, stabilizer 32 / 32 = 1), so
  // do the NVLink in ports and the NIC out and in ports (4 nodes x 8 rails = 32); the 4 uplinks
  // form one orbit (stabilizer 32 / 4 = 8: the 8 TP shifts keep a node), the 4 downlinks one.
  const Mesh mesh = make_megatron_mesh(8, 1, 4, 1, 8);
  const HardwareProfile hw = node_profile(8, 8);
  const Topology topo(mesh, hw.network, FlowOptions{4.0});
  const std::vector<int> dims{0, 2};  // tp, dp (cp has size 1)
  const auto fold = fold_ports(topo, mesh, dims);
  REQUIRE(fold.has_value());
  CHECK(fold->order == 32);
  REQUIRE(fold->rep.size() == 6);
  CHECK(fold->stabilizer == std::vector<double>{1, 1, 1, 1, 8, 8});

  SUBCASE("the DP ring of tp index 0 carries the rings of all 8 TP ranks on the uplinks") {
    // Ranks 0, 8, 16, 24 (one per node): one channel; per node one unit on rail 0 out and in and
    // one on the uplink and downlink. Its stabilizer is the 4 DP shifts. Folded: NIC orbit
    // 1 x (4 ports x 1 unit) / 4 = 1 unit (its own rail); uplink orbit 8 x (4 x 1) / 4 = 8 units
    // (the 8 TP ranks' rings cross each node's uplink).
    const std::vector<int> ring{0, 8, 16, 24};
    const GangFlow full = collective_gang(topo, hw.network, CollectiveKind::all_reduce, ring,
                                          std::int64_t{1} << 30, 0);
    CHECK(rank_set_stabilizer(mesh, dims, ring) == 4);
    const GangFlow folded = fold_gang(*fold, full, 4);
    CHECK(folded.work == full.work);
    CHECK(units_on(folded, 2) == 1);  // NIC out orbit
    CHECK(units_on(folded, 4) == 8);  // uplink orbit
    CHECK(units_on(folded, 5) == 8);  // downlink orbit
  }
  SUBCASE("a TP group's all-reduce keeps one unit per GPU port") {
    // Ranks 0-7: a closed NVLink ring, one unit out and in per GPU; stabilizer the 8 TP shifts;
    // folded: 1 x (8 x 1) / 8 = 1 unit on each NVLink orbit, nothing on NICs.
    std::vector<int> tp_group{0, 1, 2, 3, 4, 5, 6, 7};
    CHECK(rank_set_stabilizer(mesh, dims, tp_group) == 8);
    const HardwareProfile no_nvls = [&] {
      HardwareProfile h = hw;
      h.network.nvls_bus_bw = 0;
      return h;
    }();
    const GangFlow full = collective_gang(topo, no_nvls.network, CollectiveKind::all_reduce,
                                          tp_group, std::int64_t{1} << 28, 0);
    const GangFlow folded = fold_gang(*fold, full, 8);
    REQUIRE(folded.usage.size() == 2);
    CHECK(folded.usage[0].units == 1);
    CHECK(folded.usage[1].units == 1);
  }
}

TEST_CASE("shifts that do not map nodes onto nodes, or shared ports onto one port, do not fold") {
  const HardwareProfile hw = node_profile(8, 8);
  // tp 8 x dp 2 on 8-GPU nodes: the TP shift keeps each node, the DP shift swaps the two.
  CHECK(flow_folds_exactly(make_megatron_mesh(8, 1, 2, 1, 8), hw.network, FlowOptions{2.0},
                           {"tp", "dp"}));
  // tp 16: the TP shift maps GPU 7 (node 0) to GPU 8 (node 1) but GPU 0 to GPU 1 (node 0), so a
  // NVLink hop of the TP ring would become a NIC hop (and node 0's uplink two uplinks).
  CHECK_FALSE(flow_folds_exactly(make_megatron_mesh(16, 1, 2, 1, 8), hw.network, FlowOptions{1.0},
                                 {"tp", "dp"}));
  // tp 2 x dp 8: four DP replicas per node; the DP shift maps dp 3 (node 0) to dp 4 (node 1).
  CHECK_FALSE(
      flow_folds_exactly(make_megatron_mesh(2, 1, 8, 1, 8), hw.network, FlowOptions{1.0}, {"dp"}));
  // Folding TP alone there is exact: the TP shift swaps GPUs 2k and 2k + 1 of one node.
  CHECK(
      flow_folds_exactly(make_megatron_mesh(2, 1, 8, 1, 8), hw.network, FlowOptions{4.0}, {"tp"}));
}

TEST_CASE("folded and unfolded flow-level steps take the same time") {
  // Plans over tp {1, 2, 4, 8} x pp {1, 2} x cp {1, 2} x dp {1, 2, 4}, 2 to 32 GPUs, m = 2 pp,
  // interleaved (vp 2) when pp = 2, on nodes of {8 GPUs, 8 NICs}, {4, 4} and {8, 4} in turn, with
  // uplinks 1:1 and oversubscribed 4:1. The folded run is the quotient of the unfolded one
  // (sim/flow_fold.hpp), so both make spans agree; the tolerance is the nanosecond rounding of
  // each gang's completion, accumulated along the step (1e-6 relative is far below a gang).
  const std::vector<std::pair<int, int>> nodes{{8, 8}, {4, 4}, {8, 4}};
  int compared = 0, folding = 0;
  for (int tp : {1, 2, 4, 8}) {
    for (int pp : {1, 2}) {
      for (int cp : {1, 2}) {
        for (int dp : {1, 2, 4}) {
          const int world = tp * pp * cp * dp;
          if (world < 2 || world > 32) continue;
          const StepPlan plan = generated_plan(tp, pp, cp, dp);
          const auto& node = nodes[static_cast<std::size_t>(compared) % nodes.size()];
          const int gpus = node.first, nics = node.second;
          const HardwareProfile hw = node_profile(gpus, nics);
          for (double f : {1.0, 4.0}) {
            CAPTURE(tp);
            CAPTURE(pp);
            CAPTURE(cp);
            CAPTURE(dp);
            CAPTURE(gpus);
            CAPTURE(nics);
            CAPTURE(f);
            std::vector<std::string> dims{"dp"};
            if (folds_tp(plan, gpus)) dims.emplace_back("tp");
            const Mesh mesh = make_megatron_mesh(tp, cp, dp, pp, gpus);
            if (!flow_folds_exactly(mesh, hw.network, FlowOptions{f}, dims)) continue;
            if (dp > 1 || tp > 1) ++folding;
            if (!test::simulated_case(compared)) continue;
            const auto folded = static_cast<double>(flow_step(plan, hw, FlowOptions{f}, true));
            const auto unfolded = static_cast<double>(flow_step(plan, hw, FlowOptions{f}, false));
            CHECK(folded == doctest::Approx(unfolded).epsilon(1e-6));
          }
          ++compared;
        }
      }
    }
  }
  CHECK(compared == 42);  // tp x pp x cp x dp with 2 <= world <= 32
  // 39 plans have tp or dp > 1; 7 of them put DP replicas on one node that the DP shift moves to
  // the next node (flow_folds_exactly refuses them), so 32 fold, at both uplink ratios.
  CHECK(folding == 64);
}

TEST_CASE("leaf groups: DP shifts fold only when they keep every leaf group whole") {
  const HardwareProfile hw = node_profile(8, 8);
  // tp 8 x dp 4 (one node per replica), leaves of 4 nodes: the DP shift cycles nodes 0-3 inside
  // the one group, so every leaf's GPUs map onto one leaf.
  CHECK(flow_folds_exactly(make_megatron_mesh(8, 1, 4, 1, 8), hw.network, spine(4, 4.0),
                           {"tp", "dp"}));
  // tp 8 x dp 4 x pp 2, leaves of 4: each pipeline stage's 4 nodes are one group; still exact.
  CHECK(flow_folds_exactly(make_megatron_mesh(8, 1, 4, 2, 8), hw.network, spine(4, 4.0),
                           {"tp", "dp"}));
  // leaves of 2: the DP shift maps node 1 (group 0) to node 2 (group 1) but node 0 to node 1
  // (group 0): GPUs under one leaf would land under two, so the run builds every rank.
  CHECK_FALSE(flow_folds_exactly(make_megatron_mesh(8, 1, 4, 1, 8), hw.network, spine(2, 4.0),
                                 {"tp", "dp"}));
  // leaves of 1 node: the DP shift maps leaves onto leaves one to one.
  CHECK(flow_folds_exactly(make_megatron_mesh(8, 1, 4, 1, 8), hw.network, spine(1, 4.0),
                           {"tp", "dp"}));
}

TEST_CASE("with a spine tier, folded and unfolded flow-level steps take the same time") {
  // The generated plans of the test above (tp {1,2,4,8} x pp {1,2} x cp {1,2} x dp {1,2,4}, 2 to
  // 32 GPUs) on 8-GPU, 8-NIC nodes under three spine tiers: rail-optimized leaves of 1 node at 4:1
  // and of 2 nodes at 2:1, single-rail leaves of 1 node at 4:1. Where the shifts keep leaf groups
  // whole the folded run is the quotient of the unfolded one (same tolerance as above); where
  // they do not, flow_folds_exactly refuses and meshsim step builds every rank.
  const HardwareProfile hw = node_profile(8, 8);
  const std::vector<FlowOptions> tiers{spine(1, 4.0), spine(2, 2.0), spine(1, 4.0, false)};
  int folding = 0, refused = 0;
  for (int tp : {1, 2, 4, 8}) {
    for (int pp : {1, 2}) {
      for (int cp : {1, 2}) {
        for (int dp : {2, 4}) {
          const int world = tp * pp * cp * dp;
          if (world > 32) continue;
          const StepPlan plan = generated_plan(tp, pp, cp, dp);
          std::vector<std::string> dims{"dp"};
          if (folds_tp(plan, 8)) dims.emplace_back("tp");
          const Mesh mesh = make_megatron_mesh(tp, cp, dp, pp, 8);
          for (const auto& o : tiers) {
            CAPTURE(tp);
            CAPTURE(pp);
            CAPTURE(cp);
            CAPTURE(dp);
            CAPTURE(o.leaf_nodes);
            CAPTURE(o.rail_optimized);
            if (!flow_folds_exactly(mesh, hw.network, o, dims)) {
              ++refused;
              continue;
            }
            ++folding;
            if (!test::simulated_case(folding)) continue;
            const auto folded = static_cast<double>(flow_step(plan, hw, o, true));
            const auto unfolded = static_cast<double>(flow_step(plan, hw, o, false));
            CHECK(folded == doctest::Approx(unfolded).epsilon(1e-6));
          }
        }
      }
    }
  }
  CHECK(folding > 0);
  CHECK(refused > 0);  // e.g. tp 8 x dp 4 on leaves of 2 nodes (the test above)
}
