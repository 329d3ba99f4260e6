#include "validate/run/comm_args.hpp"

#include <algorithm>
#include <deque>
#include <map>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

struct CollectiveSizes {
  std::int64_t count = 0;       // elements, per the conventions of comm_args.hpp
  std::int64_t send_bytes = 0;  // bytes read from the input
  std::int64_t recv_bytes = 0;  // bytes written to the output
};

int group_size(const Program& p, const CollectiveCall& c) {
  return static_cast<int>(p.groups[static_cast<std::size_t>(c.group)].ranks.size());
}

CollectiveSizes collective_sizes(const Program& p, const Op& op, const CollectiveCall& c) {
  const std::int64_t e = dtype_bytes(c.dtype);
  const std::int64_t n = group_size(p, c);
  if (c.bytes < 0 || c.bytes % e != 0) {
    throw InputError(fmt::format("{}: {} of {} bytes is not a whole number of {} elements",
                                 describe_op(p, op.id), to_string(c.kind), c.bytes,
                                 to_string(c.dtype)));
  }
  CollectiveSizes s;
  switch (c.kind) {
    case CollectiveKind::all_reduce:
    case CollectiveKind::broadcast:
    case CollectiveKind::permute:
      s = {c.bytes / e, c.bytes, c.bytes};
      break;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all: {
      if (c.bytes % (n * e) != 0) {
        throw InputError(
            fmt::format("{}: {} of {} bytes does not split into {} equal parts of {} elements",
                        describe_op(p, op.id), to_string(c.kind), c.bytes, n, to_string(c.dtype)));
      }
      const std::int64_t count = c.bytes / (n * e);
      const std::int64_t part = count * e;
      s.count = count;
      s.send_bytes = c.kind == CollectiveKind::all_gather ? part : c.bytes;
      s.recv_bytes = c.kind == CollectiveKind::reduce_scatter ? part : c.bytes;
      break;
    }
    case CollectiveKind::barrier:
      break;
  }
  return s;
}

bool reduces(CollectiveKind k) {
  return k == CollectiveKind::all_reduce || k == CollectiveKind::reduce_scatter;
}

// Scratch needs of one op: a send region then a receive region.
struct ScratchNeed {
  std::int64_t send = 0;
  std::int64_t recv = 0;
};

ScratchNeed p2p_need(const P2PCall& call) {
  ScratchNeed need;
  for (const auto& t : call.sends) {
    if (t.slot < 0) need.send = std::max(need.send, t.bytes);
  }
  for (const auto& t : call.recvs) {
    if (t.slot < 0) need.recv += t.bytes;
  }
  return need;
}

ScratchNeed collective_need(const Program& p, const Op& op, const CollectiveCall& c) {
  const CollectiveSizes s = collective_sizes(p, op, c);
  const bool same = c.input >= 0 && c.input == c.output;
  ScratchNeed need;
  if (c.kind == CollectiveKind::broadcast) {
    if (c.output < 0) need.recv = s.recv_bytes;
    return need;
  }
  if (c.input < 0 ||
      (same && (c.kind == CollectiveKind::all_to_all || c.kind == CollectiveKind::permute))) {
    need.send = s.send_bytes;
  }
  if (c.output < 0) need.recv = s.recv_bytes;
  return need;
}

class Resolver {
 public:
  Resolver(const Program& p, const CommPlan& plan, TensorStore& store)
      : p_(p), plan_(plan), store_(store) {
    const int me = store.rank();
    // My sends to / receives from each peer, in posting order (see comm_plan.cpp: transfers of a
    // (src, dst) pair appear in plan order as the src posts them, matched in order with the dst's
    // receives).
    for (std::size_t t = 0; t < plan.transfers.size(); ++t) {
      const MatchedTransfer& m = plan.transfers[t];
      if (m.src == me) to_peer_[m.dst].push_back(static_cast<std::int32_t>(t));
      if (m.dst == me) from_peer_[m.src].push_back(static_cast<std::int32_t>(t));
    }
    std::map<GroupId, int> seen;
    for (std::size_t c = 0; c < plan.collectives.size(); ++c) {
      ordinal_.push_back(seen[plan.collectives[c].group]++);
    }
  }

