#pragma once
// MoeComm over MPI (validate/run/moe_comm.hpp): an EP and an ETP communicator split from
// MPI_COMM_WORLD (world rank = etp index + etp · ep index), MPI_Alltoallv, MPI_Allgatherv and
// MPI_Reduce_scatter. Made after MPI is initialized (an MpiWorld exists) and destroyed before it.
#include <memory>

#include "validate/run/moe_comm.hpp"

namespace meshsim {

std::unique_ptr<MoeComm> make_mpi_moe_comm(int etp);

}  // namespace meshsim
