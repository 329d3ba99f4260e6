#pragma once
// The CPU executor of one rank (ARCHITECTURE.md §5): a thread per stream runs the rank's ops in
// stream order, dispatching each when the readiness rules of ARCHITECTURE.md §2 allow
// (ReadinessTracker under one mutex; a condition variable per stream, woken only when one of its
// ops may have become ready), kernels through a KernelRunner and communication through a
// CommBackend. Each op's dispatch and completion are measured on a RunClock whose origin is set
// after an alignment step (an MPI barrier), so that every rank's records share one time axis.
//
// Dispatch and completion are host events here: a comm op, once dispatched, occupies its stream
// until the backend returns (as an NCCL kernel spins), and a compute op runs as soon as it is
// dispatched. The multi-queue priority of ARCHITECTURE.md §2 rule (4) (compute before comm, no comm
// start under a device-filling kernel) is a GPU hardware effect and is not imposed on the CPU.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/program.hpp"
#include "validate/run/comm_backend.hpp"
#include "validate/run/kernel_runner.hpp"
#include "validate/run/rank_schedule.hpp"
#include "validate/run/readiness.hpp"
#include "validate/run/run_clock.hpp"

namespace meshsim {

struct OpRecord {
  OpId op = -1;
  Nanos start = -1;                // dispatched
  Nanos end = -1;                  // completed
  std::int64_t dispatch_seq = -1;  // 0, 1, 2, ... in the order the rank dispatched its ops
};

struct RankRun {
  int rank = 0;
  std::vector<OpRecord> ops;  // indexed like RankSchedule (launch order)
  std::vector<TransferEnd> recv_ends;
  Nanos wall = 0;  // from the clock's origin to the last completion
};

struct ExecutorOptions {
  // No op dispatched or completed for this long: the run stalled (0: wait forever).
  std::chrono::milliseconds stall_timeout{0};
  // Called once with a description when an op fails or the run stalls, before the stream threads
  // are joined; it may not return (an MPI run aborts the job there, since threads blocked in MPI
  // cannot be woken).
  std::function<void(const std::string&)> on_failure;
};

// An op failed or the run stalled; what() names the op(s).
class ExecutionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Executor {
 public:
  Executor(const Program& program, const RankSchedule& schedule, KernelRunner& kernels,
           CommBackend& comm, ExecutorOptions options = {});
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Starts a thread per used stream, calls `align` once they wait (e.g. an MPI barrier), resets
  // the clock, releases them and returns when every op completed. Throws ExecutionError.
  RankRun run(const std::function<void()>& align = {});

 private:
  void stream_loop(StreamId stream);
  void execute(const Op& op, std::vector<TransferEnd>& recv_ends);
  void wake(const std::vector<int>& ops);  // caller holds mu_
  void fail(const std::string& what);
  std::string stall_report() const;  // caller holds mu_

  const Program& program_;
  const RankSchedule& schedule_;
  KernelRunner& kernels_;
  CommBackend& comm_;
  ExecutorOptions options_;
  RunClock clock_;

  mutable std::mutex mu_;
  std::vector<std::condition_variable> stream_cv_;
  std::condition_variable done_cv_;
  ReadinessTracker tracker_;
  std::vector<OpRecord> records_;
  std::vector<TransferEnd> recv_ends_;
  std::int64_t next_seq_ = 0;
  std::uint64_t progress_ = 0;
  bool started_ = false;
  bool aborted_ = false;
  std::string error_;
};

}  // namespace meshsim
