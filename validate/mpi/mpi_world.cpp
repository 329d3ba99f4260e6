#include "validate/mpi/mpi_world.hpp"

#include <fmt/format.h>

#include "validate/mpi/mpi_comm_backend.hpp"

namespace meshsim {

std::string MpiWorld::describe() const {
  return fmt::format("cpu+mpi ({}, {}{})", session_.library_version(), session_.thread_level(),
                     session_.thread_multiple() ? "" : ": MPI calls serialized");
}

std::unique_ptr<CommBackend> MpiWorld::make_comm(const Program& program, const CommPlan& /*plan*/,
                                                 const CommArgs& args) {
  return std::make_unique<MpiCommBackend>(program, args, session_);
}

}  // namespace meshsim
