#include "validate/cuda/nccl_plan.hpp"

#include <algorithm>

#include "sim/error.hpp"

namespace meshsim {

std::vector<NcclCommSpec> nccl_communicators(const Program& program, int rank) {
  std::vector<NcclCommSpec> specs;
  NcclCommSpec world;
  world.group = -1;
  for (int r = 0; r < program.world_size(); ++r) world.members.push_back(r);
  world.id_root = 0;
  world.position = rank;
  specs.push_back(std::move(world));
  for (const Group& g : program.groups) {
    MESHSIM_CHECK(!g.ranks.empty(), "a Program group without ranks");
    NcclCommSpec spec;
    spec.group = g.id;
    spec.members = g.ranks;
    spec.id_root = g.ranks.front();
    const auto it = std::find(g.ranks.begin(), g.ranks.end(), rank);
    spec.position = it == g.ranks.end() ? -1 : static_cast<int>(it - g.ranks.begin());
    specs.push_back(std::move(spec));
  }
  return specs;
}

NcclType nccl_type(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return NcclType::bf16;
    case DType::fp16:
      return NcclType::fp16;
    case DType::fp32:
      return NcclType::fp32;
    case DType::fp64:
      return NcclType::fp64;
  }
  return NcclType::uint8;
}

NcclCall nccl_call(const ResolvedP2P& p2p) {
  NcclCall call;
  call.kind = NcclCallKind::peer_group;
  call.group = -1;
  call.type = NcclType::uint8;
  for (const ResolvedTransfer& t : p2p.sends) {
    call.peers.push_back(NcclPeerCall{true, t.peer, t.data, t.bytes});
  }
  for (const ResolvedTransfer& t : p2p.recvs) {
    call.peers.push_back(NcclPeerCall{false, t.peer, t.data, t.bytes});
  }
  return call;
}

NcclCall nccl_call(const ResolvedCollective& c) {
  NcclCall call;
  call.group = c.group;
  call.type = nccl_type(c.dtype);
  call.count = c.count;
  call.send = c.send;
  call.recv = c.recv;
  if (c.stage_bytes > 0) {
    call.stage_from = c.stage_from;
    call.stage_to = c.send;
    call.stage_bytes = c.stage_bytes;
  }
  const std::int64_t part = c.count * c.element_bytes();
  switch (c.kind) {
    case CollectiveKind::all_reduce:
      call.kind = NcclCallKind::all_reduce;
      break;
    case CollectiveKind::all_gather:
      call.kind = NcclCallKind::all_gather;
      break;
    case CollectiveKind::reduce_scatter:
      call.kind = NcclCallKind::reduce_scatter;
      break;
    case CollectiveKind::broadcast:
      call.kind = NcclCallKind::broadcast;
      call.root = c.root;
      break;
    case CollectiveKind::barrier:
      call.kind = NcclCallKind::barrier;
      call.type = NcclType::fp32;
      call.count = 1;
      call.send = nullptr;
      call.recv = nullptr;
      break;
    case CollectiveKind::all_to_all:
      // Block p of send goes to position p; block p of recv comes from it (nccl-tests' alltoall).
      call.kind = NcclCallKind::peer_group;
      for (int p = 0; p < c.size; ++p) {
        call.peers.push_back(NcclPeerCall{true, p, c.send + p * part, c.count});
        call.peers.push_back(NcclPeerCall{false, p, c.recv + p * part, c.count});
      }
      break;
    case CollectiveKind::permute:
      call.kind = NcclCallKind::peer_group;
      call.peers.push_back(NcclPeerCall{true, c.send_to, c.send, c.count});
      call.peers.push_back(NcclPeerCall{false, c.recv_from, c.recv, c.count});
      break;
  }
  return call;
}

}  // namespace meshsim
