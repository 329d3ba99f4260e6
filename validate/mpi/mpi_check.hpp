#pragma once
// MPI_CHECK(call): a failed MPI call throws MpiError naming the call, the file:line and MPI's own
// message. Communicators run with MPI_ERRORS_RETURN (set by MpiSession), so errors come back here
// instead of aborting inside MPI. Only validate/'s .cpp files include this header (and mpi.h).
#include <mpi.h>

#include <stdexcept>

namespace meshsim {

class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void mpi_call_failed(int code, const char* call, const char* file, int line);

}  // namespace meshsim

#define MPI_CHECK(call)                                                       \
  do {                                                                        \
    const int meshsim_mpi_rc_ = (call);                                       \
    if (meshsim_mpi_rc_ != MPI_SUCCESS) {                                     \
      ::meshsim::mpi_call_failed(meshsim_mpi_rc_, #call, __FILE__, __LINE__); \
    }                                                                         \
  } while (false)
