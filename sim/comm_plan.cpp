#include "sim/comm_plan.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "sim/engine_index.hpp"
#include "sim/error.hpp"

namespace meshsim {
namespace {

struct PendingSide {
  OpId op;
  const Transfer* transfer;
};

// Structural rules a Program loaded from anywhere must satisfy before matching.
// A folded group's timed_as: the whole group, distinct ranks of the mesh, holding every member.
void check_timed_as(const Group& group, std::size_t g, int world) {
  if (group.timed_as.empty()) return;
  std::vector<int> whole = group.timed_as;
  std::sort(whole.begin(), whole.end());
  if (whole.front() < 0 || whole.back() >= world) {
    throw InputError(
        fmt::format("groups[{}]: timed_as holds a rank outside the mesh of {} ranks", g, world));
  }
  if (std::adjacent_find(whole.begin(), whole.end()) != whole.end()) {
    throw InputError(fmt::format("groups[{}]: timed_as lists a rank twice", g));
  }
  for (int r : group.ranks) {
    if (!std::binary_search(whole.begin(), whole.end(), r)) {
      throw InputError(fmt::format("groups[{}]: member {} is not in timed_as", g, r));
    }
  }
}

// Groups: ids by position, non-empty, distinct ranks of the mesh, a consistent timed_as.
void check_groups(const Program& p, int world) {
  for (std::size_t g = 0; g < p.groups.size(); ++g) {
    const auto& group = p.groups[g];
    if (group.id != static_cast<GroupId>(g)) {
      throw InputError(fmt::format("groups[{}]: id {} differs from its position", g, group.id));
    }
    if (group.ranks.empty()) throw InputError(fmt::format("groups[{}]: no ranks", g));
    std::vector<bool> seen(static_cast<std::size_t>(world), false);
    for (int r : group.ranks) {
      if (r < 0 || r >= world) {
        throw InputError(
            fmt::format("groups[{}]: rank {} outside the mesh of {} ranks", g, r, world));
      }
      if (seen[static_cast<std::size_t>(r)]) {
        throw InputError(fmt::format("groups[{}]: rank {} listed twice", g, r));
      }
      seen[static_cast<std::size_t>(r)] = true;
    }
    check_timed_as(group, g, world);
  }
}

// Tensor slots: ids by position, each on a rank of the mesh.
void check_slots(const Program& p, int world) {
  for (std::size_t s = 0; s < p.slots.size(); ++s) {
    const auto& slot = p.slots[s];
    if (slot.id != static_cast<SlotId>(s)) {
      throw InputError(fmt::format("slots[{}]: id {} differs from its position", s, slot.id));
    }
    if (slot.rank < 0 || slot.rank >= world) {
      throw InputError(fmt::format("slots[{}]: rank {} outside the mesh", s, slot.rank));
    }
  }
}

[[noreturn]] void fail_op(OpId id, const std::string& what) {
  throw InputError(fmt::format("op {}: {}", id, what));
}

// A tensor slot an op names: none (-1), or an existing slot of the op's rank.
void check_slot(const Program& p, OpId id, SlotId slot, int rank) {
  if (slot == -1) return;
  const auto n_slots = static_cast<SlotId>(p.slots.size());
  if (slot < 0 || slot >= n_slots) fail_op(id, fmt::format("tensor slot {} does not exist", slot));
  if (p.slots[static_cast<std::size_t>(slot)].rank != rank) {
    fail_op(id, fmt::format("tensor slot {} belongs to another rank", slot));
  }
}

// What an op calls: a kernel of the right shape kind, p2p transfers to other ranks, or a
// collective of an existing group; every slot it names on its own rank.
void check_op_body(const Program& p, const Op& op, OpId id, int world) {
  if (const auto* k = std::get_if<KernelCall>(&op.body)) {
    if (!accepts_shape(k->kind, k->shape.index())) {
      fail_op(id, fmt::format("kernel {} has the wrong shape kind", to_string(k->kind)));
    }
    for (SlotId s : k->inputs) check_slot(p, id, s, op.rank);
    for (SlotId s : k->outputs) check_slot(p, id, s, op.rank);
  } else if (const auto* c = std::get_if<P2PCall>(&op.body)) {
    for (const auto* list : {&c->sends, &c->recvs}) {
      for (const auto& t : *list) {
        if (t.peer < 0 || t.peer >= world || t.peer == op.rank) {
          fail_op(id, fmt::format("p2p peer {} is not another rank of the mesh", t.peer));
        }
        if (t.bytes < 0) fail_op(id, "p2p transfer with negative bytes");
        check_slot(p, id, t.slot, op.rank);
      }
    }
  } else {
    const auto& coll = std::get<CollectiveCall>(op.body);
    const auto n_groups = static_cast<GroupId>(p.groups.size());
    if (coll.group < 0 || coll.group >= n_groups) {
      fail_op(id, fmt::format("collective group {} does not exist", coll.group));
    }
    if (coll.bytes < 0) fail_op(id, "collective with negative bytes");
    if (coll.algo == CollectiveAlgo::userbuffers) {
      if (coll.kind != CollectiveKind::permute && coll.kind != CollectiveKind::all_gather &&
          coll.kind != CollectiveKind::reduce_scatter) {
        fail_op(id, "algorithm userbuffers is for permute, all_gather and reduce_scatter only");
      }
    } else if (coll.algo != CollectiveAlgo::automatic && coll.kind != CollectiveKind::all_reduce) {
      fail_op(id, fmt::format("algorithm {} is for all_reduce only", to_string(coll.algo)));
    }
    check_slot(p, id, coll.input, op.rank);
    check_slot(p, id, coll.output, op.rank);
  }
}

// Ops: ids by position, on a rank of the mesh and an existing stream, depending (and host-waiting)
// only on earlier ops of the same rank, calling something well-formed.
void check_ops(const Program& p, int world) {
  const auto n_streams = static_cast<StreamId>(p.streams.size());
  MESHSIM_CHECK(p.dep_offsets.size() == p.ops.size() + 1 && p.dep_offsets.front() == 0 &&
                    std::is_sorted(p.dep_offsets.begin(), p.dep_offsets.end()) &&
                    static_cast<std::size_t>(p.dep_offsets.back()) == p.dep_targets.size(),
                "the deps' offsets do not match the ops");
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    const auto id = static_cast<OpId>(i);
    if (op.id != id) fail_op(id, fmt::format("id {} differs from its position", op.id));
    if (op.rank < 0 || op.rank >= world) {
      fail_op(id, fmt::format("rank {} outside the mesh of {} ranks", op.rank, world));
    }
    if (op.stream < 0 || op.stream >= n_streams) {
      fail_op(id, fmt::format("stream {} does not exist", op.stream));
    }
    for (OpId d : p.deps(id)) {
      if (d < 0 || d >= id) fail_op(id, fmt::format("dep {} is not an earlier op", d));
      if (p.ops[static_cast<std::size_t>(d)].rank != op.rank) {
        fail_op(id, fmt::format("dep {} is on another rank", d));
      }
    }
    if (op.host_wait >= 0 &&
        (op.host_wait >= id || p.ops[static_cast<std::size_t>(op.host_wait)].rank != op.rank)) {
      fail_op(id, fmt::format("host_wait {} is not an earlier op of the same rank", op.host_wait));
    }
    check_op_body(p, op, id, world);
  }
}

// The structural rules, in order: groups, slots, ops.
void check_structure(const Program& p) {
  const int world = p.world_size();
  check_groups(p, world);
  check_slots(p, world);
  check_ops(p, world);
}

std::uint64_t pair_key(int src, int dst) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32) |
         static_cast<std::uint32_t>(dst);
}

