#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "schedules/model_catalog.hpp"
#include "schedules/step_plan.hpp"
#include "schedules/training_step.hpp"
#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/flow_plan.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/nccl_model.hpp"
#include "sim/network_analytical.hpp"
#include "sim/run.hpp"
#include "tests/case_sample.hpp"
#include "tests/sim/small_models.hpp"
#include "tests/sim/spine_tier.hpp"

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

// The ranks of group `t` of a node-filling partition: on each of `nodes` nodes of `gpus_per_node`
// GPUs, the local GPUs t, t + stride, t + 2 stride, ... (stride = gpus_per_node / width): the
// dp (or cp) group of tp index t in Megatron's mesh with tp = stride.
std::vector<int> strided_group(int t, int stride, int width, int nodes, int gpus_per_node) {
  std::vector<int> ranks;
  for (int node = 0; node < nodes; ++node) {
    for (int k = 0; k < width; ++k) ranks.push_back(node * gpus_per_node + t + k * stride);
  }
  return ranks;
}

// One collective on each of the `stride` strided groups at once, each on its own stream.
Program strided_rings(CollectiveKind kind, int stride, int width, int nodes, int gpus_per_node,
                      std::int64_t bytes) {
  ProgramBuilder b(Mesh({{"dp", nodes * gpus_per_node}}, gpus_per_node), true, "t");
  for (int t = 0; t < stride; ++t) {
    const StreamId s = b.stream("comm" + std::to_string(t));
    const std::vector<int> ranks = strided_group(t, stride, width, nodes, gpus_per_node);
    const GroupId g = b.group("dp" + std::to_string(t), ranks);
    for (int r : ranks) {
      b.add(r, s, "coll", {}, CollectiveCall{kind, g, bytes, DType::bf16, 0, -1, -1});
    }
  }
  return std::move(b).finish();
}

HardwareProfile node_profile(int gpus_per_node, int nics_per_node) {
  HardwareProfile hw = load_hardware("h100-sxm");
  hw.gpus_per_node = gpus_per_node;
  hw.network.nics_per_node = nics_per_node;
  return hw;
}

// Whether any port ever carried two gangs at once (a gang loads its ports from the end of its
// latency to its end).
bool ports_shared(const FlowPlan& fp, const Timeline& t) {
  std::vector<std::vector<std::pair<Nanos, int>>> events(fp.port_capacity.size());
  const auto add = [&](const GangFlow& g, const WindowTiming& w) {
    const Nanos from = w.start + g.latency;
    if (w.start < 0 || w.end <= from) return;
    for (const auto& u : g.usage) {
      events[static_cast<std::size_t>(u.port)].emplace_back(from, 1);
      events[static_cast<std::size_t>(u.port)].emplace_back(w.end, -1);
    }
  };
  for (std::size_t i = 0; i < fp.transfers.size(); ++i) add(fp.transfers[i], t.transfers[i]);
  for (std::size_t i = 0; i < fp.collectives.size(); ++i) {
    add(fp.collectives[i], t.collectives[i]);
  }
  for (auto& port : events) {
    std::sort(port.begin(), port.end());  // at one time an end (-1) frees the port first
    int active = 0;
    for (const auto& [time, change] : port) {
      active += change;
      if (active > 1) return true;
    }
  }
  return false;
}

using test::small_llama;  // tests/sim/small_models.hpp

struct GeneratedStep {
  StepPlan plan;
  HardwareProfile hw;
};

// Unfolded plans over tp {1,2,4,8} x pp {1,2,4} x cp {1,2} x dp {1,2,4} x vp {1,2} (interleaved
// when 2) on 2 to 32 GPUs, m = 2 pp microbatches, with node sizes taken in turn from `nodes`
// ({GPUs, NICs} per node).
std::vector<GeneratedStep> generated_steps(const std::vector<std::pair<int, int>>& nodes) {
  std::vector<GeneratedStep> out;
  for (int tp : {1, 2, 4, 8}) {
    for (int pp : {1, 2, 4}) {
      for (int cp : {1, 2}) {
        for (int dp : {1, 2, 4}) {
          for (int vp : {1, 2}) {
            const int world = tp * pp * cp * dp;
            if ((vp == 2 && pp == 1) || world < 2 || world > 32) continue;
            GeneratedStep g;
            g.plan.tp = tp;
            g.plan.pp = pp;
            g.plan.cp = cp;
            g.plan.dp = dp;
            g.plan.vp = vp;
            g.plan.schedule =
                vp == 2 ? PipelineSchedule::interleaved : PipelineSchedule::one_f_one_b;
            g.plan.global_batch = std::int64_t{dp} * 2 * pp;
            g.plan.fold_dp = false;
            g.plan.fold_tp = false;
            const auto& [gpus, nics] = nodes[out.size() % nodes.size()];
            g.hw = node_profile(gpus, nics);
            out.push_back(std::move(g));
          }
        }
      }
    }
  }
  return out;
}