  ResolvedP2P p2p(const Op& op, const P2PCall& call) {
    std::byte* scratch = store_.scratch(op.stream).data();
    const ScratchNeed need = p2p_need(call);
    std::int64_t recv_at = need.send;
    ResolvedP2P r;
    for (const Transfer& t : call.sends) {
      const std::int32_t index = next(to_peer_, t.peer, op);
      MESHSIM_CHECK(plan_.transfers[static_cast<std::size_t>(index)].send_op == op.id,
                    fmt::format("{}: send matched out of order", describe_op(p_, op.id)));
      r.sends.push_back({index, t.peer, buffer(op, t.slot, t.bytes, "send", scratch), t.bytes});
    }
    for (const Transfer& t : call.recvs) {
      const std::int32_t index = next(from_peer_, t.peer, op);
      MESHSIM_CHECK(plan_.transfers[static_cast<std::size_t>(index)].recv_op == op.id,
                    fmt::format("{}: receive matched out of order", describe_op(p_, op.id)));
      std::byte* data = buffer(op, t.slot, t.bytes, "receive", scratch + recv_at);
      if (t.slot < 0) recv_at += t.bytes;
      r.recvs.push_back({index, t.peer, data, t.bytes});
    }
    return r;
  }

  ResolvedCollective collective(const Op& op, const CollectiveCall& c) {
    const CollectiveSizes s = collective_sizes(p_, op, c);
    const Group& g = p_.groups[static_cast<std::size_t>(c.group)];
    const int n = static_cast<int>(g.ranks.size());
    ResolvedCollective r;
    r.kind = c.kind;
    r.group = c.group;
    r.instance = plan_.op_collective[static_cast<std::size_t>(op.id)];
    MESHSIM_CHECK(r.instance >= 0, fmt::format("{}: unmatched collective", describe_op(p_, op.id)));
    r.ordinal = ordinal_[static_cast<std::size_t>(r.instance)];
    r.position =
        static_cast<int>(std::find(g.ranks.begin(), g.ranks.end(), op.rank) - g.ranks.begin());
    r.size = n;
    r.dtype = c.dtype;
    r.count = s.count;
    r.send_to = ((r.position + c.shift) % n + n) % n;
    r.recv_from = ((r.position - c.shift) % n + n) % n;
    r.root = ((c.shift % n) + n) % n;
    if (reduces(c.kind)) {
      for (SlotId slot : {c.input, c.output}) {
        if (slot >= 0 && store_.slot(slot).dtype != c.dtype) {
          throw InputError(fmt::format(
              "{}: {} in {} over slot '{}' of type {}", describe_op(p_, op.id), to_string(c.kind),
              to_string(c.dtype), store_.slot(slot).name, to_string(store_.slot(slot).dtype)));
        }
      }
    }
    std::byte* scratch = store_.scratch(op.stream).data();
    const ScratchNeed need = collective_need(p_, op, c);
    std::byte* scratch_recv = scratch + need.send;
    const bool same = c.input >= 0 && c.input == c.output;
    const std::int64_t part = s.count * r.element_bytes();
    switch (c.kind) {
      case CollectiveKind::barrier:
        break;
      case CollectiveKind::broadcast:
        r.recv = buffer(op, c.output, s.recv_bytes, "output", scratch_recv);
        r.send = r.recv;
        if (r.position == r.root && c.input >= 0 && !same) {
          r.stage_from = buffer(op, c.input, s.send_bytes, "input", nullptr);
          r.stage_bytes = s.send_bytes;
        }
        break;
      case CollectiveKind::all_to_all:
      case CollectiveKind::permute:
        r.recv = buffer(op, c.output, s.recv_bytes, "output", scratch_recv);
        if (same) {
          r.send = scratch;
          r.stage_from = r.recv;
          r.stage_bytes = s.send_bytes;
        } else {
          r.send = buffer(op, c.input, s.send_bytes, "input", scratch);
        }
        break;
      case CollectiveKind::all_reduce:
        r.recv = buffer(op, c.output, s.recv_bytes, "output", scratch_recv);
        r.send = same ? r.recv : buffer(op, c.input, s.send_bytes, "input", scratch);
        r.in_place = same;
        break;
      case CollectiveKind::all_gather:
        r.recv = buffer(op, c.output, s.recv_bytes, "output", scratch_recv);
        r.send =
            same ? r.recv + r.position * part : buffer(op, c.input, s.send_bytes, "input", scratch);
        r.in_place = same;
        break;
      case CollectiveKind::reduce_scatter:
        if (same) {
          r.send = buffer(op, c.input, s.send_bytes, "input", nullptr);
          r.recv = r.send + r.position * part;
        } else {
          r.send = buffer(op, c.input, s.send_bytes, "input", scratch);
          r.recv = buffer(op, c.output, s.recv_bytes, "output", scratch_recv);
        }
        r.in_place = same;
        break;
    }
    return r;
  }

