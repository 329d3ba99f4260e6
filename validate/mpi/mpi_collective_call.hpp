#pragma once
// One resolved collective as nonblocking MPI calls on its group's communicator (private to the MPI
// backend; includes mpi.h): MPI_Iallreduce, MPI_Iallgather, MPI_Ireduce_scatter_block,
// MPI_Ialltoall, MPI_Ibcast, MPI_Ibarrier, and a permutation as MPI_Isend + MPI_Irecv to and from
// the shifted peers (MPI_Sendrecv without blocking). In-place conventions as in comm_args.hpp.
#include <mpi.h>

#include <cstddef>
#include <vector>

#include "validate/run/comm_args.hpp"

namespace meshsim {

struct MpiPendingCollective {
  std::vector<MPI_Request> requests;
  // After completion: move `move_bytes` from `move_from` to `move_to` (an in-place
  // reduce-scatter's result, which MPI leaves at the start of the buffer).
  std::byte* move_to = nullptr;
  const std::byte* move_from = nullptr;
  std::size_t move_bytes = 0;
};

// Issues the collective (the stage copy done by the caller); `tag` is used by permutations.
void start_collective(const ResolvedCollective& c, MPI_Comm comm, MPI_Op sum, int tag,
                      MpiPendingCollective& pending);

}  // namespace meshsim
