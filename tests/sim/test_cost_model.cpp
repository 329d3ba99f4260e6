#include <cmath>
#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include "sim/comm_plan.hpp"
#include "sim/compute_model.hpp"
#include "sim/cost_model.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/network_analytical.hpp"
#include "sim/program.hpp"
#include "sim/time.hpp"

using meshsim::CollectiveKind;
using meshsim::Nanos;

namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// Two ranks: rank 0 runs a 4096^3 bf16 GEMM; ranks 0 and 1 exchange 64 MiB each way in one p2p
// group; both all-gather 128 MiB (gathered total) on their 2-rank group.
struct Tiny {
  meshsim::Program program;
  meshsim::CommPlan plan;
  meshsim::OpId gemm = 0, p2p0 = 0, p2p1 = 0, ag0 = 0, ag1 = 0;
};

Tiny tiny(int gpus_per_node) {
  Tiny t;
  meshsim::ProgramBuilder b(meshsim::Mesh({{"cp", 2}}, gpus_per_node), true, "tiny");
  const auto compute = b.stream("compute");
  const auto comm = b.stream("comm");
  const auto group = b.group("cp", {0, 1});
  meshsim::KernelCall g;
  g.kind = meshsim::KernelKind::gemm;
  g.shape = meshsim::GemmShape{4096, 4096, 4096};
  t.gemm = b.add(0, compute, "gemm", {}, g);
  auto exchange = [&](int rank, int peer) {
    meshsim::P2PCall p;
    p.sends.push_back(meshsim::Transfer{peer, 64 * kMiB, 7, -1});
    p.recvs.push_back(meshsim::Transfer{peer, 64 * kMiB, 7, -1});
    return b.add(rank, comm, "exchange", {}, p);
  };
  t.p2p0 = exchange(0, 1);
  t.p2p1 = exchange(1, 0);
  meshsim::CollectiveCall ag;
  ag.kind = CollectiveKind::all_gather;
  ag.group = group;
  ag.bytes = 128 * kMiB;
  t.ag0 = b.add(0, comm, "all-gather", {}, ag);
  t.ag1 = b.add(1, comm, "all-gather", {}, ag);
  t.program = std::move(b).finish();

  // The plan match_communication produces for this program, written out by hand: the two
  // directions of the exchange and one all-gather instance.
  t.plan.transfers = {{t.p2p0, t.p2p1, 0, 1, 64 * kMiB, 7}, {t.p2p1, t.p2p0, 1, 0, 64 * kMiB, 7}};
  t.plan.collectives = {{group,
                         CollectiveKind::all_gather,
                         128 * kMiB,
                         meshsim::CollectiveAlgo::automatic,
                         {t.ag0, t.ag1}}};
  t.plan.op_transfer_begin = {0, 0, 2, 4, 4, 4};
  t.plan.op_transfers = {0, 1, 0, 1};
  t.plan.op_collective = {-1, -1, -1, 0, 0};
  return t;
}

}  // namespace

TEST_CASE("cost model: estimate_durations of a tiny program inside one node") {
  const auto hw = meshsim::load_hardware("h100-sxm");
  const auto t = tiny(8);
  const auto d = meshsim::estimate_durations(t.program, t.plan, hw);
  REQUIRE(d.ops.size() == t.program.ops.size());
  REQUIRE(d.transfers.size() == 2);
  REQUIRE(d.collectives.size() == 1);
  // GEMM 4096^3: FLOPs = 2 * 4096^3 = 1.374e11, gemm efficiency between (1e11, 0.72) and
  // (1e12, 0.8) in log, scaled by H100's / A100's best-shape matmul efficiency 0.803 / 0.869:
  // (0.72 + 0.08 * log10(1.374e11 / 1e11)) * 0.924050 = 0.675526;
  // time = 1.374e11 / (989e12 * 0.675526) + 2 us = 207.718 us.
  CHECK(static_cast<double>(d.ops[static_cast<std::size_t>(t.gemm)]) ==
        doctest::Approx(207717.585).epsilon(1e-5));
  // Comm ops get their time from transfers and collectives, not from ops.
  CHECK(d.ops[static_cast<std::size_t>(t.p2p0)] == 0);
  CHECK(d.ops[static_cast<std::size_t>(t.ag1)] == 0);
  // Each direction: same node, 8.4 + 3.4 us + 64 MiB / 370 GB/s = 193.175 us.
  CHECK(std::llabs(d.transfers[0] - 193175) <= 1);
  CHECK(d.transfers[1] == d.transfers[0]);
  // All-gather over 2 ranks of one node: 1 step; 11.8 us + 1/2 * 128 MiB / 370 GB/s = 193.175 us.
  CHECK(std::llabs(d.collectives[0] - 193175) <= 1);
}

