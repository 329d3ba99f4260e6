#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/mesh.hpp"
#include "sim/network_analytical.hpp"

using meshsim::CollectiveKind;
using meshsim::GroupPlacement;
using meshsim::LinkClass;
using meshsim::NetworkProfile;

namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

NetworkProfile h100_net() {
  return meshsim::load_hardware("h100-sxm").network;
}
NetworkProfile h100_no_nvls() {
  auto n = h100_net();
  n.nvls_bus_bw = 0;
  return n;
}

// n ranks spread evenly over `nodes` nodes.
GroupPlacement even(int n, int nodes) {
  return GroupPlacement{n, nodes, n / nodes};
}

}  // namespace

TEST_CASE("network: placement_of counts nodes and the fewest ranks on one node") {
  const meshsim::Mesh mesh({{"x", 32}}, 8);
  const auto p = meshsim::placement_of(mesh, {0, 1, 8, 9, 10});  // nodes 0 (2 ranks), 1 (3 ranks)
  CHECK(p.ranks == 5);
  CHECK(p.nodes == 2);
  CHECK(p.min_per_node == 2);
  const auto q = meshsim::placement_of(mesh, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(q.ranks == 8);
  CHECK(q.nodes == 1);
  CHECK(q.min_per_node == 8);
  const auto r = meshsim::placement_of(mesh, {3, 11, 19, 27});  // one rank on each of 4 nodes
  CHECK(r.nodes == 4);
  CHECK(r.min_per_node == 1);
}

TEST_CASE("network: intra-node ring all-reduce, with and without NVLS") {
  // 8 ranks, 1 GiB, NVLS disabled: latency = 8.4 us + 2(n-1) = 14 steps x 3.4 us = 56 us;
  // time = 56e-6 + 2 * 7/8 * 2^30 / 370e9 = 5.134508627e-3 s.
  const auto c =
      meshsim::collective_cost(h100_no_nvls(), CollectiveKind::all_reduce, even(8, 1), kGiB);
  CHECK(c.seconds == doctest::Approx(5.134508627027027e-3).epsilon(1e-9));
  CHECK(c.steps == 14);
  CHECK(c.link == LinkClass::nvlink);
  CHECK(c.bus_bw == doctest::Approx(370e9));
  CHECK(c.protocol == meshsim::NcclProtocol::simple);  // LL128: 40.6 us + 1.75 GiB / 340.4e9
  // With NVLS (480 GB/s, NCCL's NVLS latency 23 us): 23e-6 + 2 * 7/8 * 2^30 / 480e9
  // = 3.937683733e-3 s.
  const auto v = meshsim::collective_cost(h100_net(), CollectiveKind::all_reduce, even(8, 1), kGiB);
  CHECK(v.seconds == doctest::Approx(3.937683733333333e-3).epsilon(1e-9));
  CHECK(v.bus_bw == doctest::Approx(480e9));
  CHECK(v.algorithm == meshsim::NcclAlgorithm::nvls);
}

TEST_CASE("network: all-reduce across nodes uses min(NVLink, g x NIC), 14 us between nodes") {
  const auto net = h100_net();
  // 16 ranks on 2 nodes, g = 8: B = min(370, min(8, 8) x 48 = 384) = 370 GB/s (no NVLS across
  // nodes); NCCL's Simple latency: 30 steps, 2 x 2 nodes of them between nodes at 14 us, 26 at
  // 3.4 us, x 1.4 (ring plateau): (8.4 + 26 x 3.4 + 4 x 14) x 1.4 = 213.92 us;
  // time = 213.92e-6 + 2 * 15/16 * 2^30 / 370e9.
  const auto c = meshsim::collective_cost(net, CollectiveKind::all_reduce, even(16, 2), kGiB);
  CHECK(c.seconds == doctest::Approx(5.655179243243243e-3).epsilon(1e-9));
  CHECK(c.bus_bw == doctest::Approx(370e9));
  CHECK(c.steps == 30);
  CHECK(c.link == LinkClass::network);
  // 2 nodes, 1 GPU each: B = min(370, 1 x 48) = 48 GB/s; latency = (8.4 + 2 x 14) x 1.4 =
  // 50.96 us; time = 50.96e-6 + 2 * 1/2 * 2^30 / 48e9 = 2.242058133e-2 s.
  const auto one = meshsim::collective_cost(net, CollectiveKind::all_reduce, even(2, 2), kGiB);
  CHECK(one.seconds == doctest::Approx(2.242058133333333e-2).epsilon(1e-9));
  CHECK(one.bus_bw == doctest::Approx(48e9));
  // 2 nodes with 4 of the group's GPUs each: B = min(370, 4 x 48) = 192 GB/s;
  // time = (8.4 + 10 x 3.4 + 4 x 14) x 1.4 us + 2 * 7/8 * 2^30 / 192e9 = 9.924469333e-3 s.
  const auto four = meshsim::collective_cost(net, CollectiveKind::all_reduce, even(8, 2), kGiB);
  CHECK(four.seconds == doctest::Approx(9.924469333333333e-3).epsilon(1e-9));
  // Fewer NICs than g caps the channels: 4 NICs, g = 8 -> B = min(370, 4 x 48) = 192 GB/s.
  auto four_nics = net;
  four_nics.nics_per_node = 4;
  CHECK(meshsim::collective_cost(four_nics, CollectiveKind::all_reduce, even(16, 2), kGiB).bus_bw ==
        doctest::Approx(192e9));
}

TEST_CASE("network: all-gather, reduce-scatter, broadcast and barrier") {
  const auto net = h100_net();
  // All-gather, 8 ranks in a node, M_total = 1 GiB: 7 steps; NVLS does not apply.
  // time = 8.4e-6 + 7 x 3.4e-6 + 7/8 * 2^30 / 370e9 = 2.571454314e-3 s.
  const auto ag = meshsim::collective_cost(net, CollectiveKind::all_gather, even(8, 1), kGiB);
  CHECK(ag.seconds == doctest::Approx(2.5714543135135137e-3).epsilon(1e-9));
  CHECK(ag.steps == 7);
  CHECK(ag.bus_bw == doctest::Approx(370e9));
  // Reduce-scatter, 16 ranks on 2 nodes: 15 steps, 1 between the nodes at 14 us, 14 at 3.4 us.
  // time = 8.4e-6 + 14 x 3.4e-6 + 14e-6 + 15/16 * 2^30 / 370e9 = 2.790629622e-3 s.
  const auto rs = meshsim::collective_cost(net, CollectiveKind::reduce_scatter, even(16, 2), kGiB);
  CHECK(rs.seconds == doctest::Approx(2.790629621621622e-3).epsilon(1e-9));
  CHECK(rs.steps == 15);
  // Broadcast, 8 ranks in a node: pipelined ring, 7 steps, the whole buffer at B.
  // time = 8.4e-6 + 7 x 3.4e-6 + 2^30 / 370e9 = 2.934204930e-3 s.
  const auto bc = meshsim::collective_cost(net, CollectiveKind::broadcast, even(8, 1), kGiB);
  CHECK(bc.seconds == doctest::Approx(2.9342049297297296e-3).epsilon(1e-9));
  CHECK(bc.steps == 7);
  // Barrier = all-reduce of 0 bytes, whatever the bytes argument: 16 ranks on 2 nodes, NCCL's LL
  // protocol: 6.6 + 26 x 1.0 (NVLink steps at NCCL's 1 us network post overhead) + 4 x 2.7
  // = 43.4 us.
  const auto bar = meshsim::collective_cost(net, CollectiveKind::barrier, even(16, 2), 4096);
  CHECK(bar.seconds == doctest::Approx(43.4e-6));
  CHECK(bar.protocol == meshsim::NcclProtocol::ll);
  CHECK(bar.steps == 30);
}

TEST_CASE("network: all-to-all is pairwise, one step") {
  const auto net = h100_net();
  // Inside a node, 8 ranks, M_total = 1 GiB: 1 step; time = 8.4e-6 + 3.4e-6 + 7/8 * 2^30 / 370e9
  // = 2.551054314e-3 s.
  const auto in = meshsim::collective_cost(net, CollectiveKind::all_to_all, even(8, 1), kGiB);
  CHECK(in.seconds == doctest::Approx(2.551054313513514e-3).epsilon(1e-9));
  CHECK(in.steps == 1);
  // 16 ranks on 2 nodes, g = 8: time = 8.4e-6 + 14e-6 + max(7/16 * M / 370e9,
  // 8/16 * M / (48e9 x min(1, 8/8))) = 22.4e-6 + 0.5 * 2^30 / 48e9 = 1.120721067e-2 s.
  const auto out = meshsim::collective_cost(net, CollectiveKind::all_to_all, even(16, 2), kGiB);
  CHECK(out.seconds == doctest::Approx(1.1207210666666667e-2).epsilon(1e-9));
  CHECK(out.steps == 1);
  CHECK(out.link == LinkClass::network);
  // Reported bus bandwidth: busbw = (n-1)/n x M / (time - latency) = 15/16 x 48e9 / 0.5 = 90 GB/s.
  CHECK(out.bus_bw == doctest::Approx(90e9));
  // 4 NICs for 8 GPUs: each GPU gets half a NIC, 48e9 x min(1, 4/8) = 24 GB/s;
  // time = 22.4e-6 + 0.5 * 2^30 / 24e9 = 2.239202133e-2 s.
  auto four_nics = net;
  four_nics.nics_per_node = 4;
  CHECK(
      meshsim::collective_cost(four_nics, CollectiveKind::all_to_all, even(16, 2), kGiB).seconds ==
      doctest::Approx(2.239202133333333e-2).epsilon(1e-9));
}

TEST_CASE("network: permute and p2p send the whole buffer over one link") {
  const auto net = h100_net();
  // Inside a node: 8.4e-6 + 3.4e-6 + 2^30 / 370e9 = 2.913804930e-3 s.
  const auto pi = meshsim::collective_cost(net, CollectiveKind::permute, even(8, 1), kGiB);
  CHECK(pi.seconds == doctest::Approx(2.9138049297297297e-3).epsilon(1e-9));
  CHECK(pi.steps == 1);
  const auto p2p_in = meshsim::p2p_cost(net, true, kGiB);
  CHECK(p2p_in.seconds == doctest::Approx(2.9138049297297297e-3).epsilon(1e-9));
  CHECK(p2p_in.link == LinkClass::nvlink);
  CHECK(p2p_in.steps == 1);
  // Across nodes: 8.4e-6 + 14e-6 + 2^30 / 48e9 = 2.239202133e-2 s.
  const auto po = meshsim::collective_cost(net, CollectiveKind::permute, even(16, 2), kGiB);
  CHECK(po.seconds == doctest::Approx(2.239202133333333e-2).epsilon(1e-9));
  const auto p2p_out = meshsim::p2p_cost(net, false, kGiB);
  CHECK(p2p_out.seconds == doctest::Approx(2.239202133333333e-2).epsilon(1e-9));
  CHECK(p2p_out.link == LinkClass::network);
  CHECK(p2p_out.bus_bw == doctest::Approx(48e9));
  // 0 bytes: latency only, 8.4 + 3.4 = 11.8 us.
  CHECK(meshsim::p2p_cost(net, true, 0).seconds == doctest::Approx(11.8e-6));
}

TEST_CASE("network: a group of one rank costs nothing") {
  const auto net = h100_net();
  for (int k = 0; k < meshsim::kCollectiveKindCount; ++k) {
    const auto kind = static_cast<CollectiveKind>(k);
    CAPTURE(meshsim::to_string(kind));
    CHECK(meshsim::collective_cost(net, kind, GroupPlacement{1, 1, 1}, kGiB).seconds == 0.0);
    CHECK(meshsim::bytes_sent_per_rank(kind, 1, kGiB) == 0.0);
  }
}

TEST_CASE("network: nccl-tests busbw of a large collective approaches the bus bandwidth") {
  const auto net = h100_no_nvls();
  // algbw = M / time; busbw = algbw x 2(n-1)/n. With M = 64 GiB the 56 us latency is < 0.1%.
  const std::int64_t m = 64 * kGiB;
  const auto c = meshsim::collective_cost(net, CollectiveKind::all_reduce, even(8, 1), m);
  const double busbw =
      static_cast<double>(m) / c.seconds * meshsim::busbw_factor(CollectiveKind::all_reduce, 8);
  CHECK(busbw == doctest::Approx(370e9).epsilon(1e-3));
  CHECK(busbw < 370e9);
  // All-gather across 2 nodes with 1 GPU per node: busbw -> 48 GB/s.
  const auto ag = meshsim::collective_cost(net, CollectiveKind::all_gather, even(2, 2), m);
  const double ag_busbw =
      static_cast<double>(m) / ag.seconds * meshsim::busbw_factor(CollectiveKind::all_gather, 2);
  CHECK(ag_busbw == doctest::Approx(48e9).epsilon(1e-3));
}

TEST_CASE("network: busbw factors and bytes each rank sends") {
  using meshsim::busbw_factor;
  using meshsim::bytes_sent_per_rank;
  // nccl-tests: all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; broadcast 1.
  CHECK(busbw_factor(CollectiveKind::all_reduce, 8) == doctest::Approx(1.75));
  CHECK(busbw_factor(CollectiveKind::all_gather, 8) == doctest::Approx(0.875));
  CHECK(busbw_factor(CollectiveKind::reduce_scatter, 4) == doctest::Approx(0.75));
  CHECK(busbw_factor(CollectiveKind::all_to_all, 2) == doctest::Approx(0.5));
  CHECK(busbw_factor(CollectiveKind::broadcast, 8) == 1.0);
  CHECK(busbw_factor(CollectiveKind::permute, 8) == 1.0);
  CHECK(busbw_factor(CollectiveKind::barrier, 8) == 0.0);
  // Ring all-reduce: 2(n-1)/n x M = 2 x 3/4 x 1000 = 1500 bytes for n = 4.
  CHECK(bytes_sent_per_rank(CollectiveKind::all_reduce, 4, 1000) == doctest::Approx(1500));
  // All-gather / reduce-scatter / all-to-all: (n-1)/n x M_total = 3/4 x 1000 = 750.
  CHECK(bytes_sent_per_rank(CollectiveKind::all_gather, 4, 1000) == doctest::Approx(750));
  CHECK(bytes_sent_per_rank(CollectiveKind::reduce_scatter, 4, 1000) == doctest::Approx(750));
  CHECK(bytes_sent_per_rank(CollectiveKind::all_to_all, 4, 1000) == doctest::Approx(750));
  // Broadcast (ring pipeline) and permute: M.
  CHECK(bytes_sent_per_rank(CollectiveKind::broadcast, 4, 1000) == doctest::Approx(1000));
  CHECK(bytes_sent_per_rank(CollectiveKind::permute, 4, 1000) == doctest::Approx(1000));
  CHECK(bytes_sent_per_rank(CollectiveKind::barrier, 4, 1000) == 0.0);
  CHECK(meshsim::to_string(LinkClass::nvlink) == "nvlink");
  CHECK(meshsim::to_string(LinkClass::network) == "network");
}

TEST_CASE("network: calibrated figures replace latency and bandwidth for their operation only") {
  NetworkProfile n = h100_no_nvls();
  // all_reduce inside a node: base 2 us, 1 us per step, 10 GB/s.
  n.calibrated["all_reduce.nvlink"] = meshsim::LinkFigures{2e-6, 1e-6, 10e9};
  n.calibrated["p2p.nvlink"] = meshsim::LinkFigures{3e-6, 0.5e-6, 20e9};
  const std::int64_t m = 1 << 20;
  // Ring all-reduce over 4 GPUs: 2 us + 2(4-1) x 1 us + 2(4-1)/4 x M / 10 GB/s.
  CHECK(meshsim::collective_cost(n, CollectiveKind::all_reduce, even(4, 1), m).seconds ==
        doctest::Approx(2e-6 + 6e-6 + 1.5 * static_cast<double>(m) / 10e9));
  // p2p: 3 us + 1 step x 0.5 us + M / 20 GB/s.
  CHECK(meshsim::p2p_cost(n, true, m).seconds ==
        doctest::Approx(3.5e-6 + static_cast<double>(m) / 20e9));
  // all_gather has no figures of its own: the profile's collective model costs it.
  const NetworkProfile plain = h100_no_nvls();
  CHECK(meshsim::collective_cost(n, CollectiveKind::all_gather, even(4, 1), m).seconds ==
        doctest::Approx(
            meshsim::collective_cost(plain, CollectiveKind::all_gather, even(4, 1), m).seconds));
  // Across nodes the nvlink figures do not apply.
  CHECK(meshsim::p2p_cost(n, false, m).seconds ==
        doctest::Approx(meshsim::p2p_cost(plain, false, m).seconds));
}

TEST_CASE("network: userbuffers transfers pay one NVLink step, no NCCL base latency") {
  using meshsim::CollectiveAlgo;
  // One ring-exchange step of TE's userbuffers (a permute): 3.4 us + M / 370 GB/s; 16 MiB:
  // 3.4e-6 + 2^24 / 370e9 = 4.8742851e-5 s (NCCL's permute: + 8.4 us base).
  const std::int64_t m = std::int64_t{1} << 24;
  const auto p = meshsim::collective_cost(h100_net(), CollectiveKind::permute, even(8, 1), m,
                                          CollectiveAlgo::userbuffers);
  CHECK(p.seconds == doctest::Approx(3.4e-6 + 16777216.0 / 370e9).epsilon(1e-12));
  CHECK(p.steps == 1);
  const auto nccl = meshsim::collective_cost(h100_net(), CollectiveKind::permute, even(8, 1), m);
  CHECK(nccl.seconds - p.seconds == doctest::Approx(8.4e-6));
  // A userbuffers reduce-scatter of M (gathered total): 3.4 us + 7/8 M / 370 GB/s; NCCL's ring
  // pays 8.4 + 7 x 3.4 = 32.2 us of latency for the same bytes.
  const auto rs = meshsim::collective_cost(h100_net(), CollectiveKind::reduce_scatter, even(8, 1),
                                           m, CollectiveAlgo::userbuffers);
  CHECK(rs.seconds == doctest::Approx(3.4e-6 + 7.0 / 8.0 * 16777216.0 / 370e9).epsilon(1e-12));
  const auto ring =
      meshsim::collective_cost(h100_net(), CollectiveKind::reduce_scatter, even(8, 1), m);
  CHECK(ring.seconds - rs.seconds == doctest::Approx(32.2e-6 - 3.4e-6));
  // Across nodes there are no userbuffers: one line naming why.
  CHECK_THROWS_WITH_AS(meshsim::collective_cost(h100_net(), CollectiveKind::permute, even(16, 2), m,
                                                CollectiveAlgo::userbuffers),
                       doctest::Contains("needs the TP group inside one NVLink domain"),
                       meshsim::InputError);
}
