#pragma once
// RunWorld of a single process without MPI, for Programs of one rank (which have no peers to
// talk to; a collective on a one-rank group still runs, through the in-process backend).
#include <memory>

#include "validate/run/inproc_comm.hpp"
#include "validate/run/run_world.hpp"

namespace meshsim {

class SoloWorld final : public RunWorld {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int ranks_per_node() const override { return 1; }
  std::string describe() const override { return "cpu (one process, no MPI)"; }
  void barrier() override {}
  std::vector<std::vector<std::int64_t>> gather(const std::vector<std::int64_t>& mine) override {
    return {mine};
  }
  std::vector<std::vector<std::byte>> gather_bytes(const std::vector<std::byte>& mine) override {
    return {mine};
  }
  bool can_unwind() const override { return true; }
  bool all_true(bool mine) override { return mine; }
  [[noreturn]] void abort(int code) override;
  std::unique_ptr<CommBackend> make_comm(const Program& program, const CommPlan& plan,
                                         const CommArgs& args) override;

 private:
  std::unique_ptr<InProcessHub> hub_;
};

}  // namespace meshsim
