#pragma once
// The part of an engine run that depends only on the Program and its CommPlan, built once and
// reused by every simulate(): ops renumbered by (position in their rank's launch order, rank) —
// the order in which a step advances across ranks, so the records an event touches sit close
// together — with their static readiness counts, successors and dependents.
#include <cstdint>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"

namespace meshsim {

enum class OpKind : std::uint8_t { compute, p2p, collective };

inline constexpr std::int32_t kNoOp = -1;

// What the event loop reads per op, in one 32-byte record; a run counts `pending` and
// `xfers_left` down in arrays of its own, starting from these.
struct HotOp {
  std::int32_t pending = 0;  // readiness conditions: stream, launch queue, deps
  std::int32_t stream_next = kNoOp;
  std::int32_t launch_next = kNoOp;  // single queue only
  std::int32_t dependents_begin = 0;
  std::int32_t dependents_end = 0;
  std::int32_t xfers_left = 0;  // p2p: its transfers
  std::int32_t rank = 0;
  OpKind kind = OpKind::compute;
};

struct EngineIndex {
  std::vector<OpId> order;             // internal index -> Program op id
  std::vector<std::int32_t> internal;  // Program op id -> internal index
  std::vector<HotOp> ops;              // initial state, by internal index
  std::vector<std::int32_t> dependents;
};

EngineIndex build_engine_index(const Program& program, const CommPlan& plan);

// plan.index when it is this Program's (validate_program sets it), else one built into `local`.
const EngineIndex& engine_index_of(const Program& program, const CommPlan& plan,
                                   EngineIndex& local);

// A run's own copies of what it counts down: each op's readiness conditions and transfers.
void initial_counts(const EngineIndex& ix, std::vector<std::int32_t>& pending,
                    std::vector<std::int32_t>& xfers_left);

}  // namespace meshsim
