#pragma once
// Single collectives, nccl-tests style (ARCHITECTURE.md §4): K identical operations at once over
// N ranks — all-reduce, all-gather, reduce-scatter, all-to-all, or a ring of send/recv exchanges
// — each on its own communicator (group and stream), sharing every port they cross.
#include <cstdint>
#include <optional>
#include <string>

#include "sim/program.hpp"

namespace meshsim {

struct CollectiveConfig {
  std::string op = "allreduce";  // allreduce, allgather, reducescatter, alltoall, sendrecv
  int ranks = 8;
  int gpus_per_node = 8;
  int concurrent = 1;
  CollectiveAlgo algo = CollectiveAlgo::automatic;
};

// The collective of an op name; nullopt for sendrecv.
std::optional<CollectiveKind> collective_kind_of(const std::string& op);

// bytes: the per-rank buffer (all-reduce, send/recv) or the gathered total (all-gather,
// reduce-scatter, all-to-all), as nccl-tests counts them.
Program build_collective(const CollectiveConfig& config, std::int64_t bytes);

}  // namespace meshsim
