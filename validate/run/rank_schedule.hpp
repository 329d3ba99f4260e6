#pragma once
// One rank's ops as an executor sees them (ARCHITECTURE.md §2): launch order (the order of the
// rank's ops in Program::ops), stream order (launch order restricted to a stream), and deps as
// local indices. Backend-neutral: the CPU executor runs a thread per stream over it, the CUDA
// backend issues it in launch order onto cudaStreams.
#include <vector>

#include "sim/program.hpp"

namespace meshsim {

struct ScheduledOp {
  OpId op = -1;
  StreamId stream = 0;
  int stream_prev = -1;   // local index of the op before it on its stream, -1 if first
  int stream_next = -1;   // local index of the op after it on its stream, -1 if last
  std::vector<int> deps;  // local indices of the ops it waits for (completion)
};

class RankSchedule {
 public:
  RankSchedule(const Program& program, int rank);

  int rank() const { return rank_; }
  bool single_queue() const { return single_queue_; }
  int size() const { return static_cast<int>(ops_.size()); }
  // Local index i is the i-th op this rank launches.
  const ScheduledOp& op(int i) const { return ops_[static_cast<std::size_t>(i)]; }
  // Local indices of the ops on `stream`, in stream order (empty if the rank never uses it).
  const std::vector<int>& stream(StreamId s) const { return streams_[static_cast<std::size_t>(s)]; }
  int stream_count() const { return static_cast<int>(streams_.size()); }
  // Local indices of the ops that list `i` among their deps (once per listing).
  const std::vector<int>& dependents(int i) const {
    return dependents_[static_cast<std::size_t>(i)];
  }
  int local_index(OpId op) const;

 private:
  int rank_;
  bool single_queue_;
  std::vector<ScheduledOp> ops_;
  std::vector<std::vector<int>> streams_;
  std::vector<std::vector<int>> dependents_;
  std::vector<int> local_of_op_;  // indexed by OpId; -1 for other ranks' ops
};

}  // namespace meshsim
