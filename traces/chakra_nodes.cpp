#include "traces/chakra_nodes.hpp"

#include <limits>
#include <optional>

#include <fmt/format.h>

#include "sim/compute_model.hpp"
#include "sim/error.hpp"
#include "sim/json_fields.hpp"
#include "sim/program_json.hpp"
#include "sim/time.hpp"

namespace meshsim::chakra {
namespace {

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;
constexpr std::int64_t kMaxNs = std::int64_t{1'000'000'000} * 1'000'000'000;  // 1e9 s

std::optional<std::int64_t> int_attr(const pb::Node& n, std::string_view name,
                                     std::string_view where, std::int64_t min, std::int64_t max) {
  const pb::AttributeProto* a = find_attr(n, name);
  if (a == nullptr) return std::nullopt;
  const auto v = integer_value(*a);
  if (!v || *v < min || *v > max) {
    throw InputError(
        fmt::format("{}: attribute '{}' expects an integer in [{}, {}]", where, name, min, max));
  }
  return v;
}

std::optional<std::string> string_attr(const pb::Node& n, std::string_view name,
                                       std::string_view where) {
  const pb::AttributeProto* a = find_attr(n, name);
  if (a == nullptr) return std::nullopt;
  if (a->value_case() != pb::AttributeProto::kStringVal) {
    throw InputError(fmt::format("{}: attribute '{}' expects a string_val", where, name));
  }
  return a->string_val();
}

bool bool_attr(const pb::Node& n, std::string_view name, std::string_view where) {
  const pb::AttributeProto* a = find_attr(n, name);
  if (a == nullptr) return false;
  if (a->value_case() != pb::AttributeProto::kBoolVal) {
    throw InputError(fmt::format("{}: attribute '{}' expects a bool_val", where, name));
  }
  return a->bool_val();
}

OpLabels labels(const pb::Node& n, std::string_view where) {
  OpLabels l;
  if (const auto phase = string_attr(n, "phase", where)) {
    const auto p = parse_phase(*phase);
    if (!p) {
      throw InputError(
          fmt::format("{}: attribute 'phase' expects none, fwd, bwd, wgrad or optimizer, got '{}'",
                      where, *phase));
    }
    l.phase = *p;
  }
  const auto label = [&](std::string_view name) {
    return static_cast<int>(int_attr(n, name, where, 0, kMaxInt).value_or(-1));
  };
  l.layer = label("layer");
  l.microbatch = label("microbatch");
  l.step = label("step");
  l.chunk = label("chunk");
  return l;
}

// A COMP_NODE: the kernel meshsim wrote, timed by the profile; otherwise a kernel without work
// whose fixed time is duration_micros, or the roofline of num_ops and tensor_size.
void comp_body(const pb::Node& n, std::string_view where, const NodeContext& ctx, Op& op) {
  if (const auto text = string_attr(n, "kernel", where)) {
    const std::string origin = fmt::format("{}: attribute 'kernel'", where);
    const nlohmann::json j = parse_json_text(*text, origin);
    op.body = kernel_from_json(JsonField(j, origin));
    return;
  }
  op.body = KernelCall{};  // elementwise over no elements: the time is fixed below
  if (op.fixed_ns >= 0) return;
  if (n.duration_micros() > static_cast<std::uint64_t>(kMaxNs / 1000)) {
    throw InputError(fmt::format("{}: duration_micros {} is beyond the simulated range (1e9 s)",
                                 where, n.duration_micros()));
  }
  if (n.duration_micros() > 0) {
    op.fixed_ns = static_cast<std::int64_t>(n.duration_micros()) * 1000;
    return;
  }
  const auto flops = int_attr(n, "num_ops", where, 0, std::numeric_limits<std::int64_t>::max());
  const auto bytes = int_attr(n, "tensor_size", where, 0, std::numeric_limits<std::int64_t>::max());
  if (!flops && !bytes) {
    op.fixed_ns = 0;
    return;
  }
  const double f = static_cast<double>(flops.value_or(0));
  const double b = static_cast<double>(bytes.value_or(0));
  const double s =
      roofline_seconds(ctx.hw, f, b, DType::bf16, default_compute_efficiency(ctx.hw, f));
  op.fixed_ns = seconds_to_ns(
      s, [&] { return fmt::format("{} (num_ops {:g}, tensor_size {:g})", where, f, b); });
}

CollectiveKind collective_kind(std::int64_t type, bool permute, std::string_view where) {
  switch (type) {
    case pb::ALL_REDUCE:
      return CollectiveKind::all_reduce;
    case pb::ALL_GATHER:
      return CollectiveKind::all_gather;
    case pb::REDUCE_SCATTER:
      return CollectiveKind::reduce_scatter;
    case pb::ALL_TO_ALL:
      return permute ? CollectiveKind::permute : CollectiveKind::all_to_all;
    case pb::BROADCAST:
      return CollectiveKind::broadcast;
    case pb::BARRIER:
      return CollectiveKind::barrier;
    default:
      throw InputError(
          fmt::format("{}: comm_type {} ({}) is not simulated (expected ALL_REDUCE, ALL_GATHER, "
                      "REDUCE_SCATTER, ALL_TO_ALL, BROADCAST or BARRIER)",
                      where, type,
                      pb::CollectiveCommType_IsValid(static_cast<int>(type))
                          ? pb::CollectiveCommType_Name(static_cast<pb::CollectiveCommType>(type))
                          : "unknown"));
  }
}

void coll_body(const pb::Node& n, std::string_view where, const NodeContext& ctx, Op& op) {
  CollectiveCall c;
  const auto type = int_attr(n, "comm_type", where, 0, kMaxInt);
  if (!type) throw InputError(fmt::format("{}: a COMM_COLL_NODE needs comm_type", where));
  c.kind = collective_kind(*type, bool_attr(n, "permute", where), where);
  const auto size = int_attr(n, "comm_size", where, 0, kMaxBytes);
  if (!size && c.kind != CollectiveKind::barrier) {
    throw InputError(fmt::format("{}: a COMM_COLL_NODE needs comm_size (bytes)", where));
  }
  c.bytes = size.value_or(0);
  c.group = ctx.group(string_attr(n, "pg_name", where).value_or(""), where);
  if (const auto d = string_attr(n, "dtype", where)) {
    const auto parsed = parse_dtype(*d);
    if (!parsed) {
      throw InputError(fmt::format(
          "{}: attribute 'dtype' expects bf16, fp16, fp32 or fp64, got '{}'", where, *d));
    }
    c.dtype = *parsed;
  }
  if (const auto a = string_attr(n, "algo", where)) {
    const auto parsed = parse_collective_algo(*a);
    if (!parsed) {
      throw InputError(fmt::format(
          "{}: attribute 'algo' expects automatic, ring, tree, nvls or userbuffers, got '{}'",
          where, *a));
    }
    c.algo = *parsed;
  }
  c.shift = static_cast<int>(int_attr(n, "shift", where, -kMaxInt, kMaxInt).value_or(0));
  c.input = static_cast<SlotId>(int_attr(n, "input", where, 0, kMaxInt).value_or(-1));
  c.output = static_cast<SlotId>(int_attr(n, "output", where, 0, kMaxInt).value_or(-1));
  op.body = c;
}

void p2p_body(const pb::Node& n, bool send, int rank, std::string_view where, Op& op) {
  const auto src = int_attr(n, "comm_src", where, 0, kMaxInt);
  const auto dst = int_attr(n, "comm_dst", where, 0, kMaxInt);
  const auto size = int_attr(n, "comm_size", where, 0, kMaxBytes);
  if (!(send ? dst : src) || !size) {
    throw InputError(fmt::format("{}: a {} needs {} and comm_size (bytes)", where,
                                 send ? "COMM_SEND_NODE" : "COMM_RECV_NODE",
                                 send ? "comm_dst" : "comm_src"));
  }
  const auto self = send ? src : dst;
  if (self && *self != rank) {
    throw InputError(fmt::format("{}: {} {} is not this file's rank {}", where,
                                 send ? "comm_src" : "comm_dst", *self, rank));
  }
  Transfer t;
  t.peer = static_cast<int>(send ? *dst : *src);
  t.bytes = *size;
  t.tag = static_cast<int>(
      int_attr(n, "comm_tag", where, std::numeric_limits<std::int32_t>::min(), kMaxInt)
          .value_or(0));
  t.slot = static_cast<SlotId>(int_attr(n, "slot", where, 0, kMaxInt).value_or(-1));
  P2PCall call;
  (send ? call.sends : call.recvs).push_back(t);
  op.body = std::move(call);
}

std::string default_stream(const pb::Node& n, const Op& op, std::string_view where) {
  switch (n.type()) {
    case pb::COMP_NODE:
      return "compute";
    case pb::COMM_COLL_NODE:
      return fmt::format("coll {}", string_attr(n, "pg_name", where).value_or("world"));
    default: {
      const auto& p = std::get<P2PCall>(op.body);
      return p.sends.empty() ? fmt::format("recv {}", p.recvs.front().peer)
                             : fmt::format("send {}", p.sends.front().peer);
    }
  }
}

}  // namespace

std::string describe_node(std::string_view origin, const pb::Node& node) {
  return fmt::format("{}: node {} '{}'", origin, node.id(), node.name());
}

NodeOp node_op(const pb::Node& n, int rank, std::string_view where, const NodeContext& ctx) {
  NodeOp out;
  Op& op = out.op;
  op.rank = rank;
  op.name = n.name();
  op.labels = labels(n, where);
  op.fixed_ns = int_attr(n, "fixed_ns", where, 0, kMaxNs).value_or(-1);
  op.host_wait = static_cast<OpId>(int_attr(n, "host_wait", where, 0, kMaxInt).value_or(-1));
  out.op_id = int_attr(n, "op_id", where, 0, kMaxInt).value_or(-1);
  switch (n.type()) {
    case pb::COMP_NODE:
      comp_body(n, where, ctx, op);
      break;
    case pb::COMM_COLL_NODE:
      coll_body(n, where, ctx, op);
      break;
    case pb::COMM_SEND_NODE:
    case pb::COMM_RECV_NODE:
      p2p_body(n, n.type() == pb::COMM_SEND_NODE, rank, where, op);
      break;
    default:
      throw InputError(
          fmt::format("{}: node type {} ({}) is not simulated (expected COMP_NODE, COMM_COLL_NODE, "
                      "COMM_SEND_NODE or COMM_RECV_NODE)",
                      where, static_cast<int>(n.type()),
                      pb::NodeType_IsValid(n.type()) ? pb::NodeType_Name(n.type()) : "unknown"));
  }
  const auto stream = string_attr(n, "stream", where);
  if (ctx.meshsim && !stream) {
    throw InputError(fmt::format("{}: a meshsim trace's node needs its 'stream'", where));
  }
  op.stream = ctx.stream(stream ? *stream : default_stream(n, op, where), where);
  return out;
}

}  // namespace meshsim::chakra
