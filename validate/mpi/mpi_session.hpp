#pragma once
// MPI for the duration of one command: MPI_Init_thread asking for MPI_THREAD_MULTIPLE (the
// executor calls MPI from a thread per stream), MPI_ERRORS_RETURN on the world communicator so
// that MPI_CHECK reports errors, and MPI_Finalize on destruction. If the library provides less
// than MPI_THREAD_MULTIPLE, thread_multiple() is false and the backend serializes its MPI calls.
// mpi.h stays out of this header.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace meshsim {

class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The most ranks any node (shared-memory domain) holds.
  int ranks_per_node() const { return ranks_per_node_; }
  bool thread_multiple() const { return thread_multiple_; }
  std::string thread_level() const;  // "MPI_THREAD_MULTIPLE", ...
  std::string library_version() const;

  void barrier() const;
  // Ends every process of the job (MPI_Abort on the world communicator).
  [[noreturn]] void abort(int code) const;
  // Rank 0 gets every rank's values in rank order; the other ranks get an empty vector.
  std::vector<std::vector<std::int64_t>> gather(const std::vector<std::int64_t>& mine) const;
  // Rank 0 gets every rank's bytes in rank order; the other ranks get an empty vector.
  std::vector<std::vector<std::byte>> gather_bytes(const std::vector<std::byte>& mine) const;
  // The logical AND over all ranks (every rank gets it).
  bool all_true(bool mine) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  int ranks_per_node_ = 1;
  int provided_ = 0;
  bool thread_multiple_ = false;
  bool initialized_here_ = false;
};

}  // namespace meshsim
