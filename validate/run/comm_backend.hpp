#pragma once
// How an executor runs a communication op: a backend turns the op (resolved by CommArgs) into
// library calls — MPI, NCCL, or in-process copies for tests — and returns when the op is
// complete on this rank (every transfer of a p2p group done; the collective's result in place).
// Called concurrently from several stream threads of a rank.
#include <cstdint>
#include <vector>

#include "sim/program.hpp"
#include "sim/time.hpp"
#include "validate/run/run_clock.hpp"

namespace meshsim {

// When a received transfer's data was in place on this rank (run clock).
struct TransferEnd {
  std::int32_t transfer = -1;  // index into CommPlan::transfers
  Nanos end = -1;
};

class CommBackend {
 public:
  CommBackend() = default;
  CommBackend(const CommBackend&) = delete;
  CommBackend& operator=(const CommBackend&) = delete;
  virtual ~CommBackend() = default;

  // Runs a p2p or collective op of this rank to completion; appends the completion time of each
  // of its receives to `recv_ends` (the caller's, not shared between threads).
  virtual void run(const Op& op, const RunClock& clock, std::vector<TransferEnd>& recv_ends) = 0;

  // The run failed elsewhere: wake any call blocked in run() (which then throws) where the
  // backend can; a backend that cannot (MPI) relies on the process being aborted.
  virtual void abort() {}
};

}  // namespace meshsim
