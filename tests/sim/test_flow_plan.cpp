#include <doctest/doctest.h>

#include <string>

#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/flow_plan.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/network_analytical.hpp"

using namespace meshsim;

namespace {

// K identical collectives on the same ranks, each on its own communicator and stream.
Program concurrent(CollectiveKind kind, const std::vector<int>& ranks, int world, int gpus_per_node,
                   std::int64_t bytes, int k, int shift = 0) {
  ProgramBuilder b(Mesh({{"dp", world}}, gpus_per_node), true, "t");
  for (int c = 0; c < k; ++c) {
    const StreamId s = b.stream("comm" + std::to_string(c));
    const GroupId g = b.group("c" + std::to_string(c), ranks);
    for (int r : ranks) {
      b.add(r, s, "coll", {}, CollectiveCall{kind, g, bytes, DType::bf16, shift, -1, -1});
    }
  }
  return std::move(b).finish();
}

Nanos run(const Program& p, const HardwareProfile& hw, bool flow, FlowOptions options = {}) {
  const CommPlan plan = validate_program(p);
  const Durations d = estimate_durations(p, plan, hw);
  if (!flow) return simulate(p, plan, d).makespan;
  const FlowPlan fp = plan_flows(p, plan, hw.network, options);
  return simulate(p, plan, d, {}, &fp).makespan;
}

std::vector<int> range(int from, int to) {
  std::vector<int> v;
  for (int i = from; i < to; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("uncontended, the flow model agrees with the analytical formulas within 1%") {
  HardwareProfile hw = load_hardware("h100-sxm");
  const std::int64_t gib = std::int64_t{1} << 30;
  struct Case {
    CollectiveKind kind;
    std::vector<int> ranks;
    int world;
  };
  const std::vector<Case> cases = {
      {CollectiveKind::all_reduce, range(0, 8), 8},    // NVLS inside a node
      {CollectiveKind::all_reduce, range(0, 16), 16},  // 2 nodes, 8 channels
      {CollectiveKind::all_gather, range(0, 8), 8},
      {CollectiveKind::reduce_scatter, range(0, 32), 32},
      {CollectiveKind::all_to_all, range(0, 8), 8},
      {CollectiveKind::all_to_all, range(0, 16), 16},
      {CollectiveKind::permute, range(0, 16), 16},
      {CollectiveKind::broadcast, range(0, 8), 8},
      {CollectiveKind::all_reduce, {0, 8, 16, 24}, 32},  // one GPU per node: 1 channel
  };
  for (const auto& c : cases) {
    CAPTURE(to_string(c.kind));
    CAPTURE(c.ranks.size());
    const Program p = concurrent(c.kind, c.ranks, c.world, 8, gib, 1, 1);
    const double analytical = static_cast<double>(run(p, hw, false));
    const double flow = static_cast<double>(run(p, hw, true));
    CHECK(flow == doctest::Approx(analytical).epsilon(0.01));
  }
  hw.network.nvls_bus_bw = 0;  // plain NVLink ring inside the node too
  const Program ar = concurrent(CollectiveKind::all_reduce, range(0, 8), 8, 8, gib, 1);
  CHECK(static_cast<double>(run(ar, hw, true)) ==
        doctest::Approx(static_cast<double>(run(ar, hw, false))).epsilon(0.01));
}

TEST_CASE("tree all-reduce: log-depth latency, 2M/B bandwidth, the flow model agrees") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  const std::int64_t bytes = std::int64_t{1} << 28;
  for (int world : {8, 64, 256}) {
    CAPTURE(world);
    ProgramBuilder b(Mesh({{"dp", world}}, 8), true, "t");
    const StreamId s = b.stream("comm");
    const GroupId g = b.group("dp", range(0, world));
    for (int r = 0; r < world; ++r) {
      b.add(r, s, "ar", {},
            CollectiveCall{CollectiveKind::all_reduce, g, bytes, DType::bf16, 0, -1, -1,
                           CollectiveAlgo::tree});
    }
    const Program p = std::move(b).finish();
    // nodes = world / 8, depth = ceil(log2 nodes), B = 370 GB/s (min(370, 8 x 48) across nodes):
    // 8.4 us + 2 (depth x 14 us + 7 x 3.4 us) + 2 M / B
    int depth = 0;
    while ((1 << depth) < world / 8) ++depth;
    const double expect =
        8.4e-6 + 2 * (depth * 14e-6 + 7 * 3.4e-6) + 2.0 * static_cast<double>(bytes) / 370e9;
    CHECK(ns_to_seconds(run(p, hw, false)) == doctest::Approx(expect).epsilon(1e-6));
    CHECK(ns_to_seconds(run(p, hw, true)) == doctest::Approx(expect).epsilon(0.01));
  }
}

TEST_CASE("two identical collectives sharing their ports take about twice as long") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  const std::int64_t bytes = std::int64_t{1} << 30;
  for (CollectiveKind kind : {CollectiveKind::all_reduce, CollectiveKind::all_gather}) {
    const int steps = kind == CollectiveKind::all_reduce ? 2 * 15 : 15;
    const double lat = comm_latency(hw.network, LinkClass::network, steps) * 1e9;
    const auto one =
        static_cast<double>(run(concurrent(kind, range(0, 16), 16, 8, bytes, 1), hw, true));
    const auto two =
        static_cast<double>(run(concurrent(kind, range(0, 16), 16, 8, bytes, 2), hw, true));
    // the bandwidth term doubles, the latency does not: two = lat + 2 (one - lat)
    CHECK(two == doctest::Approx(lat + 2 * (one - lat)).epsilon(0.001));
    CHECK(two / one > 1.9);
  }
}

TEST_CASE("TP inside a node and DP across nodes do not slow each other") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  const std::int64_t bytes = std::int64_t{256} << 20;
  // TP: all-reduce over GPUs 0-7 of node 0 (NVLink ports). DP: all-reduce over GPU 0 of each of
  // 4 nodes (rail-0 NICs). No port in common.
  ProgramBuilder b(Mesh({{"dp", 32}}, 8), true, "t");
  const StreamId tp_s = b.stream("tp_comm");
  const StreamId dp_s = b.stream("dp_comm");
  const GroupId tp = b.group("tp", range(0, 8));
  const GroupId dp = b.group("dp", {0, 8, 16, 24});
  for (int r = 0; r < 8; ++r) {
    b.add(r, tp_s, "tp ar", {}, CollectiveCall{CollectiveKind::all_reduce, tp, bytes, DType::bf16});
  }
  for (int r : {0, 8, 16, 24}) {
    b.add(r, dp_s, "dp ar", {}, CollectiveCall{CollectiveKind::all_reduce, dp, bytes, DType::bf16});
  }
  const Program both = std::move(b).finish();
  const CommPlan plan = validate_program(both);
  const FlowPlan fp = plan_flows(both, plan, hw.network, {});
  const Timeline t = simulate(both, plan, estimate_durations(both, plan, hw), {}, &fp);
  const Nanos tp_alone =
      run(concurrent(CollectiveKind::all_reduce, range(0, 8), 32, 8, bytes, 1), hw, true);
  const Nanos dp_alone =
      run(concurrent(CollectiveKind::all_reduce, {0, 8, 16, 24}, 32, 8, bytes, 1), hw, true);
  CHECK(t.collectives[0].end - t.collectives[0].start == tp_alone);
  CHECK(t.collectives[1].end - t.collectives[1].start == dp_alone);
}

