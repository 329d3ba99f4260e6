#pragma once
// The arguments of one rank's communication calls, resolved once before the run and shared by
// every communication backend (MPI, in-process, NCCL): for each p2p op the matched transfers with
// their peers and buffers; for each collective the group position, element count, send and
// receive buffers and the in-place conventions. A backend only turns these into calls.
//
// Buffer conventions (those of NCCL; CollectiveCall::bytes as in sim/program.hpp):
//   all_reduce   count = bytes / e elements; send = input, recv = output (the same slot: in
//                place).
//   all_gather   count = bytes / (n e) per rank; send = input (count), recv = output (n count);
//                the same slot: the rank's part of the output at position * count, in place.
//   reduce_scatter count = bytes / (n e) per rank; send = input (n count), recv = output (count);
//                the same slot: the result lands at position * count of it, in place.
//   all_to_all   count = bytes / (n e) per peer; send and recv n count; the same slot: the input
//                is staged into scratch first.
//   permute      count = bytes / e; position p sends to p + shift and receives from p - shift
//                (mod n); the same slot: staged into scratch first.
//   broadcast    count = bytes / e from position `shift`; everyone's buffer is the output; the
//                root first copies its input there when they differ.
//   barrier      nothing moves.
// A missing slot (-1) is backed by the stream's scratch (a builder that models only the bytes).
// Errors (a slot too small for the bytes, bytes that do not divide, a reduction over a slot of
// another type) are InputErrors naming the op.
#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"
#include "validate/tensors/tensor_store.hpp"

namespace meshsim {

struct ResolvedTransfer {
  std::int32_t transfer = -1;  // index into CommPlan::transfers (unique: a backend may use it as
                               // the message tag)
  int peer = 0;                // world rank
  std::byte* data = nullptr;
  std::int64_t bytes = 0;
};

struct ResolvedP2P {
  std::vector<ResolvedTransfer> sends;  // in posting order
  std::vector<ResolvedTransfer> recvs;
};

struct ResolvedCollective {
  CollectiveKind kind = CollectiveKind::barrier;
  GroupId group = 0;
  std::int32_t instance = -1;  // index into CommPlan::collectives
  int ordinal = 0;             // this instance is the ordinal-th collective on its group
  int position = 0;            // this rank's position in the group
  int size = 1;                // ranks in the group
  DType dtype = DType::fp32;
  std::int64_t count = 0;  // elements, per the conventions above
  std::byte* send = nullptr;
  std::byte* recv = nullptr;
  bool in_place = false;  // all_reduce, all_gather, reduce_scatter on one slot
  // Copy stage_bytes from stage_from to send before communicating (in-place all_to_all, permute
  // and the root's broadcast input).
  const std::byte* stage_from = nullptr;
  std::int64_t stage_bytes = 0;
  int send_to = 0;    // permute: position sent to
  int recv_from = 0;  // permute: position received from
  int root = 0;       // broadcast: root position

  std::int64_t element_bytes() const { return dtype_bytes(dtype); }
};

using ResolvedComm = std::variant<std::monostate, ResolvedP2P, ResolvedCollective>;

// Scratch bytes each stream of `rank` needs for its slot-less and staged calls (for TensorStore).
std::vector<std::int64_t> comm_scratch_bytes(const Program& program, const CommPlan& plan,
                                             int rank);

class CommArgs {
 public:
  // `store` must have been created with comm_scratch_bytes() for its rank.
  CommArgs(const Program& program, const CommPlan& plan, TensorStore& store);

  const ResolvedP2P& p2p(OpId op) const;
  const ResolvedCollective& collective(OpId op) const;

 private:
  const Program& program_;
  std::vector<ResolvedComm> by_op_;  // indexed by OpId; monostate for compute and other ranks
};

}  // namespace meshsim