TEST_CASE("cost model: the same program across two nodes uses the network figures") {
  const auto hw = meshsim::load_hardware("h100-sxm");
  const auto t = tiny(1);  // one GPU per node: ranks 0 and 1 on different nodes
  const auto d = meshsim::estimate_durations(t.program, t.plan, hw);
  // Transfer: 8.4 + 14 us + 64 MiB / 48 GB/s = 1420.501 us.
  CHECK(std::llabs(d.transfers[0] - 1420501) <= 1);
  // All-gather, 2 nodes with g = 1: B = min(370, 1 x 48) = 48 GB/s, 1 step of 14 us;
  // 22.4 us + 1/2 * 128 MiB / 48 GB/s = 1420.501 us.
  CHECK(std::llabs(d.collectives[0] - 1420501) <= 1);
  // Compute does not depend on placement.
  CHECK(d.ops[static_cast<std::size_t>(t.gemm)] ==
        meshsim::estimate_durations(tiny(8).program, tiny(8).plan, hw).ops[0]);
}

TEST_CASE("cost model: a folded group is costed as the whole group it is timed as") {
  // One built member of a 16-rank group spread over two 8-GPU nodes: its all-reduce costs what
  // the 16-rank all-reduce at that placement costs (and more than a one-member group, which
  // moves nothing).
  const meshsim::HardwareProfile hw = meshsim::load_hardware("h100-sxm");
  std::vector<int> whole(16);
  for (int r = 0; r < 16; ++r) whole[static_cast<std::size_t>(r)] = r;
  meshsim::ProgramBuilder b(meshsim::Mesh({{"dp", 16}}, 8), false, "folded");
  const auto comm = b.stream("comm");
  const auto folded = b.group("dp", {0}, whole);
  meshsim::CollectiveCall ar;
  ar.kind = CollectiveKind::all_reduce;
  ar.group = folded;
  ar.bytes = 256 * kMiB;
  b.add(0, comm, "all-reduce", {}, ar);
  const meshsim::Program p = std::move(b).finish();
  const meshsim::CommPlan plan = meshsim::validate_program(p);
  const meshsim::Durations d = meshsim::estimate_durations(p, plan, hw);
  REQUIRE(d.collectives.size() == 1);
  const Nanos expected = meshsim::seconds_to_ns(
      meshsim::collective_cost(hw.network, CollectiveKind::all_reduce,
                               meshsim::placement_of(p.mesh, whole), 256 * kMiB)
          .seconds,
      [] { return "all-reduce"; });
  CHECK(d.collectives[0] == expected);
  CHECK(d.collectives[0] > 0);
}

TEST_CASE("cost model: a call repeated is costed once, and calls that differ in any field apart") {
  // estimate_durations costs each distinct GEMM and vector call once and reuses the time; every
  // field but the slots must keep two calls apart. Each op here is checked against compute_time
  // of its own call, and the variants against the base where their time must differ.
  const auto hw = meshsim::load_hardware("h100-sxm");
  meshsim::ProgramBuilder b(meshsim::Mesh({{"cp", 1}}, 8), true, "repeats");
  const auto s = b.stream("compute");
  meshsim::KernelCall base;
  base.kind = meshsim::KernelKind::gemm;
  base.shape = meshsim::GemmShape{4096, 4096, 4096};
  std::vector<meshsim::KernelCall> calls = {base, base};  // the same call twice
  calls.push_back(base);
  calls.back().sm_share = 0.5;  // half the SMs: twice the math time
  calls.push_back(base);
  calls.back().quant = meshsim::QuantFormat::fp8;  // the FP8 peak
  calls.push_back(base);
  calls.back().dtype = meshsim::DType::fp32;  // the FP32 peak
  calls.push_back(base);
  calls.back().shape = meshsim::GemmShape{4096, 4096, 2048};  // half the FLOPs
  meshsim::KernelCall vec;
  vec.kind = meshsim::KernelKind::elementwise;
  vec.shape = meshsim::VectorShape{1 << 24, 2, 0};
  calls.push_back(vec);
  calls.push_back(vec);
  calls.back().shape = meshsim::VectorShape{1 << 24, 3, 0};  // one more operand: 1.5x the bytes
  calls.push_back(vec);
  calls.back().fn = meshsim::ElementwiseFn::gelu;
  for (const auto& c : calls) b.add(0, s, "call", {}, c);
  const meshsim::Program p = std::move(b).finish();
  const auto plan = meshsim::validate_program(p);
  const auto d = meshsim::estimate_durations(p, plan, hw);
  REQUIRE(d.ops.size() == calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    CAPTURE(i);
    CHECK(d.ops[i] == meshsim::compute_time(hw, calls[i]));
  }
  CHECK(d.ops[1] == d.ops[0]);
  for (std::size_t i : {2u, 3u, 4u, 5u}) CHECK(d.ops[i] != d.ops[0]);
  CHECK(d.ops[7] != d.ops[6]);
}