 private:
  std::int32_t next(std::map<int, std::deque<std::int32_t>>& queues, int peer, const Op& op) {
    auto& q = queues[peer];
    MESHSIM_CHECK(!q.empty(), fmt::format("{}: no matched transfer with rank {} left",
                                          describe_op(p_, op.id), peer));
    const std::int32_t t = q.front();
    q.pop_front();
    return t;
  }

  // The slot's buffer (checked to hold `bytes`), or `fallback` for a missing slot.
  std::byte* buffer(const Op& op, SlotId slot, std::int64_t bytes, const char* role,
                    std::byte* fallback) {
    if (slot < 0) return fallback;
    const auto data = store_.bytes(slot);
    if (static_cast<std::int64_t>(data.size()) < bytes) {
      throw InputError(fmt::format("{}: the {} needs {} bytes but slot '{}' holds {}",
                                   describe_op(p_, op.id), role, bytes, store_.slot(slot).name,
                                   data.size()));
    }
    return data.data();
  }

  const Program& p_;
  const CommPlan& plan_;
  TensorStore& store_;
  std::map<int, std::deque<std::int32_t>> to_peer_, from_peer_;
  std::vector<int> ordinal_;  // per collective instance
};

}  // namespace

std::vector<std::int64_t> comm_scratch_bytes(const Program& program, const CommPlan& /*plan*/,
                                             int rank) {
  std::vector<std::int64_t> out(program.streams.size(), 0);
  for (const Op& op : program.ops) {
    if (op.rank != rank || op.is_compute()) continue;
    ScratchNeed need;
    if (const auto* p = std::get_if<P2PCall>(&op.body)) {
      need = p2p_need(*p);
    } else {
      need = collective_need(program, op, std::get<CollectiveCall>(op.body));
    }
    auto& s = out[static_cast<std::size_t>(op.stream)];
    s = std::max(s, need.send + need.recv);
  }
  return out;
}

CommArgs::CommArgs(const Program& program, const CommPlan& plan, TensorStore& store)
    : program_(program), by_op_(program.ops.size()) {
  Resolver resolver(program, plan, store);
  for (const Op& op : program.ops) {
    if (op.rank != store.rank() || op.is_compute()) continue;
    auto& slot = by_op_[static_cast<std::size_t>(op.id)];
    if (const auto* p = std::get_if<P2PCall>(&op.body)) {
      slot = resolver.p2p(op, *p);
    } else {
      slot = resolver.collective(op, std::get<CollectiveCall>(op.body));
    }
  }
}

const ResolvedP2P& CommArgs::p2p(OpId op) const {
  const auto* r = std::get_if<ResolvedP2P>(&by_op_[static_cast<std::size_t>(op)]);
  MESHSIM_CHECK(r != nullptr,
                fmt::format("{}: not a p2p op of this rank", describe_op(program_, op)));
  return *r;
}

const ResolvedCollective& CommArgs::collective(OpId op) const {
  const auto* r = std::get_if<ResolvedCollective>(&by_op_[static_cast<std::size_t>(op)]);
  MESHSIM_CHECK(r != nullptr,
                fmt::format("{}: not a collective of this rank", describe_op(program_, op)));
  return *r;
}

}  // namespace meshsim
