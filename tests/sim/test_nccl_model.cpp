#include <cstdint>

#include <doctest/doctest.h>

#include "sim/hardware_profile.hpp"
#include "sim/nccl_model.hpp"
#include "sim/network_analytical.hpp"

using meshsim::CollectiveAlgo;
using meshsim::CollectiveKind;
using meshsim::GroupPlacement;
using meshsim::NcclProtocol;
using meshsim::NetworkProfile;

// Expected figures from NVIDIA/nccl src/graph/tuning.cc (NCCL 2.19-2.21): baseLat Ring {LL 6.6,
// LL128 14.0, Simple 8.4} us; hwLat NVLink Ring {0.6, 1.9, 3.4} us, NET Ring {2.7, 4.0, 14.0} us;
// 1 us network post overhead (x3 for Simple); ring plateau x1.4; llMaxBws 87.7 / 39.0 / 20.4
// GB/s; LL128 at 0.92 (0.7 with one rank per node); NVLS latency 23 us.

namespace {

NetworkProfile h100_net() {
  return meshsim::load_hardware("h100-sxm").network;
}

const GroupPlacement kNode8{8, 1, 8};
const GroupPlacement kTwoNodes16{16, 2, 8};

}  // namespace

TEST_CASE("nccl model: ring latencies per protocol inside one NVLink node") {
  const NetworkProfile net = h100_net();
  // All-reduce, 8 GPUs: 14 steps. LL 6.6 + 14 x 0.6 = 15.0 us; LL128 14 + 14 x 1.9 = 40.6 us;
  // Simple 8.4 + 14 x 3.4 = 56.0 us.
  CHECK(meshsim::nccl_latency(net, NcclProtocol::ll, CollectiveKind::all_reduce, kNode8) ==
        doctest::Approx(15.0e-6));
  CHECK(meshsim::nccl_latency(net, NcclProtocol::ll128, CollectiveKind::all_reduce, kNode8) ==
        doctest::Approx(40.6e-6));
  CHECK(meshsim::nccl_latency(net, NcclProtocol::simple, CollectiveKind::all_reduce, kNode8) ==
        doctest::Approx(56.0e-6));
  // All-gather, 8 GPUs: 7 steps. LL 6.6 + 7 x 0.6 = 10.8 us.
  CHECK(meshsim::nccl_latency(net, NcclProtocol::ll, CollectiveKind::all_gather, kNode8) ==
        doctest::Approx(10.8e-6));
}

TEST_CASE("nccl model: only the steps between nodes pay the network latency") {
  const NetworkProfile net = h100_net();
  // All-reduce, 16 ranks on 2 nodes: 30 steps, 2 x 2 = 4 between nodes.
  // LL: 6.6 + 26 x max(0.6, 1.0) + 4 x 2.7 = 43.4 us.
  CHECK(meshsim::nccl_latency(net, NcclProtocol::ll, CollectiveKind::all_reduce, kTwoNodes16) ==
        doctest::Approx(43.4e-6));
  // LL128: 14 + 26 x 1.9 + 4 x 4.0 = 79.4 us.
  CHECK(meshsim::nccl_latency(net, NcclProtocol::ll128, CollectiveKind::all_reduce, kTwoNodes16) ==
        doctest::Approx(79.4e-6));
  // Simple: (8.4 + 26 x max(3.4, 3.0) + 4 x 14) x 1.4 = 213.92 us.
  CHECK(meshsim::nccl_latency(net, NcclProtocol::simple, CollectiveKind::all_reduce, kTwoNodes16) ==
        doctest::Approx(213.92e-6));
  // Reduce-scatter on the same ranks: 15 steps, 1 between nodes, no plateau:
  // 8.4 + 14 x 3.4 + 14 = 70.0 us.
  CHECK(meshsim::nccl_latency(net, NcclProtocol::simple, CollectiveKind::reduce_scatter,
                              kTwoNodes16) == doctest::Approx(70.0e-6));
  // One rank per node, 4 nodes: all 6 all-reduce steps cross nodes (NCCL's 2 x 4 capped at 6):
  // LL 6.6 + 6 x 2.7 = 22.8 us.
  CHECK(meshsim::nccl_latency(net, NcclProtocol::ll, CollectiveKind::all_reduce,
                              GroupPlacement{4, 4, 1}) == doctest::Approx(22.8e-6));
}

