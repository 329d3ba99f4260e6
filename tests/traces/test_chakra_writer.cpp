#include <doctest/doctest.h>

#include "sim/program_json.hpp"
#include "tests/traces/chakra_fixtures.hpp"

using namespace meshsim;
using namespace meshsim::chakra;

namespace {

KernelCall gemm_64_128_32() {
  KernelCall k;
  k.kind = KernelKind::gemm;
  k.shape = GemmShape{64, 128, 32};
  return k;
}

// Two ranks: a GEMM, then an all-reduce of its output over both, then a p2p batch (a send and a
// receive) with the other rank.
Program small_program() {
  ProgramBuilder b(Mesh({MeshDim{"tp", 2}}, 8), true, "small");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("comm");
  const GroupId g = b.group("tp", {0, 1});
  for (int r = 0; r < 2; ++r) {
    const OpId gemm = b.add(r, compute, "gemm", {Phase::fwd, 0, 0, -1, -1}, gemm_64_128_32());
    const OpId ar = b.add(r, comm, "allreduce", {},
                          CollectiveCall{CollectiveKind::all_reduce, g, 1 << 20}, {gemm});
    (void)ar;
    P2PCall p2p;
    p2p.sends.push_back(Transfer{1 - r, 4096, 5, -1});
    p2p.recvs.push_back(Transfer{1 - r, 4096, 5, -1});
    b.add(r, comm, "exchange", {}, p2p);
  }
  return std::move(b).finish();
}

std::vector<pb::Node> nodes_of(const std::string& file, pb::GlobalMetadata& meta) {
  DelimitedReader in(file, "t.et");
  in.next(meta, "GlobalMetadata");
  std::vector<pb::Node> nodes;
  while (!in.at_end()) {
    nodes.emplace_back();
    in.next(nodes.back(), "node");
  }
  return nodes;
}

}  // namespace

TEST_CASE("Chakra writer: one file per rank, the nodes ASTRA-sim's feeder reads") {
  const Program p = small_program();
  const std::vector<std::int64_t> ns = {12'345, 0, 0, 12'345, 0, 0};
  const ChakraTrace t = program_to_chakra(p, ns);
  REQUIRE(t.ranks.size() == 2);
  CHECK(t.comm_groups == "{\n \"0\": [\n  0,\n  1\n ]\n}\n");
  pb::GlobalMetadata meta;
  const std::vector<pb::Node> nodes = nodes_of(t.ranks[1], meta);
  CHECK(meta.version() == "0.0.4");
  REQUIRE(meta.attr_size() == 1);
  CHECK(meta.attr(0).name() == "meshsim_program");
  REQUIRE(nodes.size() == 4);  // gemm, all-reduce, send, recv

  const pb::Node& gemm = nodes[0];
  CHECK(gemm.type() == pb::COMP_NODE);
  CHECK(gemm.id() == 0);
  CHECK(gemm.name() == "gemm");
  CHECK(gemm.duration_micros() == 12);  // 12.345 us, rounded
  const KernelCall k = gemm_64_128_32();
  CHECK(find_attr(gemm, "num_ops")->int64_val() == 2 * 64 * 128 * 32);  // 2mnk
  CHECK(find_attr(gemm, "tensor_size")->uint64_val() ==
        static_cast<std::uint64_t>(kernel_bytes(k)));
  CHECK(find_attr(gemm, "kernel")->string_val() == kernel_to_json(k).dump());
  CHECK(find_attr(gemm, "phase")->string_val() == "fwd");
  CHECK(find_attr(gemm, "op_id")->int64_val() == 3);

  const pb::Node& ar = nodes[1];
  CHECK(ar.type() == pb::COMM_COLL_NODE);
  CHECK(find_attr(ar, "comm_type")->int64_val() == pb::ALL_REDUCE);
  CHECK(find_attr(ar, "comm_size")->int64_val() == 1 << 20);
  CHECK(find_attr(ar, "pg_name")->string_val() == "0");
  CHECK(std::vector<std::uint64_t>(ar.data_deps().begin(), ar.data_deps().end()) ==
        std::vector<std::uint64_t>{0});
  CHECK(ar.ctrl_deps_size() == 0);  // first op on its stream

  const pb::Node& send = nodes[2];
  const pb::Node& recv = nodes[3];
  CHECK(send.type() == pb::COMM_SEND_NODE);
  CHECK(recv.type() == pb::COMM_RECV_NODE);
  CHECK(find_attr(send, "comm_src")->int32_val() == 1);
  CHECK(find_attr(send, "comm_dst")->int32_val() == 0);
  CHECK(find_attr(recv, "comm_src")->int32_val() == 0);
  CHECK(find_attr(recv, "comm_dst")->int32_val() == 1);
  CHECK(find_attr(send, "comm_tag")->int32_val() == 5);
  CHECK(find_attr(send, "comm_size")->int64_val() == 4096);
  // Both transfers of the batch follow the all-reduce on the comm stream.
  CHECK(std::vector<std::uint64_t>(send.ctrl_deps().begin(), send.ctrl_deps().end()) ==
        std::vector<std::uint64_t>{1});
  CHECK(std::vector<std::uint64_t>(recv.ctrl_deps().begin(), recv.ctrl_deps().end()) ==
        std::vector<std::uint64_t>{1});
}
