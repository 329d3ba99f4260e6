#pragma once
// What the CUDA backend asks of NCCL, decided in plain C++ (tested without a GPU):
//  - the communicators a rank takes part in: one over the whole world for p2p ops (peers are
//    world ranks) and one per Program group (ranks in group order), each bootstrapped from a
//    unique id that its first member creates and broadcasts over MPI_COMM_WORLD;
//  - each communication op as one NcclCall: which NCCL function(s), element type, count, buffers,
//    root or peers, and the device copy that stages an input first. Buffers are CommArgs' host
//    addresses; the backend maps them to device addresses (DeviceMemoryPlan).
// NCCL's buffer conventions are CommArgs' (validate/run/comm_args.hpp): in-place all-gather sends
// from recv + position * count, in-place reduce-scatter receives at send + position * count.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/program.hpp"
#include "validate/run/comm_args.hpp"

namespace meshsim {

struct NcclCommSpec {
  GroupId group = -1;        // -1: the world communicator (p2p ops)
  std::vector<int> members;  // world ranks, in communicator rank order
  int id_root = 0;           // world rank that creates the unique id and broadcasts it
  int position = -1;         // this rank's rank in the communicator; -1: not a member
};

// In creation order (every rank takes part in every broadcast; members then call
// ncclCommInitRank inside one ncclGroupStart/ncclGroupEnd): the world first, then the groups in id
// order.
std::vector<NcclCommSpec> nccl_communicators(const Program& program, int rank);

// ncclDataType_t's the backend uses (uint8 for the bytes of p2p transfers).
enum class NcclType : std::uint8_t { uint8, bf16, fp16, fp32, fp64 };
NcclType nccl_type(DType dtype);

enum class NcclCallKind : std::uint8_t {
  all_reduce,      // ncclAllReduce(send, recv, count, type, ncclSum)
  all_gather,      // ncclAllGather(send, recv, count per rank)
  reduce_scatter,  // ncclReduceScatter(send, recv, count per rank, ncclSum)
  broadcast,       // ncclBroadcast(send, recv, count, root)
  peer_group,      // ncclGroupStart; ncclSend/ncclRecv of `peers` in order; ncclGroupEnd
  barrier,         // ncclAllReduce of one fp32 word of the backend's own (nothing of ours moves)
};

struct NcclPeerCall {
  bool send = false;
  int peer = 0;  // rank in the call's communicator
  std::byte* buffer = nullptr;
  std::int64_t count = 0;  // elements of the call's type
};

struct NcclCall {
  NcclCallKind kind = NcclCallKind::barrier;
  GroupId group = -1;  // the communicator: -1 the world, else the Program group
  NcclType type = NcclType::uint8;
  std::int64_t count = 0;
  std::byte* send = nullptr;
  std::byte* recv = nullptr;
  int root = 0;
  std::vector<NcclPeerCall> peers;
  // Before the call: copy stage_bytes from stage_from to stage_to on the op's stream.
  const std::byte* stage_from = nullptr;
  std::byte* stage_to = nullptr;
  std::int64_t stage_bytes = 0;
};

// A p2p op: its sends and receives in one group on the world communicator, bytes as uint8.
NcclCall nccl_call(const ResolvedP2P& p2p);
// A collective on its group's communicator (all-to-all and permute as peer groups).
NcclCall nccl_call(const ResolvedCollective& c);

}  // namespace meshsim