TEST_CASE("nccl model: bus bandwidth per protocol") {
  const double ring = 370e9;
  // LL inside a node: all-reduce min(87.7, 370/4 = 92.5) = 87.7 GB/s; all-gather
  // min(87.7, 370/3) = 87.7; on a 40 GB/s ring, 40/3 and 40/4.
  CHECK(meshsim::nccl_bus_bw(NcclProtocol::ll, CollectiveKind::all_reduce, kNode8, ring) ==
        doctest::Approx(87.7e9));
  CHECK(meshsim::nccl_bus_bw(NcclProtocol::ll, CollectiveKind::all_gather, kNode8, 40e9) ==
        doctest::Approx(40e9 / 3));
  CHECK(meshsim::nccl_bus_bw(NcclProtocol::ll, CollectiveKind::all_reduce, kNode8, 40e9) ==
        doctest::Approx(10e9));
  // LL across 2 nodes: min(39.0, 370/4); across 4: 20.4 GB/s.
  CHECK(meshsim::nccl_bus_bw(NcclProtocol::ll, CollectiveKind::all_gather, kTwoNodes16, ring) ==
        doctest::Approx(39.0e9));
  CHECK(meshsim::nccl_bus_bw(NcclProtocol::ll, CollectiveKind::all_reduce, GroupPlacement{32, 4, 8},
                             ring) == doctest::Approx(20.4e9));
  // LL128: 0.92 x 370 = 340.4 GB/s; one rank per node: 0.7 x 48 = 33.6 GB/s.
  CHECK(meshsim::nccl_bus_bw(NcclProtocol::ll128, CollectiveKind::all_reduce, kNode8, ring) ==
        doctest::Approx(340.4e9));
  CHECK(meshsim::nccl_bus_bw(NcclProtocol::ll128, CollectiveKind::all_reduce,
                             GroupPlacement{2, 2, 1}, 48e9) == doctest::Approx(33.6e9));
  CHECK(meshsim::nccl_bus_bw(NcclProtocol::simple, CollectiveKind::all_reduce, kNode8, ring) ==
        doctest::Approx(ring));
}

TEST_CASE("nccl model: the call takes the fastest protocol, NVLS where it is faster") {
  const NetworkProfile net = h100_net();
  const auto choose = [&](std::int64_t bytes, CollectiveAlgo algo = CollectiveAlgo::automatic) {
    return meshsim::collective_timing(net, CollectiveKind::all_reduce, kNode8, bytes, algo, 370e9);
  };
  // 256 KiB: LL 15.0 + 1.75 x 262144 / 87.7e9 = 20.23 us; NVLS 23 + 1.75 x 262144 / 480e9 =
  // 23.96 us: LL.
  const auto small = choose(262144);
  CHECK(small.protocol == NcclProtocol::ll);
  CHECK(small.algorithm == meshsim::NcclAlgorithm::ring);
  CHECK(small.latency == doctest::Approx(15.0e-6));
  // 512 KiB: LL 25.46 us, NVLS 24.91 us: NVLS.
  const auto mid = choose(524288);
  CHECK(mid.algorithm == meshsim::NcclAlgorithm::nvls);
  CHECK(mid.latency == doctest::Approx(23e-6));
  CHECK(mid.bus_bw == doctest::Approx(480e9));
  // Forced ring at 1 GiB: Simple (56 us + 1.75 GiB / 370e9 = 5.135 ms) beats LL128
  // (40.6 us + 1.75 GiB / 340.4e9 = 5.520 ms).
  const auto big = choose(std::int64_t{1} << 30, CollectiveAlgo::ring);
  CHECK(big.protocol == NcclProtocol::simple);
  CHECK(big.algorithm == meshsim::NcclAlgorithm::ring);
  // 4 MiB forced ring: LL128 40.6 us + 1.75 x 4 MiB / 340.4e9 = 62.16 us; Simple 56 + 19.84 =
  // 75.84 us; LL 15 + 83.7 us.
  CHECK(choose(4 << 20, CollectiveAlgo::ring).protocol == NcclProtocol::ll128);
  // Forced NVLS: NVLS whatever the size.
  CHECK(choose(1024, CollectiveAlgo::nvls).algorithm == meshsim::NcclAlgorithm::nvls);
}

TEST_CASE("nccl model: an alpha-beta profile keeps its own figures") {
  NetworkProfile net = h100_net();
  net.nccl_model = false;
  // 16 ranks on 2 nodes: every one of the 30 steps at the network's 14 us: 8.4 + 420 us.
  const auto t = meshsim::collective_timing(net, CollectiveKind::all_reduce, kTwoNodes16, 1024,
                                            CollectiveAlgo::automatic, 370e9);
  CHECK(t.latency == doctest::Approx(428.4e-6));
  CHECK(t.protocol == NcclProtocol::simple);
  CHECK(t.bus_bw == doctest::Approx(370e9));
  CHECK(t.steps == 30);
  // Inside an NVLS node: NVLS at the alpha-beta latency 8.4 + 14 x 3.4 us.
  const auto v = meshsim::collective_timing(net, CollectiveKind::all_reduce, kNode8, 1024,
                                            CollectiveAlgo::automatic, 370e9);
  CHECK(v.algorithm == meshsim::NcclAlgorithm::nvls);
  CHECK(v.latency == doctest::Approx(56e-6));
}

