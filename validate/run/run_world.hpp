#pragma once
// The processes a validation runs on, as the driver needs them: this process's rank among them,
// a barrier (to align the clocks), gathering results to rank 0, agreeing on success, aborting the
// whole job, and the communication backend that connects them. MpiWorld is one MPI process per
// rank; SoloWorld is a single process running a one-rank Program. A CUDA backend adds a world
// whose backend is NCCL bootstrapped over MPI.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"
#include "validate/run/comm_args.hpp"
#include "validate/run/comm_backend.hpp"

namespace meshsim {

class RunWorld {
 public:
  RunWorld() = default;
  RunWorld(const RunWorld&) = delete;
  RunWorld& operator=(const RunWorld&) = delete;
  virtual ~RunWorld() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The most ranks one node holds (ranks sharing memory).
  virtual int ranks_per_node() const = 0;
  virtual std::string describe() const = 0;  // "cpu+mpi (Open MPI v4.1.4, MPI_THREAD_MULTIPLE)"
  virtual void barrier() = 0;
  // Rank 0 gets every rank's data in rank order; the others get an empty vector.
  virtual std::vector<std::vector<std::int64_t>> gather(const std::vector<std::int64_t>& mine) = 0;
  virtual std::vector<std::vector<std::byte>> gather_bytes(const std::vector<std::byte>& mine) = 0;
  // Logical AND over the ranks, known to every rank.
  virtual bool all_true(bool mine) = 0;
  // Ends every process of the job with `code` (MPI), or throws ExecutionError when the job is
  // this process alone.
  [[noreturn]] virtual void abort(int code) = 0;
  // Whether a failed run can be unwound in this process (threads blocked in the backend can be
  // woken); if not, the job must be aborted.
  virtual bool can_unwind() const = 0;
  // The backend connecting this rank to the others (collective over the ranks for MPI).
  virtual std::unique_ptr<CommBackend> make_comm(const Program& program, const CommPlan& plan,
                                                 const CommArgs& args) = 0;
};

}  // namespace meshsim
