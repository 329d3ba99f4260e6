#pragma once
// The MPI communication backend of the CPU executor (ARCHITECTURE.md §5). Construction is
// collective over MPI_COMM_WORLD: one communicator per Program group this rank belongs to
// (MPI_Comm_create_group in group id order, ranks in group position order, so the communicator rank
// is the position) and a duplicate of the world communicator for point-to-point transfers.
//
//   p2p group  -> MPI_Isend/MPI_Irecv of every transfer, then MPI_Waitsome until all are done
//                 (receive completion times recorded). The message tag is the transfer's index in
//                 the CommPlan: the Program's own tag was checked at matching, and a unique tag
//                 keeps MPI's matching equal to the Program's even when two streams of a rank
//                 post to the same peer concurrently.
//   collective -> the nonblocking MPI collective (mpi_collective_call.hpp) issued in group order
//                 (GroupIssueOrder), then waited for.
// With MPI_THREAD_MULTIPLE every stream thread calls MPI directly; with less, every MPI call is
// made under one mutex and waits poll with MPI_Testsome so that other threads can post meanwhile.
#include <memory>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"
#include "validate/mpi/mpi_session.hpp"
#include "validate/run/comm_args.hpp"
#include "validate/run/comm_backend.hpp"

namespace meshsim {

class MpiCommBackend final : public CommBackend {
 public:
  // force_serialized: serialize MPI calls even when MPI is thread-multiple (tests that path).
  MpiCommBackend(const Program& program, const CommArgs& args, const MpiSession& session,
                 bool force_serialized = false);
  ~MpiCommBackend() override;

  void run(const Op& op, const RunClock& clock, std::vector<TransferEnd>& recv_ends) override;
  void abort() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace meshsim