// Appends each matched transfer to plan.transfers and (op, transfer) to `sides`, the sender's
// entry first, in increasing transfer order.
void match_p2p(const Program& p, CommPlan& plan,
               std::vector<std::pair<OpId, std::int32_t>>& sides) {
  // Per ordered (src, dst): posted receives in posting order.
  std::unordered_map<std::uint64_t, std::vector<PendingSide>> recvs;
  std::size_t sends = 0;
  for (const Op& op : p.ops) {
    const auto* c = std::get_if<P2PCall>(&op.body);
    if (c == nullptr) continue;
    for (const auto& t : c->recvs) recvs[pair_key(t.peer, op.rank)].push_back({op.id, &t});
    sends += c->sends.size();
  }
  plan.transfers.reserve(sends);  // one per send when all match
  sides.reserve(2 * sends);
  // Deterministic order: walk sends in op order.
  std::unordered_map<std::uint64_t, std::size_t> next_recv;
  for (const Op& op : p.ops) {
    const auto* c = std::get_if<P2PCall>(&op.body);
    if (c == nullptr) continue;
    for (const auto& t : c->sends) {
      const auto key = pair_key(op.rank, t.peer);
      auto& cursor = next_recv[key];
      const auto& rlist = recvs[key];
      if (cursor >= rlist.size()) {
        throw InputError(fmt::format(
            "p2p mismatch: {} sends {} bytes (tag {}) to rank {}, which posts no matching receive",
            describe_op(p, op.id), t.bytes, t.tag, t.peer));
      }
      const PendingSide& r = rlist[cursor++];
      if (r.transfer->tag != t.tag || r.transfer->bytes != t.bytes) {
        throw InputError(fmt::format(
            "p2p mismatch: {} sends {} bytes (tag {}) to rank {}, but the matching receive {} "
            "expects {} bytes (tag {})",
            describe_op(p, op.id), t.bytes, t.tag, t.peer, describe_op(p, r.op), r.transfer->bytes,
            r.transfer->tag));
      }
      const auto index = static_cast<std::int32_t>(plan.transfers.size());
      plan.transfers.push_back(MatchedTransfer{op.id, r.op, op.rank, t.peer, t.bytes, t.tag});
      sides.emplace_back(op.id, index);
      sides.emplace_back(r.op, index);
    }
  }
  for (const auto& [key, rlist] : recvs) {
    const auto it = next_recv.find(key);
    const std::size_t used = it == next_recv.end() ? 0 : it->second;
    if (used < rlist.size()) {
      const PendingSide& r = rlist[used];
      throw InputError(fmt::format(
          "p2p mismatch: {} receives {} bytes (tag {}) from rank {}, which posts no matching send",
          describe_op(p, r.op), r.transfer->bytes, r.transfer->tag, static_cast<int>(key >> 32)));
    }
  }
}

