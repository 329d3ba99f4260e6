#include "sim/collective_bandwidth.hpp"

#include <doctest/doctest.h>

#include <string>

#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/nccl_model.hpp"
#include "sim/network_analytical.hpp"

using namespace meshsim;

namespace {

// K identical all-reduces of `bytes` over `ranks`, each on its own "dp" group and stream.
Program all_reduces(const std::vector<int>& ranks, int world, std::int64_t bytes, int k) {
  ProgramBuilder b(Mesh({{"dp", world}}, 8), true, "t");
  for (int c = 0; c < k; ++c) {
    const StreamId s = b.stream("comm" + std::to_string(c));
    const GroupId g = b.group("dp", ranks);
    for (int r : ranks) {
      b.add(r, s, "ar", {}, CollectiveCall{CollectiveKind::all_reduce, g, bytes, DType::bf16});
    }
  }
  return std::move(b).finish();
}

std::vector<CollectiveBandwidth> measure(const Program& p, double oversubscription) {
  const HardwareProfile hw = load_hardware("h100-sxm");
  const CommPlan plan = validate_program(p);
  const FlowPlan fp = plan_flows(p, plan, hw.network, FlowOptions{oversubscription});
  const Timeline t = simulate(p, plan, estimate_durations(p, plan, hw), {}, &fp);
  return collective_bandwidth(p, plan, fp, t);
}

std::vector<int> first(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

const double kBytes = static_cast<double>(std::int64_t{1} << 30);

// nccl-tests' busbw of a 1 GiB all-reduce over n ranks on `nodes` nodes taking
// lat + 2(n-1)/n x M / B, with lat NCCL's Simple-protocol latency (the protocol NCCL's model
// takes at 1 GiB; sim/nccl_model.hpp, checked against NCCL's figures in test_nccl_model.cpp).
double ring_busbw(int n, int nodes, double bus_bw, NcclProtocol p = NcclProtocol::simple) {
  const NetworkProfile net = load_hardware("h100-sxm").network;
  const double bus_bytes = 2.0 * (n - 1) / n * kBytes;
  const double lat =
      nccl_latency(net, p, CollectiveKind::all_reduce, GroupPlacement{n, nodes, n / nodes});
  return bus_bytes / (lat + bus_bytes / bus_bw);
}

}  // namespace

TEST_CASE("collective bandwidth: one all-reduce alone reaches the analytical busbw") {
  // 16 ranks on 2 nodes: B = min(NVLink bus 370, 8 NICs x 48) = 370 GB/s, bound by the GPUs'
  // NVLink ports (8 ring channels through each at 370 / 8 < 48 GB/s per NIC).
  const auto bw = measure(all_reduces(first(16), 16, std::int64_t{1} << 30, 1), 1.0);
  REQUIRE(bw.size() == 1);
  CHECK(bw[0].dim == "dp");
  CHECK(bw[0].kind == CollectiveKind::all_reduce);
  CHECK(bw[0].instances == 1);
  CHECK(bw[0].bytes == kBytes);
  const double expect = ring_busbw(16, 2, 370e9);
  CHECK(bw[0].busbw == doctest::Approx(expect).epsilon(0.01));
  CHECK(bw[0].min_busbw == doctest::Approx(bw[0].busbw));
  CHECK(bw[0].alone_busbw == doctest::Approx(bw[0].busbw).epsilon(1e-6));
  CHECK(bw[0].limited_by == "nvlink");
}

TEST_CASE("collective bandwidth: two all-reduces on the same ports each achieve half") {
  // Each takes lat + 2 x (bandwidth term); alone each would reach the busbw above.
  const auto bw = measure(all_reduces(first(16), 16, std::int64_t{1} << 30, 2), 1.0);
  REQUIRE(bw.size() == 1);
  CHECK(bw[0].instances == 2);
  CHECK(bw[0].bytes == 2 * kBytes);
  CHECK(bw[0].busbw == doctest::Approx(ring_busbw(16, 2, 370e9 / 2)).epsilon(0.01));
  CHECK(bw[0].alone_busbw == doctest::Approx(ring_busbw(16, 2, 370e9)).epsilon(0.01));
}

TEST_CASE("collective bandwidth: one GPU per node is NIC-bound, 4:1 uplinks uplink-bound") {
  // GPU 0 of 4 nodes: one channel through rail 0, B = 48 GB/s, the NIC.
  const auto nic = measure(all_reduces({0, 8, 16, 24}, 32, std::int64_t{1} << 30, 1), 1.0);
  REQUIRE(nic.size() == 1);
  CHECK(nic[0].busbw == doctest::Approx(ring_busbw(4, 4, 48e9)).epsilon(0.01));
  CHECK(nic[0].limited_by == "nic");
  // 64 ranks on 8 nodes with uplinks of 8 x 48 / 4 = 96 GB/s carrying the 8 channels:
  // B = 96 GB/s. NCCL's model, which knows the ring's 370 GB/s and not the uplinks, takes LL128
  // here (14 + 110 x 1.9 + 16 x 4 = 287 us + 2 x 63/64 GiB / 340.4 GB/s = 6.50 ms, against
  // Simple's 849 us + 5.71 ms): 0.92 of the 96 GB/s carries payload.
  const auto up = measure(all_reduces(first(64), 64, std::int64_t{1} << 30, 1), 4.0);
  REQUIRE(up.size() == 1);
  CHECK(up[0].busbw ==
        doctest::Approx(ring_busbw(64, 8, 0.92 * 96e9, NcclProtocol::ll128)).epsilon(0.01));
  CHECK(up[0].limited_by == "uplink");
}
