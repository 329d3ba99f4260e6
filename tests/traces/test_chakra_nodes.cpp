#include <doctest/doctest.h>

#include "sim/error.hpp"
#include "tests/traces/chakra_fixtures.hpp"
#include "traces/chakra_nodes.hpp"

using namespace meshsim;
using namespace meshsim::chakra;

namespace {

NodeOp read(const pb::Node& n, int rank = 0) {
  static const HardwareProfile hw = load_hardware("h100-sxm");
  NodeContext ctx{hw, false, [](std::string_view, std::string_view) { return StreamId{0}; },
                  [](std::string_view, std::string_view) { return GroupId{0}; }};
  return node_op(n, rank, describe_node("n.0.et", n), ctx);
}

pb::Node coll(std::int64_t type) {
  pb::Node n;
  n.set_id(2);
  n.set_name("c");
  n.set_type(pb::COMM_COLL_NODE);
  add_int64(n, "comm_type", type);
  add_uint64(n, "comm_size", 64);  // Chakra's generator writes uint64_val
  return n;
}

}  // namespace

TEST_CASE("Chakra nodes: collectives by comm_type, sizes in any integer kind") {
  const NodeOp op = read(coll(pb::REDUCE_SCATTER));
  const auto& c = std::get<CollectiveCall>(op.op.body);
  CHECK(c.kind == CollectiveKind::reduce_scatter);
  CHECK(c.bytes == 64);
  CHECK_THROWS_WITH_AS(read(coll(pb::REDUCE)),
                       doctest::Contains("n.0.et: node 2 'c': comm_type 1 (REDUCE) is not "
                                         "simulated"),
                       InputError);
}

TEST_CASE("Chakra nodes: sends and receives from comm_src / comm_dst") {
  pb::Node n;
  n.set_id(0);
  n.set_name("s");
  n.set_type(pb::COMM_SEND_NODE);
  add_int32(n, "comm_src", 1);
  add_int32(n, "comm_dst", 3);
  add_int32(n, "comm_tag", 9);
  add_int64(n, "comm_size", 100);
  const NodeOp op = read(n, 1);
  const auto& p = std::get<P2PCall>(op.op.body);
  REQUIRE(p.sends.size() == 1);
  CHECK(p.sends[0] == Transfer{3, 100, 9, -1});
  CHECK_THROWS_WITH_AS(read(n, 2), doctest::Contains("comm_src 1 is not this file's rank 2"),
                       InputError);
}

TEST_CASE("Chakra nodes: an attribute of the wrong kind is named") {
  pb::Node n = test::comp_node(0, 1);
  add_string(n, "num_ops", "many");
  n.set_duration_micros(0);
  CHECK_THROWS_WITH_AS(read(n), doctest::Contains("attribute 'num_ops' expects an integer"),
                       InputError);
}