struct StepTimes {
  Nanos analytical = 0;
  Nanos flow = 0;
  bool shared = false;  // some port carried two gangs at once in the flow run
};

StepTimes step_times(const GeneratedStep& g, const FlowOptions& options) {
  const TransformerModel m = small_llama();
  check_step_plan(m, g.plan);
  const Program p = build_training_step(m, g.plan, g.hw.gpus_per_node);
  StepTimes t;
  t.analytical = run_simulation(p, g.hw).metrics.makespan;
  const SimulationResult flow = run_simulation(p, g.hw, NetworkChoice{true, options});
  t.flow = flow.metrics.makespan;
  t.shared = ports_shared(*flow.flows, flow.timeline);
  return t;
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
  // The alpha-beta tree (NCCL's own tree figures are checked in test_nccl_model.cpp; here the
  // flow model must agree with them too).
  HardwareProfile hw = load_hardware("h100-sxm");
  hw.network.nccl_model = false;
  const HardwareProfile nccl = load_hardware("h100-sxm");
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
    CHECK(static_cast<double>(run(p, nccl, true)) ==
          doctest::Approx(static_cast<double>(run(p, nccl, false))).epsilon(0.01));
  }
}

TEST_CASE("two identical collectives sharing their ports take about twice as long") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  const std::int64_t bytes = std::int64_t{1} << 30;
  for (CollectiveKind kind : {CollectiveKind::all_reduce, CollectiveKind::all_gather}) {
    // NCCL's Simple latency (the protocol its model takes at 1 GiB): all-reduce
    // (8.4 + 26 x 3.4 + 4 x 14) x 1.4 us, all-gather 8.4 + 14 x 3.4 + 14 us.
    const double lat =
        nccl_latency(hw.network, NcclProtocol::simple, kind, GroupPlacement{16, 2, 8}) * 1e9;
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
  // NVLink or NIC ports (each hop counted once on the way out). At 16 MiB NCCL's model takes LL128
  // (44.6 us + 15/16 x 16 MiB / 340.4 GB/s = 90.8 us; Simple 70 + 42.5 us), which reaches 0.92 of
  // the ring's bandwidth: the flows carry 1 / 0.92 of the payload.
  CHECK(out == doctest::Approx(15.0 / 16.0 * (1 << 24) * 16 / 0.92).epsilon(0.001));
}

TEST_CASE("an oversubscribed spine slows cross-node traffic") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  const Program p = concurrent(CollectiveKind::all_to_all, range(0, 32), 32, 8, 1 << 28, 1);
  const Nanos full = run(p, hw, true);
  const Nanos half = run(p, hw, true, FlowOptions{4.0});
  CHECK(half > full);
}

TEST_CASE("rails: the DP rings of every TP rank run at once, each in its analytical time") {
  // One NIC per GPU (a DGX-class node): group t's members on a node are GPUs t + k x stride, whose
  // own rails (GPU mod NICs) differ from every other group's, so the `stride` rings share no NIC
  // and no NVLink port, and each takes the analytical time: lat + steps/n x M / B with
  // B = min(NVLink bus, width x NIC).
  const std::int64_t bytes = std::int64_t{256} << 20;
  int cases = 0;
  for (int gpus_per_node : {2, 4, 8}) {
    const HardwareProfile hw = node_profile(gpus_per_node, gpus_per_node);
    for (int nodes : {2, 3, 4}) {
      for (int width = 1; width <= gpus_per_node; width *= 2) {
        for (CollectiveKind kind : {CollectiveKind::all_reduce, CollectiveKind::all_gather,
                                    CollectiveKind::reduce_scatter}) {
          CAPTURE(gpus_per_node);
          CAPTURE(nodes);
          CAPTURE(width);
          CAPTURE(to_string(kind));
          const int stride = gpus_per_node / width;
          const Program all = strided_rings(kind, stride, width, nodes, gpus_per_node, bytes);
          const CommPlan plan = validate_program(all);
          const FlowPlan fp = plan_flows(all, plan, hw.network, {});
          const Timeline t = simulate(all, plan, estimate_durations(all, plan, hw), {}, &fp);
          const int n = width * nodes;
          const int steps = kind == CollectiveKind::all_reduce ? 2 * (n - 1) : n - 1;
          const double bus = std::min(hw.network.nvlink_bus_bw, width * hw.network.nic_bw);
          const double expect = comm_latency(hw.network, LinkClass::network, steps) +
                                steps / static_cast<double>(n) * static_cast<double>(bytes) / bus;
          CHECK(t.collectives.size() == static_cast<std::size_t>(stride));
          for (const auto& w : t.collectives) {
            CHECK(ns_to_seconds(w.end - w.start) == doctest::Approx(expect).epsilon(0.01));
          }
          ++cases;
        }
      }
    }
  }
  // node sizes 2, 4, 8 have 2, 3, 4 widths (powers of two up to the node): 9 x 3 nodes x 3 kinds
  CHECK(cases == 81);
}