void match_collectives(const Program& p, CommPlan& plan) {
  // Per (group, rank): the collective ops that rank posts on the group, in launch order.
  std::vector<std::unordered_map<int, std::vector<OpId>>> posted(p.groups.size());
  // Each group's ranks sorted, once per group: every member posts an op on its group, so a linear
  // membership scan per op would cost O(ranks^2).
  std::vector<std::vector<int>> sorted_ranks(p.groups.size());
  for (const Op& op : p.ops) {
    const auto* c = std::get_if<CollectiveCall>(&op.body);
    if (c == nullptr) continue;
    const auto& group = p.groups[static_cast<std::size_t>(c->group)];
    auto& members = sorted_ranks[static_cast<std::size_t>(c->group)];
    if (members.empty()) {
      members = group.ranks;
      std::sort(members.begin(), members.end());
    }
    if (!std::binary_search(members.begin(), members.end(), op.rank)) {
      throw InputError(fmt::format("{} posts a {} on group {} ({}) without being a member",
                                   describe_op(p, op.id), to_string(c->kind), c->group, group.dim));
    }
    posted[static_cast<std::size_t>(c->group)][op.rank].push_back(op.id);
  }
  std::size_t instances = 0;  // one per collective of a group's first rank when all match
  for (std::size_t g = 0; g < p.groups.size(); ++g) {
    if (posted[g].empty()) continue;  // a group nobody posts on makes no instance
    const auto it = posted[g].find(p.groups[g].ranks.front());
    if (it != posted[g].end()) instances += it->second.size();
  }
  plan.collectives.reserve(instances);
  for (std::size_t g = 0; g < p.groups.size(); ++g) {
    const auto& group = p.groups[g];
    auto& by_rank = posted[g];
    if (by_rank.empty()) continue;
    const int first = group.ranks.front();
    const std::size_t count = by_rank[first].size();
    for (int r : group.ranks) {
      const auto& ops = by_rank[r];
      if (ops.size() != count) {
        const auto& longer = ops.size() > count ? ops : by_rank[first];
        const std::size_t k = std::min(ops.size(), count);
        throw InputError(fmt::format(
            "collective mismatch on group {} ({}): rank {} posts {} collectives but rank {} posts "
            "{}; first unmatched: {}",
            g, group.dim, first, count, r, ops.size(), describe_op(p, longer[k])));
      }
    }
    for (std::size_t k = 0; k < count; ++k) {
      CollectiveInstance inst;
      const OpId lead = by_rank[first][k];
      const auto& lc = std::get<CollectiveCall>(p.ops[static_cast<std::size_t>(lead)].body);
      inst.group = static_cast<GroupId>(g);
      inst.kind = lc.kind;
      inst.bytes = lc.bytes;
      inst.algo = lc.algo;
      inst.members.reserve(group.ranks.size());
      for (int r : group.ranks) {
        const OpId o = by_rank[r][k];
        const auto& oc = std::get<CollectiveCall>(p.ops[static_cast<std::size_t>(o)].body);
        if (oc.kind != lc.kind || oc.bytes != lc.bytes || oc.dtype != lc.dtype ||
            oc.shift != lc.shift || oc.algo != lc.algo) {
          throw InputError(fmt::format(
              "collective mismatch on group {} ({}): {} is {} of {} bytes {} (shift {}) but {} is "
              "{} of {} bytes {} (shift {})",
              g, group.dim, describe_op(p, lead), to_string(lc.kind), lc.bytes, to_string(lc.dtype),
              lc.shift, describe_op(p, o), to_string(oc.kind), oc.bytes, to_string(oc.dtype),
              oc.shift));
        }
        plan.op_collective[static_cast<std::size_t>(o)] =
            static_cast<std::int32_t>(plan.collectives.size());
        inst.members.push_back(o);
      }
      plan.collectives.push_back(std::move(inst));
    }
  }
}

}  // namespace

