#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/flow_plan.hpp"
#include "sim/flow_topology.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/network_analytical.hpp"
#include "tests/sim/spine_tier.hpp"

using namespace meshsim;

namespace {

using test::spine;  // tests/sim/spine_tier.hpp

// The names of the ports a unit flow from GPU a to GPU b crosses.
std::vector<std::string> ports_of(const Topology& topo, int a, int b) {
  std::vector<PortLoad> loads;
  topo.path(a, b, 1.0, loads);
  std::vector<std::string> names;
  for (const auto& l : loads) names.push_back(topo.names()[static_cast<std::size_t>(l.port)]);
  return names;
}

std::vector<int> range(int from, int to, int step = 1) {
  std::vector<int> v;
  for (int i = from; i < to; i += step) v.push_back(i);
  return v;
}

// One collective per group, all at once, each on its own stream; flow-level windows.
Timeline run_groups(CollectiveKind kind, const std::vector<std::vector<int>>& groups, int world,
                    const HardwareProfile& hw, const FlowOptions& options, std::int64_t bytes) {
  ProgramBuilder b(Mesh({{"dp", world}}, hw.gpus_per_node), true, "t");
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const StreamId s = b.stream("comm" + std::to_string(k));
    const GroupId g = b.group("g" + std::to_string(k), groups[k]);
    for (int r : groups[k]) {
      b.add(r, s, "coll", {}, CollectiveCall{kind, g, bytes, DType::bf16, 0, -1, -1});
    }
  }
  const Program p = std::move(b).finish();
  const CommPlan plan = validate_program(p);
  const FlowPlan fp = plan_flows(p, plan, hw.network, options);
  return simulate(p, plan, estimate_durations(p, plan, hw), {}, &fp);
}

double seconds_of(const WindowTiming& w) {
  return ns_to_seconds(w.end - w.start);
}

}  // namespace

TEST_CASE("leaves: rail r of every node of a group on the group's leaf r") {
  // 4 DGX-class nodes (8 GPUs, 8 NICs), leaves of 2 nodes, 2:1 spine: 2 groups x 8 rails = 16
  // leaves, each with a spine uplink and downlink of 2 x 48 / 2 = 48 GB/s, after the 64 x 2 NVLink
  // and 4 x 8 x 2 NIC ports.
  const HardwareProfile hw = load_hardware("h100-sxm");
  const Topology topo(Mesh({{"dp", 32}}, 8), hw.network, spine(2, 2.0));
  REQUIRE(topo.port_count() == 64 + 64 + 32);
  CHECK(topo.names()[128] == "leaf0 rail0 spine up");
  CHECK(topo.capacity()[128] == doctest::Approx(2 * hw.network.nic_bw / 2));
  CHECK(topo.leaf_of(1, 3) == 3);
  CHECK(topo.leaf_of(2, 3) == 8 + 3);
  // same rail, same group: one switch hop, no spine
  CHECK(ports_of(topo, 0, 8) == std::vector<std::string>{"node0 nic0 out", "node1 nic0 in"});
  // same rail, another group: up to the spine and down to the other group's leaf 0
  CHECK(ports_of(topo, 0, 16) == std::vector<std::string>{"node0 nic0 out", "node2 nic0 in",
                                                          "leaf0 rail0 spine up",
                                                          "leaf1 rail0 spine down"});
  // between rails in one group: the spine too (the reference architecture's "between rails")
  CHECK(ports_of(topo, 0, 9).size() == 4);
  CHECK(ports_of(topo, 0, 9)[3] == "leaf0 rail1 spine down");
  // inside a node: NVLink only
  CHECK(ports_of(topo, 0, 1) == std::vector<std::string>{"gpu0 nvlink out", "gpu1 nvlink in"});

  SUBCASE("single-rail: every NIC of a group on one leaf, only groups cross the spine") {
    const Topology single(Mesh({{"dp", 32}}, 8), hw.network, spine(2, 2.0, false));
    // 2 leaves of 2 nodes x 8 NICs: spine links of 16 x 48 / 2 GB/s
    REQUIRE(single.port_count() == 64 + 64 + 4);
    CHECK(single.names()[128] == "leaf0 spine up");
    CHECK(single.capacity()[128] == doctest::Approx(16 * hw.network.nic_bw / 2));
    CHECK(ports_of(single, 0, 9).size() == 2);   // between rails, one leaf
    CHECK(ports_of(single, 0, 16).size() == 4);  // between groups
  }
  SUBCASE("without spine oversubscription there is no spine tier") {
    const Topology flat(Mesh({{"dp", 32}}, 8), hw.network, spine(2, 1.0));
    CHECK(flat.port_count() == 128);
    CHECK_FALSE(flat.has_spine());
    CHECK(ports_of(flat, 0, 16).size() == 2);
  }
}

