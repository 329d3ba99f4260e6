#include "traces/chakra_writer.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/program_json.hpp"
#include "traces/chakra_codec.hpp"

namespace meshsim {
namespace {

using chakra::pb::Node;

// Chakra's CollectiveCommType for a collective; a permute is an all-to-all whose splits send the
// whole buffer to one peer ("permute" attribute).
std::int64_t comm_type(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce:
      return chakra::pb::ALL_REDUCE;
    case CollectiveKind::all_gather:
      return chakra::pb::ALL_GATHER;
    case CollectiveKind::reduce_scatter:
      return chakra::pb::REDUCE_SCATTER;
    case CollectiveKind::all_to_all:
    case CollectiveKind::permute:
      return chakra::pb::ALL_TO_ALL;
    case CollectiveKind::broadcast:
      return chakra::pb::BROADCAST;
    case CollectiveKind::barrier:
      return chakra::pb::BARRIER;
  }
  return chakra::pb::ALL_REDUCE;
}

// The attributes every node of an op carries.
Node op_node(const Program& program, const Op& op, std::uint64_t id, chakra::pb::NodeType type) {
  Node n;
  n.set_id(id);
  n.set_name(op.name.str());
  n.set_type(type);
  chakra::add_bool(n, "is_cpu_op", false);
  chakra::add_int64(n, "op_id", op.id);
  chakra::add_string(n, "stream", program.streams[static_cast<std::size_t>(op.stream)]);
  if (op.labels.phase != Phase::none) chakra::add_string(n, "phase", to_string(op.labels.phase));
  if (op.labels.layer >= 0) chakra::add_int64(n, "layer", op.labels.layer);
  if (op.labels.microbatch >= 0) chakra::add_int64(n, "microbatch", op.labels.microbatch);
  if (op.labels.step >= 0) chakra::add_int64(n, "step", op.labels.step);
  if (op.labels.chunk >= 0) chakra::add_int64(n, "chunk", op.labels.chunk);
  if (op.fixed_ns >= 0) chakra::add_int64(n, "fixed_ns", op.fixed_ns);
  if (op.host_wait >= 0) chakra::add_int64(n, "host_wait", op.host_wait);
  return n;
}

void add_kernel(Node& n, const KernelCall& k, std::int64_t ns) {
  chakra::add_int64(n, "num_ops", std::llround(kernel_flops(k)));
  chakra::add_uint64(n, "tensor_size", static_cast<std::uint64_t>(std::llround(kernel_bytes(k))));
  chakra::add_string(n, "kernel", kernel_to_json(k).dump());
  n.set_duration_micros(static_cast<std::uint64_t>(std::llround(static_cast<double>(ns) / 1e3)));
}

void add_collective(Node& n, const CollectiveCall& c) {
  chakra::add_int64(n, "comm_type", comm_type(c.kind));
  chakra::add_int64(n, "comm_size", c.bytes);
  chakra::add_string(n, "pg_name", std::to_string(c.group));
  chakra::add_string(n, "dtype", to_string(c.dtype));
  if (c.kind == CollectiveKind::permute) chakra::add_bool(n, "permute", true);
  if (c.shift != 0) chakra::add_int64(n, "shift", c.shift);
  if (c.algo != CollectiveAlgo::automatic) chakra::add_string(n, "algo", to_string(c.algo));
  if (c.input >= 0) chakra::add_int64(n, "input", c.input);
  if (c.output >= 0) chakra::add_int64(n, "output", c.output);
}

void add_transfer(Node& n, int src, int dst, const Transfer& t) {
  chakra::add_int32(n, "comm_src", src);
  chakra::add_int32(n, "comm_dst", dst);
  chakra::add_int32(n, "comm_tag", t.tag);
  chakra::add_int64(n, "comm_size", t.bytes);
  if (t.slot >= 0) chakra::add_int64(n, "slot", t.slot);
}

// The nodes of one op (a p2p batch has one per transfer), without their deps.
std::vector<Node> op_nodes(const Program& program, const Op& op, std::uint64_t first_id,
                           std::int64_t ns) {
  std::vector<Node> nodes;
  if (const auto* k = std::get_if<KernelCall>(&op.body)) {
    nodes.push_back(op_node(program, op, first_id, chakra::pb::COMP_NODE));
    add_kernel(nodes.back(), *k, ns);
  } else if (const auto* c = std::get_if<CollectiveCall>(&op.body)) {
    nodes.push_back(op_node(program, op, first_id, chakra::pb::COMM_COLL_NODE));
    add_collective(nodes.back(), *c);
  } else {
    const auto& p = std::get<P2PCall>(op.body);
    MESHSIM_CHECK(!p.sends.empty() || !p.recvs.empty(), "a p2p op without transfers");
    for (const auto& t : p.sends) {
      nodes.push_back(op_node(program, op, first_id + nodes.size(), chakra::pb::COMM_SEND_NODE));
      add_transfer(nodes.back(), op.rank, t.peer, t);
    }
    for (const auto& t : p.recvs) {
      nodes.push_back(op_node(program, op, first_id + nodes.size(), chakra::pb::COMM_RECV_NODE));
      add_transfer(nodes.back(), t.peer, op.rank, t);
    }
  }
  return nodes;
}

std::string metadata_bytes(const Program& program) {
  Program header = program;
  header.ops.clear();
  header.dep_offsets = {0};
  header.dep_targets.clear();
  chakra::pb::GlobalMetadata meta;
  meta.set_version("0.0.4");  // the schema version Chakra's generator and ASTRA-sim's examples use
  auto& a = *meta.add_attr();
  a.set_name("meshsim_program");
  a.set_string_val(program_to_text(header));
  std::string out;
  chakra::append_delimited(out, meta);
  return out;
}

std::string comm_groups_json(const Program& program) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& g : program.groups) j[std::to_string(g.id)] = g.ranks;
  return j.dump(1) + "\n";
}

}  // namespace

ChakraTrace program_to_chakra(const Program& program, std::span<const std::int64_t> compute_ns) {
  MESHSIM_CHECK(compute_ns.size() == program.ops.size(), "one duration per op");
  const auto world = static_cast<std::size_t>(program.world_size());
  ChakraTrace trace;
  trace.ranks.assign(world, metadata_bytes(program));
  std::vector<std::uint64_t> next_id(world, 0);
  // Node ids of each op, and the last op of each (rank, stream).
  std::vector<std::vector<std::uint64_t>> ids(program.ops.size());
  std::vector<std::vector<OpId>> last_on_stream(world,
                                                std::vector<OpId>(program.streams.size(), -1));
  for (const auto& op : program.ops) {
    const auto r = static_cast<std::size_t>(op.rank);
    const auto i = static_cast<std::size_t>(op.id);
    std::vector<Node> nodes = op_nodes(program, op, next_id[r], compute_ns[i]);
    OpId& before = last_on_stream[r][static_cast<std::size_t>(op.stream)];
    for (auto& n : nodes) {
      ids[i].push_back(n.id());
      for (const OpId d : program.deps(op.id)) {
        for (const auto id : ids[static_cast<std::size_t>(d)]) n.add_data_deps(id);
      }
      if (before >= 0) {
        for (const auto id : ids[static_cast<std::size_t>(before)]) n.add_ctrl_deps(id);
      }
      chakra::append_delimited(trace.ranks[r], n);
    }
    next_id[r] += nodes.size();
    before = op.id;
  }
  trace.comm_groups = comm_groups_json(program);
  return trace;
}

}  // namespace meshsim