std::string describe_op(const Program& program, OpId op) {
  const Op& o = program.ops[static_cast<std::size_t>(op)];
  return fmt::format("rank {} {} '{}'", o.rank, program.streams[static_cast<std::size_t>(o.stream)],
                     o.name);
}

CommPlan match_communication(const Program& program) {
  check_structure(program);
  CommPlan plan;
  const std::size_t n = program.ops.size();
  plan.op_collective.assign(n, -1);
  std::vector<std::pair<OpId, std::int32_t>> sides;
  match_p2p(program, plan, sides);
  match_collectives(program, plan);
  // CSR by a counting sort of (op, transfer): stable, so each op lists its transfers in
  // increasing order.
  plan.op_transfer_begin.assign(n + 1, 0);
  for (const auto& [op, t] : sides) ++plan.op_transfer_begin[static_cast<std::size_t>(op) + 1];
  for (std::size_t i = 0; i < n; ++i) plan.op_transfer_begin[i + 1] += plan.op_transfer_begin[i];
  plan.op_transfers.resize(sides.size());
  std::vector<std::int32_t> fill(plan.op_transfer_begin.begin(), plan.op_transfer_begin.end() - 1);
  for (const auto& [op, t] : sides)
    plan.op_transfers[static_cast<std::size_t>(fill[static_cast<std::size_t>(op)]++)] = t;
  return plan;
}

CommPlan validate_program(const Program& program) {
  CommPlan plan = match_communication(program);
  plan.index = std::make_shared<const EngineIndex>(build_engine_index(program, plan));
  check_deadlock_free(program, plan);
  return plan;
}

}  // namespace meshsim
