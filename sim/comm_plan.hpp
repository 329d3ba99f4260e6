#pragma once
// Communication matching (ARCHITECTURE.md §2): sends and receives pair up per ordered (src, dst) in
// posting order with agreeing tags and sizes; the k-th collective of every member of a group forms
// one instance whose kind, size and dtype agree. The result is what the engine and the deadlock
// check run on.
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/program.hpp"

namespace meshsim {

struct EngineIndex;

struct MatchedTransfer {
  OpId send_op = 0;
  OpId recv_op = 0;
  int src = 0;
  int dst = 0;
  std::int64_t bytes = 0;
  int tag = 0;
};

struct CollectiveInstance {
  GroupId group = 0;
  CollectiveKind kind = CollectiveKind::all_reduce;
  std::int64_t bytes = 0;
  CollectiveAlgo algo = CollectiveAlgo::automatic;
  std::vector<OpId> members;  // one op per group member, in group position order
};

struct CommPlan {
  std::vector<MatchedTransfer> transfers;
  std::vector<CollectiveInstance> collectives;
  // CSR: transfers posted by op o (as sender or receiver) are
  // op_transfers[op_transfer_begin[o] .. op_transfer_begin[o + 1]).
  std::vector<std::int32_t> op_transfer_begin;
  std::vector<std::int32_t> op_transfers;
  std::vector<std::int32_t> op_collective;  // instance index, -1 for non-collective ops
  // The engine's per-Program index, built once by validate_program and shared by every
  // simulate() of the Program (simulate() builds its own when absent).
  std::shared_ptr<const EngineIndex> index;
};

// Checks the Program's structure (ids, ranks, streams, deps, groups, slots, kernel shapes) and
// matches its communication. Throws InputError naming the offending op(s).
CommPlan match_communication(const Program& program);

// Stream order + deps + matching (+ launch order under the single queue) must be acyclic. Reads
// plan.index when set (validate_program sets it first), else builds the engine index itself.
// Throws InputError listing the ops of a cycle (a deadlock).
void check_deadlock_free(const Program& program, const CommPlan& plan);

// Both of the above: what every entry point runs before simulating or executing a Program.
CommPlan validate_program(const Program& program);

// "rank 3 cp_comm 'kv exchange step 1'": how errors and reports name an op.
std::string describe_op(const Program& program, OpId op);

}  // namespace meshsim
