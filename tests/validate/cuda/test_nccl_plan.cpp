#include <doctest/doctest.h>

#include <array>
#include <cstddef>

#include "sim/program.hpp"
#include "validate/cuda/nccl_plan.hpp"

using namespace meshsim;

namespace {

Program grouped_program() {
  ProgramBuilder b(Mesh({{"dp", 2}, {"tp", 2}}, 8), true, "groups");
  b.stream("compute");
  b.group("tp", {0, 1});
  b.group("tp", {2, 3});
  b.group("dp", {1, 3});
  return std::move(b).finish();
}

ResolvedCollective collective(CollectiveKind kind, std::byte* send, std::byte* recv) {
  ResolvedCollective c;
  c.kind = kind;
  c.group = 2;
  c.position = 1;
  c.size = 4;
  c.dtype = DType::bf16;
  c.count = 8;
  c.send = send;
  c.recv = recv;
  return c;
}

}  // namespace

TEST_CASE("nccl communicators: the world first, then one per group with its first rank as root") {
  const Program p = grouped_program();
  const auto specs = nccl_communicators(p, 3);
  REQUIRE(specs.size() == 4);
  CHECK(specs[0].group == -1);
  CHECK(specs[0].members == std::vector<int>{0, 1, 2, 3});
  CHECK(specs[0].id_root == 0);
  CHECK(specs[0].position == 3);
  CHECK(specs[1].group == 0);
  CHECK(specs[1].position == -1);  // rank 3 is not in tp group {0, 1}
  CHECK(specs[1].id_root == 0);
  CHECK(specs[2].members == std::vector<int>{2, 3});
  CHECK(specs[2].id_root == 2);
  CHECK(specs[2].position == 1);
  CHECK(specs[3].members == std::vector<int>{1, 3});
  CHECK(specs[3].id_root == 1);
  CHECK(specs[3].position == 1);
}

TEST_CASE("nccl calls: reductions and gathers map to the NCCL call of the same name") {
  std::array<std::byte, 64> a{}, b{};
  CHECK(nccl_type(DType::bf16) == NcclType::bf16);
  CHECK(nccl_type(DType::fp64) == NcclType::fp64);

  const NcclCall ar = nccl_call(collective(CollectiveKind::all_reduce, a.data(), a.data()));
  CHECK(ar.kind == NcclCallKind::all_reduce);
  CHECK(ar.group == 2);
  CHECK(ar.type == NcclType::bf16);
  CHECK(ar.count == 8);
  CHECK(ar.send == a.data());
  CHECK(ar.recv == a.data());
  CHECK(ar.stage_bytes == 0);

  const NcclCall ag = nccl_call(collective(CollectiveKind::all_gather, a.data() + 16, a.data()));
  CHECK(ag.kind == NcclCallKind::all_gather);
  CHECK(ag.send == a.data() + 16);  // in place: position 1 x 8 elements x 2 bytes
  CHECK(nccl_call(collective(CollectiveKind::reduce_scatter, a.data(), b.data())).kind ==
        NcclCallKind::reduce_scatter);

  ResolvedCollective bc = collective(CollectiveKind::broadcast, b.data(), b.data());
  bc.root = 1;
  bc.stage_from = a.data();
  bc.stage_bytes = 16;
  const NcclCall bcall = nccl_call(bc);
  CHECK(bcall.kind == NcclCallKind::broadcast);
  CHECK(bcall.root == 1);
  CHECK(bcall.stage_from == a.data());  // the root's input copied into the output first
  CHECK(bcall.stage_to == b.data());
  CHECK(bcall.stage_bytes == 16);

  const NcclCall bar = nccl_call(collective(CollectiveKind::barrier, nullptr, nullptr));
  CHECK(bar.kind == NcclCallKind::barrier);
  CHECK(bar.type == NcclType::fp32);
  CHECK(bar.count == 1);
}

TEST_CASE("nccl calls: all-to-all and permute are send/recv groups over group positions") {
  std::array<std::byte, 64> a{}, b{};
  const NcclCall all = nccl_call(collective(CollectiveKind::all_to_all, a.data(), b.data()));
  CHECK(all.kind == NcclCallKind::peer_group);
  REQUIRE(all.peers.size() == 8);  // a send and a receive per position
  // Block p (8 bf16 elements = 16 bytes) goes to position p and comes from it.
  CHECK(all.peers[4].send);
  CHECK(all.peers[4].peer == 2);
  CHECK(all.peers[4].buffer == a.data() + 32);
  CHECK_FALSE(all.peers[5].send);
  CHECK(all.peers[5].peer == 2);
  CHECK(all.peers[5].buffer == b.data() + 32);
  CHECK(all.peers[5].count == 8);

  ResolvedCollective perm = collective(CollectiveKind::permute, a.data(), b.data());
  perm.send_to = 2;
  perm.recv_from = 0;
  perm.stage_from = b.data();
  perm.stage_bytes = 16;
  const NcclCall pc = nccl_call(perm);
  REQUIRE(pc.peers.size() == 2);
  CHECK(pc.peers[0].send);
  CHECK(pc.peers[0].peer == 2);
  CHECK(pc.peers[1].peer == 0);
  CHECK(pc.peers[1].buffer == b.data());
  CHECK(pc.stage_to == a.data());  // in place: the output staged into the send scratch first
}

TEST_CASE("nccl calls: a p2p op is one group of byte sends and receives on the world") {
  std::array<std::byte, 64> a{}, b{};
  ResolvedP2P p2p;
  p2p.sends.push_back(ResolvedTransfer{4, 1, a.data(), 48});
  p2p.recvs.push_back(ResolvedTransfer{5, 3, b.data(), 40});
  const NcclCall call = nccl_call(p2p);
  CHECK(call.kind == NcclCallKind::peer_group);
  CHECK(call.group == -1);
  CHECK(call.type == NcclType::uint8);
  REQUIRE(call.peers.size() == 2);
  CHECK(call.peers[0].send);
  CHECK(call.peers[0].peer == 1);  // world rank
  CHECK(call.peers[0].count == 48);
  CHECK_FALSE(call.peers[1].send);
  CHECK(call.peers[1].peer == 3);
  CHECK(call.peers[1].buffer == b.data());
}
