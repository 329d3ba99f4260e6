#pragma once
// RunWorld over MPI: one process per rank, MpiCommBackend between them.
#include "validate/mpi/mpi_session.hpp"
#include "validate/run/run_world.hpp"

namespace meshsim {

class MpiWorld final : public RunWorld {
 public:
  MpiWorld() = default;  // initializes MPI (MpiSession)

  int rank() const override { return session_.rank(); }
  int size() const override { return session_.size(); }
  int ranks_per_node() const override { return session_.ranks_per_node(); }
  std::string describe() const override;
  void barrier() override { session_.barrier(); }
  std::vector<std::vector<std::int64_t>> gather(const std::vector<std::int64_t>& mine) override {
    return session_.gather(mine);
  }
  std::vector<std::vector<std::byte>> gather_bytes(const std::vector<std::byte>& mine) override {
    return session_.gather_bytes(mine);
  }
  bool can_unwind() const override { return false; }
  bool all_true(bool mine) override { return session_.all_true(mine); }
  [[noreturn]] void abort(int code) override { session_.abort(code); }
  std::unique_ptr<CommBackend> make_comm(const Program& program, const CommPlan& plan,
                                         const CommArgs& args) override;

 private:
  MpiSession session_;
};

}  // namespace meshsim
