#pragma once
// Program -> Chakra execution trace (MLCommons Chakra, schema traces/chakra/et_def.proto): one
// file per rank, a GlobalMetadata message then one Node per compute op, collective, send and
// receive, in the rank's launch order. The mapping (README "Chakra execution traces"):
// - a kernel is a COMP_NODE with num_ops (FLOPs), tensor_size (bytes moved) and duration_micros
//   (its simulated time, rounded to the microsecond);
// - a collective is a COMM_COLL_NODE with comm_type, comm_size (meshsim's bytes: the per-rank
//   buffer of an all-reduce, broadcast or permute, the gathered total otherwise, as nccl-tests)
//   and pg_name (the group's id; the groups' ranks are in comm_groups, ASTRA-sim's
//   --comm-group-configuration file);
// - each transfer of a p2p batch is a COMM_SEND_NODE or COMM_RECV_NODE with comm_src, comm_dst,
//   comm_tag and comm_size;
// - an op's deps are data_deps; the op before it on its stream is its ctrl_dep.
// meshsim's own attributes (ASTRA-sim ignores them) make the round trip exact: "op_id", "stream",
// the labels, "kernel" (the kernel call as in a Program file), "fixed_ns", a collective's
// "dtype", "algo", "shift" and "permute", and on the GlobalMetadata "meshsim_program" (the
// Program file without its ops: mesh, streams, groups, tensor slots).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/program.hpp"

namespace meshsim {

struct ChakraTrace {
  std::vector<std::string> ranks;  // file contents, index = rank
  std::string comm_groups;         // {"<pg_name>": [ranks...], ...}
};

// `compute_ns[i]`: the simulated duration of op i when it is a kernel (Durations::ops).
ChakraTrace program_to_chakra(const Program& program, std::span<const std::int64_t> compute_ns);

}  // namespace meshsim
