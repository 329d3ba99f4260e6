#pragma once
// MPI and NCCL require the collectives of one communicator to be issued in the same order on
// every member. The CommPlan numbers a group's collectives (the k-th of each member form instance
// k); with a thread per stream, two streams of a rank could reach collectives of one group at the
// same time, so this gate lets the k-th be issued only after the (k-1)-th was. Under the single
// hardware queue the executor already dispatches in launch order and the gate never waits.
#include <condition_variable>
#include <mutex>
#include <vector>

#include "sim/program.hpp"

namespace meshsim {

class GroupIssueOrder {
 public:
  explicit GroupIssueOrder(std::size_t groups) : next_(groups, 0) {}

  // Blocks until collectives 0 .. ordinal-1 of `group` were issued on this rank; returns false if
  // aborted meanwhile.
  bool wait_turn(GroupId group, int ordinal);
  // The ordinal-th collective of `group` was issued: the next may go.
  void issued(GroupId group);
  void abort();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> next_;
  bool aborted_ = false;
};

}  // namespace meshsim