TEST_CASE("a ring crosses each leaf boundary once per channel: slower only when F > leaf size") {
  // All-reduce over GPU 0 of 4 nodes (one channel, rail 0). With leaves of L nodes the ring
  // 0 -> 1 -> 2 -> 3 -> 0 crosses each group boundary once, so each leaf's spine uplink carries one
  // unit flow at L x NIC / F: the channel runs at min(NIC, L x NIC / F), and the time is
  // lat + 2(n-1)/n x M / that (n = 4).
  const HardwareProfile hw = load_hardware("h100-sxm");
  const std::int64_t bytes = std::int64_t{1} << 30;
  const double lat = comm_latency(hw.network, LinkClass::network, 2 * 3);
  for (int leaf : {1, 2}) {
    for (double f : {1.0, 2.0, 4.0}) {
      CAPTURE(leaf);
      CAPTURE(f);
      const Timeline t =
          run_groups(CollectiveKind::all_reduce, {{0, 8, 16, 24}}, 32, hw, spine(leaf, f), bytes);
      const double rate = std::min(hw.network.nic_bw, leaf * hw.network.nic_bw / f);
      const double expect = lat + 2.0 * 3 / 4 * static_cast<double>(bytes) / rate;
      CHECK(seconds_of(t.collectives[0]) == doctest::Approx(expect).epsilon(0.01));
    }
  }
}

TEST_CASE("all-to-all across leaves: every remote pair crosses the spine") {
  // 16 ranks on 2 nodes, leaves of 1 node: GPU a sends 8 unit flows of M/16 through its NIC and,
  // as every remote peer is on another leaf, 8 through its leaf's spine uplink (its rail's leaf
  // holds only its NIC). At F = 2 that link has NIC / 2: the bandwidth term doubles; single-rail
  // leaves of 2 nodes hold both nodes, so nothing crosses the spine and the time is the 1:1 one.
  const HardwareProfile hw = load_hardware("h100-sxm");
  const std::int64_t bytes = std::int64_t{1} << 30;
  const double lat = comm_latency(hw.network, LinkClass::network, 1);
  const auto time = [&](const FlowOptions& o) {
    return seconds_of(
        run_groups(CollectiveKind::all_to_all, {range(0, 16)}, 16, hw, o, bytes).collectives[0]);
  };
  const double flat = time(FlowOptions{});
  CHECK(time(spine(1, 2.0)) == doctest::Approx(lat + 2 * (flat - lat)).epsilon(0.001));
  CHECK(time(spine(2, 4.0, false)) == doctest::Approx(flat).epsilon(1e-9));
}

TEST_CASE("GB200 NVL72: a 72-GPU NVLink domain has 72 rails, one NIC per GPU") {
  // gb200-nvl72: gpus_per_node 72 (the NVLink domain, meshsim's node), nics_per_node 72 (4
  // ConnectX-7 per compute tray x 18 trays). Two domains: 144 GPUs, 2 x 72 NVLink ports per GPU
  // direction pair, 2 x 72 NICs per direction.
  const HardwareProfile hw = load_hardware("gb200-nvl72");
  REQUIRE(hw.gpus_per_node == 72);
  REQUIRE(hw.network.nics_per_node == 72);
  const Topology topo(Mesh({{"dp", 144}}, 72), hw.network, FlowOptions{});
  CHECK(topo.port_count() == 144 * 2 + 2 * 72 * 2);
  CHECK(topo.rail_of(71) == 71);
  CHECK(topo.rail_of(72 + 5) == 5);
  CHECK(ports_of(topo, 5, 40) == std::vector<std::string>{"gpu5 nvlink out", "gpu40 nvlink in"});
  CHECK(ports_of(topo, 5, 77) == std::vector<std::string>{"node0 nic5 out", "node1 nic5 in"});

  // tp 72 x dp 2: the 72 DP all-reduces (GPU t of each domain) run at once on 72 distinct rails,
  // each in its analytical time lat + 2(n-1)/n x M / min(NVLink bus, 1 x NIC), n = 2.
  std::vector<std::vector<int>> groups;
  for (int t = 0; t < 72; ++t) groups.push_back({t, 72 + t});
  const std::int64_t bytes = std::int64_t{256} << 20;
  const Timeline t = run_groups(CollectiveKind::all_reduce, groups, 144, hw, FlowOptions{}, bytes);
  const double expect =
      comm_latency(hw.network, LinkClass::network, 2) +
      static_cast<double>(bytes) / std::min(hw.network.nvlink_bus_bw, hw.network.nic_bw);
  REQUIRE(t.collectives.size() == 72);
  for (const auto& w : t.collectives) {
    CHECK(seconds_of(w) == doctest::Approx(expect).epsilon(0.01));
  }
}

TEST_CASE("the tree all-reduce over a spine tier is refused, not guessed") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  const Topology topo(Mesh({{"dp", 32}}, 8), hw.network, spine(2, 2.0));
  CHECK_THROWS_AS(collective_gang(topo, hw.network, CollectiveKind::all_reduce, range(0, 32),
                                  1 << 20, 0, CollectiveAlgo::tree),
                  InputError);
}
