#pragma once
// A communication backend for several ranks in one process (each rank's executor on its own
// threads): transfers and collectives rendezvous in a shared hub and move data with memcpy, the
// reductions those of reduce_sum.hpp. It matches exactly as the Program says (transfer and
// collective instances of the CommPlan), so it tests matching, buffer conventions and deadlock
// freedom of a Program without MPI; the numerics can run on it too.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "sim/comm_plan.hpp"
#include "validate/run/comm_args.hpp"
#include "validate/run/comm_backend.hpp"

namespace meshsim {

class InProcessHub {
 public:
  explicit InProcessHub(const CommPlan& plan);

  // Point to point: the sender posts its buffer, the receiver copies from it and marks the
  // transfer done, the sender waits for that.
  void post_send(const ResolvedTransfer& t);
  void wait_sent(const ResolvedTransfer& t);
  void receive(const ResolvedTransfer& t);

  // Every member calls it with its own arguments; returns when this member's result is in place.
  void collective(const ResolvedCollective& c);

  // Wakes every waiter; their calls throw ExecutionError.
  void abort();

 private:
  struct TransferState {
    const std::byte* data = nullptr;
    std::int64_t bytes = 0;
    bool posted = false;
    bool done = false;
  };
  struct CollectiveState {
    std::vector<const ResolvedCollective*> members;  // by group position
    int arrived = 0;
    int finished = 0;  // members that have read everything they need
  };
  void wait(std::unique_lock<std::mutex>& lock, const char* what, auto ready);

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<TransferState> transfers_;
  std::vector<CollectiveState> collectives_;
  bool aborted_ = false;
};

class InProcessCommBackend final : public CommBackend {
 public:
  InProcessCommBackend(InProcessHub& hub, const CommArgs& args) : hub_(hub), args_(args) {}

  void run(const Op& op, const RunClock& clock, std::vector<TransferEnd>& recv_ends) override;
  void abort() override { hub_.abort(); }

 private:
  InProcessHub& hub_;
  const CommArgs& args_;
};

}  // namespace meshsim