TEST_CASE("rails: GPUs that share a NIC share its bandwidth") {
  // 8 GPUs and 4 NICs per node: GPU g uses NIC g mod 4, so the one-GPU-per-node rings of GPUs t
  // and t + 4 cross on the same NIC and each moves at half its rate. The bandwidth term of an
  // all-reduce over 4 nodes, 2(n-1)/n x M / NIC, doubles; the latency does not.
  const HardwareProfile hw = node_profile(8, 4);
  const std::int64_t bytes = std::int64_t{1} << 30;
  const int nodes = 4;
  const Program all = strided_rings(CollectiveKind::all_reduce, 8, 1, nodes, 8, bytes);
  const CommPlan plan = validate_program(all);
  const FlowPlan fp = plan_flows(all, plan, hw.network, {});
  const Timeline t = simulate(all, plan, estimate_durations(all, plan, hw), {}, &fp);
  const double lat = comm_latency(hw.network, LinkClass::network, 2 * (nodes - 1));
  const double bw_term = 2.0 * (nodes - 1) / nodes * static_cast<double>(bytes) / hw.network.nic_bw;
  CHECK(t.collectives.size() == 8);
  for (const auto& w : t.collectives) {
    CHECK(ns_to_seconds(w.end - w.start) == doctest::Approx(lat + 2 * bw_term).epsilon(0.01));
  }
}

TEST_CASE("oversubscribed uplinks: a 64-rank all-reduce's bandwidth term grows with F") {
  // 8 nodes of 8 GPUs; 8 ring channels, each leaving every node once: a node's uplink carries 8
  // unit flows at NICs x NIC / F = 8 x 48 / F GB/s, so each channel gets 48 / F GB/s and the ring
  // 8 x 48 / F (below the 370 GB/s NVLink bus from F = 2 on): time = lat + 2(n-1)/n x M x F /
  // (8 x 48 GB/s).
  const HardwareProfile hw = load_hardware("h100-sxm");
  const std::int64_t bytes = std::int64_t{1} << 30;
  const Program p = concurrent(CollectiveKind::all_reduce, range(0, 64), 64, 8, bytes, 1);
  const double lat = comm_latency(hw.network, LinkClass::network, 2 * 63);
  for (double f : {2.0, 4.0, 8.0}) {
    CAPTURE(f);
    const double expect =
        lat + 2.0 * 63 / 64 * static_cast<double>(bytes) * f / (8 * hw.network.nic_bw);
    CHECK(ns_to_seconds(run(p, hw, true, FlowOptions{f})) == doctest::Approx(expect).epsilon(0.01));
  }
}

TEST_CASE("generated step plans: flow and analytical agree within 1% where no port is shared") {
  // One NIC per GPU on nodes of 8, 4 and 2 GPUs. Without sharing every gang takes its analytical
  // time, so the whole step does too (within 1%: nanosecond rounding of each gang). With sharing
  // the flow model can only be slower (contention takes bandwidth away, never adds it).
  const auto steps = generated_steps({{8, 8}, {4, 4}, {2, 2}});
  int unshared = 0, rails_only_plans = 0, n = 0;
  for (const auto& g : steps) {
    // The rails-only plans below always run; the others as the build samples them.
    const bool rails_only = g.plan.tp == g.hw.gpus_per_node && g.plan.pp == 1 && g.plan.cp == 1;
    if (!rails_only && !test::simulated_case(n++)) continue;
    CAPTURE(g.plan.tp);
    CAPTURE(g.plan.pp);
    CAPTURE(g.plan.cp);
    CAPTURE(g.plan.dp);
    CAPTURE(g.plan.vp);
    CAPTURE(g.hw.gpus_per_node);
    const StepTimes t = step_times(g, FlowOptions{});
    const auto analytical = static_cast<double>(t.analytical);
    const auto flow = static_cast<double>(t.flow);
    // The DP ring of one GPU per node (tp fills the node, no pp, no cp) meets no other traffic:
    // TP stays on NVLink, each TP rank's DP ring on its own rail.
    if (rails_only) {
      ++rails_only_plans;
      CHECK_FALSE(t.shared);
    }
    if (!t.shared) {
      ++unshared;
      CHECK(flow == doctest::Approx(analytical).epsilon(0.01));
    } else {
      CHECK(flow >= analytical * (1 - 1e-4));  // up to each gang's nanosecond rounding
    }
  }
  // tp x pp x cp x dp x vp (vp 2 only with pp > 1) with 2 <= world <= 32
  CHECK(steps.size() == 92);
  // rails-only plans: tp2 dp1 on 2-GPU nodes, tp4 dp2 on 4-GPU nodes, tp8 dp4 on 8-GPU nodes
  CHECK(rails_only_plans == 3);
  CHECK(unshared >= rails_only_plans);
}