TEST_CASE("busbw of a large all-reduce equals the profile's bus bandwidth") {
  HardwareProfile hw = load_hardware("h100-sxm");
  const std::int64_t bytes = std::int64_t{16} << 30;
  const Program p = concurrent(CollectiveKind::all_reduce, range(0, 64), 64, 8, bytes, 1);
  const double seconds = ns_to_seconds(run(p, hw, true));
  // busbw = (bytes / time) x 2(n-1)/n; across nodes B = min(370, 8 x 48) = 370 GB/s
  const double busbw =
      static_cast<double>(bytes) / seconds * busbw_factor(CollectiveKind::all_reduce, 64);
  CHECK(busbw == doctest::Approx(370e9).epsilon(0.02));
}

TEST_CASE("bytes in equal bytes out, per port pair") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  const Program p = concurrent(CollectiveKind::all_gather, range(0, 16), 16, 8, 1 << 24, 1);
  const CommPlan plan = validate_program(p);
  const FlowPlan fp = plan_flows(p, plan, hw.network, {});
  const Timeline t = simulate(p, plan, estimate_durations(p, plan, hw), {}, &fp);
  double out = 0, in = 0;
  for (std::size_t i = 0; i < fp.port_names.size(); ++i) {
    const auto& name = fp.port_names[i];
    if (name.ends_with(" out")) out += t.ports[i].bytes;
    if (name.ends_with(" in")) in += t.ports[i].bytes;
  }
  CHECK(out > 0);
  CHECK(out == doctest::Approx(in));
  // a ring all-gather moves (n-1)/n x M_total per rank in all: 15/16 x 16 MiB x 16 ranks, over
  // NVLink or NIC ports (each hop counted once on the way out)
  CHECK(out == doctest::Approx(15.0 / 16.0 * (1 << 24) * 16).epsilon(0.001));
}

TEST_CASE("an oversubscribed spine slows cross-node traffic") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  const Program p = concurrent(CollectiveKind::all_to_all, range(0, 32), 32, 8, 1 << 28, 1);
  const Nanos full = run(p, hw, true);
  const Nanos half = run(p, hw, true, FlowOptions{4.0});
  CHECK(half > full);
}
