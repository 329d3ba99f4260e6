#pragma once
// Test helper: a RunWorld of N ranks as threads of this process (what MpiWorld is across
// processes), connected by the in-process communication backend, and a whole validation run on it.
#include <barrier>
#include <memory>
#include <thread>
#include <vector>

#include "sim/comm_plan.hpp"
#include "validate/run/inproc_comm.hpp"
#include "validate/run/validate_driver.hpp"

namespace meshsim::testing {

// A world of N ranks as threads of this process (what MpiWorld is across processes).
struct ThreadWorldShared {
  explicit ThreadWorldShared(int n, const CommPlan& plan)
      : size(n),
        barrier(n),
        hub(plan),
        values(static_cast<std::size_t>(n)),
        bytes(static_cast<std::size_t>(n)),
        flags(static_cast<std::size_t>(n)) {}
  int size;
  std::barrier<> barrier;
  InProcessHub hub;
  std::vector<std::vector<std::int64_t>> values;
  std::vector<std::vector<std::byte>> bytes;
  std::vector<char> flags;
};

class ThreadWorld final : public RunWorld {
 public:
  ThreadWorld(ThreadWorldShared& shared, int rank) : s_(shared), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return s_.size; }
  int ranks_per_node() const override { return s_.size; }
  std::string describe() const override { return "threads"; }
  void barrier() override { s_.barrier.arrive_and_wait(); }
  bool can_unwind() const override { return true; }
  std::vector<std::vector<std::int64_t>> gather(const std::vector<std::int64_t>& mine) override {
    return exchange(s_.values, mine);
  }
  std::vector<std::vector<std::byte>> gather_bytes(const std::vector<std::byte>& mine) override {
    return exchange(s_.bytes, mine);
  }
  bool all_true(bool mine) override {
    s_.flags[static_cast<std::size_t>(rank_)] = mine ? 1 : 0;
    barrier();
    bool all = true;
    for (char f : s_.flags) all = all && f != 0;
    barrier();
    return all;
  }
  [[noreturn]] void abort(int /*code*/) override { throw ExecutionError("abort"); }
  std::unique_ptr<CommBackend> make_comm(const Program&, const CommPlan&,
                                         const CommArgs& args) override {
    return std::make_unique<InProcessCommBackend>(s_.hub, args);
  }

 private:
  template <typename T>
  std::vector<T> exchange(std::vector<T>& slots, const T& mine) {
    slots[static_cast<std::size_t>(rank_)] = mine;
    barrier();
    std::vector<T> out;
    if (rank_ == 0) out = slots;
    barrier();
    return out;
  }
  ThreadWorldShared& s_;
  int rank_;
};

// run_validation on every rank of `program` as threads; returns each rank's result (rank 0's holds
// the gathered timeline and tensors).
inline std::vector<ValidateResult> validate_in_threads(const Program& program,
                                                       const TensorLayout& layout,
                                                       const ValidateOptions& options) {
  const CommPlan plan = validate_program(program);
  const int n = program.world_size();
  ThreadWorldShared shared(n, plan);
  std::vector<ValidateResult> results(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ThreadWorld world(shared, r);
      results[static_cast<std::size_t>(r)] = run_validation(program, plan, layout, world, options);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace meshsim::testing