TEST_CASE("nccl model: tree all-reduce latency and bandwidth per protocol") {
  // 16 ranks on 2 nodes: 8 per node, floor(log2 2) = 1 tree level.
  // LL 6.8 + 2 x (7 x 0.6 + 1 x 5.0) = 25.2 us; LL128 14 + 2 x (7 x 1.25 + 8.5) = 48.5 us;
  // Simple 0 + 2 x (7 x 28 + 28) = 448 us.
  CHECK(meshsim::nccl_tree_latency(NcclProtocol::ll, kTwoNodes16) == doctest::Approx(25.2e-6));
  CHECK(meshsim::nccl_tree_latency(NcclProtocol::ll128, kTwoNodes16) == doctest::Approx(48.5e-6));
  CHECK(meshsim::nccl_tree_latency(NcclProtocol::simple, kTwoNodes16) == doctest::Approx(448e-6));
  // 64 nodes of 8: 6 levels. LL 6.8 + 2 x (7 x 0.6 + 6 x 5.0) = 75.2 us.
  CHECK(meshsim::nccl_tree_latency(NcclProtocol::ll, GroupPlacement{512, 64, 8}) ==
        doctest::Approx(75.2e-6));
  // Bandwidth on a 370 GB/s ring: Simple at 1 GiB (log2(2^30 / 64) = 24, past the correction
  // table) 0.92 x 370 = 340.4 GB/s; LL at 1 KiB (index 4: 0.9) min(340.4 / 3.8, 39.0) x 0.9 =
  // 35.1 GB/s; LL128 at 64 KiB (index 10: 0.6) 340.4 x 120/128 x 0.6 = 191.475 GB/s.
  CHECK(meshsim::nccl_tree_bus_bw(NcclProtocol::simple, kTwoNodes16, std::int64_t{1} << 30,
                                  370e9) == doctest::Approx(340.4e9));
  CHECK(meshsim::nccl_tree_bus_bw(NcclProtocol::ll, kTwoNodes16, 1024, 370e9) ==
        doctest::Approx(35.1e9));
  CHECK(meshsim::nccl_tree_bus_bw(NcclProtocol::ll128, kTwoNodes16, 65536, 370e9) ==
        doctest::Approx(191.475e9));
}

TEST_CASE("nccl model: small all-reduces across many nodes take the tree") {
  const NetworkProfile net = h100_net();
  const GroupPlacement dp512{512, 64, 8};
  // 1 KiB over 512 ranks: ring LL 6.6 + 894 x 1.0 + 128 x 2.7 = 1246.2 us; tree LL 75.2 us +
  // 2 KiB at min(340.4 / 3.8, 20.4) x 0.9 GB/s = 75.3 us.
  const auto small = meshsim::collective_timing(net, CollectiveKind::all_reduce, dp512, 1024,
                                                CollectiveAlgo::automatic, 370e9);
  CHECK(small.algorithm == meshsim::NcclAlgorithm::tree);
  CHECK(small.protocol == NcclProtocol::ll);
  CHECK(small.latency == doctest::Approx(75.2e-6));
  CHECK(small.seconds_per_byte == doctest::Approx(2.0 / (20.4e9 * 0.9)));
  // Without the tree (a spine tier in the flow network): the ring's LL.
  const auto no_tree = meshsim::collective_timing(net, CollectiveKind::all_reduce, dp512, 1024,
                                                  CollectiveAlgo::automatic, 370e9, false);
  CHECK(no_tree.algorithm == meshsim::NcclAlgorithm::ring);
  CHECK(no_tree.latency == doctest::Approx(1246.2e-6));
  // 1 GiB over 16 ranks on 2 nodes: ring Simple 213.92 us + 2 x 15/16 GiB / 370 GB/s = 5.655 ms
  // against the tree's 448 us + 2 GiB / 340.4 GB/s = 6.757 ms: the ring.
  const auto big =
      meshsim::collective_timing(net, CollectiveKind::all_reduce, kTwoNodes16,
                                 std::int64_t{1} << 30, CollectiveAlgo::automatic, 370e9);
  CHECK(big.algorithm == meshsim::NcclAlgorithm::ring);
  CHECK(big.protocol == NcclProtocol::simple);
  // Forced tree: the best tree protocol; all-gathers never take the tree.
  const auto forced =
      meshsim::collective_timing(net, CollectiveKind::all_reduce, kTwoNodes16,
                                 std::int64_t{1} << 30, CollectiveAlgo::tree, 370e9);
  CHECK(forced.algorithm == meshsim::NcclAlgorithm::tree);
  CHECK(forced.latency + static_cast<double>(std::int64_t{1} << 30) * forced.seconds_per_byte ==
        doctest::Approx(448e-6 + 2.0 * static_cast<double>(std::int64_t{1} << 30) / 340.4e9));
  CHECK(meshsim::collective_timing(net, CollectiveKind::all_gather, dp512, 1024,
                                   CollectiveAlgo::automatic, 370e9)
            .algorithm == meshsim::NcclAlgorithm::ring);
}