TEST_CASE("generated step plans: with oversubscribed uplinks flow is never faster") {
  const auto steps = generated_steps({{8, 8}, {4, 4}, {8, 4}});
  int n = 0;
  for (const auto& g : steps) {
    if (world_size(g.plan) <= g.hw.gpus_per_node) continue;  // one node: no uplink crossed
    if (!test::simulated_case(n++)) continue;
    CAPTURE(g.plan.tp);
    CAPTURE(g.plan.pp);
    CAPTURE(g.plan.cp);
    CAPTURE(g.plan.dp);
    CAPTURE(g.plan.vp);
    CAPTURE(g.hw.gpus_per_node);
    const StepTimes t = step_times(g, FlowOptions{4.0});
    // never faster, up to each gang's nanosecond rounding
    CHECK(static_cast<double>(t.flow) >= static_cast<double>(t.analytical) * (1 - 1e-4));
  }
}

TEST_CASE("generated step plans: with an oversubscribed spine flow is never faster") {
  // Rail-optimized leaves of 1 node at 4:1 (every inter-node hop crosses the spine) and single-rail
  // leaves of 2 nodes at 8:1, on 8-GPU and 4-GPU nodes with a NIC per GPU.
  const auto steps = generated_steps({{8, 8}, {4, 4}});
  for (const auto& [leaf_, f, rails] : {std::tuple{1, 4.0, true}, std::tuple{2, 8.0, false}}) {
    const int leaf = leaf_;
    const FlowOptions o = test::spine(leaf, f, rails);
    int n = 0;
    for (const auto& g : steps) {
      if (world_size(g.plan) <= g.hw.gpus_per_node) continue;  // one node: no spine crossed
      if (!test::simulated_case(n++)) continue;
      CAPTURE(g.plan.tp);
      CAPTURE(g.plan.pp);
      CAPTURE(g.plan.cp);
      CAPTURE(g.plan.dp);
      CAPTURE(g.plan.vp);
      CAPTURE(g.hw.gpus_per_node);
      CAPTURE(leaf);
      const StepTimes t = step_times(g, o);
      CHECK(static_cast<double>(t.flow) >= static_cast<double>(t.analytical) * (1 - 1e-4));
    }
  }
}

TEST_CASE("llama3-8b on 64 GPUs, tp 1 dp 64: a DP ring across small leaves is slower than 1:1") {
  // 8 nodes of 8 GPUs; the DP ring runs 8 channels, channel c crossing every node boundary on
  // rail c. With leaves of 1 node each crossing goes up the spine: at F = 2 a leaf's spine uplink
  // carries NIC / 2, so the DP all-reduce's bandwidth term about doubles and the step is slower.
  // With leaves of 2 nodes at 2:1 the crossing leaf's uplink carries 2 x NIC / 2 = one channel's
  // NIC rate: no slower than 1:1 (a ring crosses each leaf boundary once per channel).
  const TransformerModel model = *builtin_model("llama3-8b");
  StepPlan plan;
  plan.tp = 1;
  plan.dp = 64;
  plan.global_batch = 128;
  plan.fold_dp = false;
  plan.fold_tp = false;
  check_step_plan(model, plan);
  const HardwareProfile hw = load_hardware("h100-sxm");
  const Program p = build_training_step(model, plan, hw.gpus_per_node);
  const auto step = [&](int leaf, double f) {
    return run_simulation(p, hw, NetworkChoice{true, test::spine(leaf, f)}).metrics.makespan;
  };
  const Nanos flat = step(32, 1.0);
  CHECK(step(1, 2.0) > flat);
  CHECK(step(2, 2.0) == flat);
}
