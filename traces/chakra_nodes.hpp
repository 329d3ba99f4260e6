#pragma once
// One Chakra node -> the op it describes (internal to traces/chakra_reader.cpp): body, stream,
// labels and fixed time from the node's type and attributes. Errors are InputError naming the node.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/hardware_profile.hpp"
#include "sim/program.hpp"
#include "traces/chakra_codec.hpp"

namespace meshsim::chakra {

// "<file>: node <id> '<name>'"
std::string describe_node(std::string_view origin, const pb::Node& node);

// How a trace names its streams and groups: a meshsim trace by the Program header's streams and
// group ids, any other trace by the defaults of chakra_reader.hpp.
struct NodeContext {
  const HardwareProfile& hw;
  bool meshsim = false;
  std::function<StreamId(std::string_view name, std::string_view where)> stream;  // find or add
  std::function<GroupId(std::string_view pg, std::string_view where)> group;  // pg_name -> group
};

struct NodeOp {
  Op op;                    // id, deps unset
  std::int64_t op_id = -1;  // the "op_id" attribute (meshsim traces)
};

NodeOp node_op(const pb::Node& node, int rank, std::string_view where, const NodeContext& ctx);

}  // namespace meshsim::chakra
