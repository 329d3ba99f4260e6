#include "validate/mpi/mpi_collective_call.hpp"

#include <climits>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "validate/mpi/mpi_check.hpp"
#include "validate/mpi/mpi_types.hpp"

namespace meshsim {

void start_collective(const ResolvedCollective& c, MPI_Comm comm, MPI_Op sum, int tag,
                      MpiPendingCollective& pending) {
  if (c.count > INT_MAX) {
    throw InputError(
        fmt::format("{} of {} elements exceeds MPI's int count", to_string(c.kind), c.count));
  }
  const int count = static_cast<int>(c.count);
  const MPI_Datatype type = mpi_element_type(c.dtype);
  MPI_Request request = MPI_REQUEST_NULL;
  switch (c.kind) {
    case CollectiveKind::barrier:
      MPI_CHECK(MPI_Ibarrier(comm, &request));
      break;
    case CollectiveKind::all_reduce:
      MPI_CHECK(MPI_Iallreduce(c.in_place ? MPI_IN_PLACE : c.send, c.recv, count, type, sum, comm,
                               &request));
      break;
    case CollectiveKind::all_gather:
      MPI_CHECK(MPI_Iallgather(c.in_place ? MPI_IN_PLACE : c.send, count, type, c.recv, count, type,
                               comm, &request));
      break;
    case CollectiveKind::reduce_scatter:
      if (c.in_place) {
        // MPI reads the whole buffer and leaves the result at its start; NCCL's in-place result
        // sits at position * count: move it there afterwards.
        MPI_CHECK(
            MPI_Ireduce_scatter_block(MPI_IN_PLACE, c.send, count, type, sum, comm, &request));
        pending.move_to = c.recv;
        pending.move_from = c.send;
        pending.move_bytes = static_cast<std::size_t>(c.count * c.element_bytes());
      } else {
        MPI_CHECK(MPI_Ireduce_scatter_block(c.send, c.recv, count, type, sum, comm, &request));
      }
      break;
    case CollectiveKind::all_to_all:
      MPI_CHECK(MPI_Ialltoall(c.send, count, type, c.recv, count, type, comm, &request));
      break;
    case CollectiveKind::broadcast:
      MPI_CHECK(MPI_Ibcast(c.recv, count, type, c.root, comm, &request));
      break;
    case CollectiveKind::permute: {
      MPI_Request send = MPI_REQUEST_NULL;
      MPI_CHECK(MPI_Irecv(c.recv, count, type, c.recv_from, tag, comm, &request));
      MPI_CHECK(MPI_Isend(c.send, count, type, c.send_to, tag, comm, &send));
      pending.requests.push_back(send);
      break;
    }
  }
  pending.requests.push_back(request);
}

}  // namespace meshsim
