#pragma once
// One validation run on every rank of a RunWorld (ARCHITECTURE.md §5), backend-neutral: set up the
// rank (schedule, tensors, seeded inputs, communication arguments), agree that every rank is ready,
// connect the ranks, run the executor after a barrier, and gather to rank 0 the op records (as a
// measured Timeline), the memory per rank and, when asked, the unsharded tensors.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/error.hpp"
#include "sim/program.hpp"
#include "sim/timeline.hpp"
#include "validate/run/executor.hpp"
#include "validate/run/kernel_runner.hpp"
#include "validate/run/rank_setup.hpp"
#include "validate/run/run_world.hpp"
#include "validate/tensors/global_tensors.hpp"
#include "validate/tensors/input_fill.hpp"
#include "validate/tensors/tensor_layout.hpp"
#include "validate/tensors/tensor_store.hpp"

namespace meshsim {

struct ValidateOptions {
  std::uint64_t seed = 1;
  std::chrono::milliseconds stall_timeout{0};  // 0: wait forever
  bool gather_tensors = false;
  // What runs this rank's compute ops, made once its tensors exist. Unset: NullKernelRunner.
  std::function<std::unique_ptr<KernelRunner>(TensorStore&)> make_kernels;
  // In a world that cannot unwind, called with a one-line description of this rank's failure
  // right before the job is aborted.
  std::function<void(const std::string&)> report_failure;
  // A device backend's issuer (the CUDA backend): runs this rank's ops on its prepared setup,
  // calling `align` once (the barrier) right before the timed part, and leaves the results in the
  // setup's TensorStore. Unset: the host-thread Executor with make_kernels and world.make_comm.
  std::function<RankRun(RankSetup& setup, const std::function<void()>& align)> run_rank;
};

struct ValidateResult {
  bool root = false;  // rank 0; the gathered fields are filled only there
  RankRun local;      // this rank's records
  FillSummary fill;   // this rank's inputs
  Timeline timeline;
  std::vector<std::int64_t> memory_bytes;  // per rank: tensor slots + scratch
  std::vector<GlobalTensorData> tensors;   // gather_tensors
};

// A rank's setup failed (every rank throws it); report() is true on the ranks that should print
// it (rank 0 when it failed itself, otherwise the failing ranks).
class SetupError : public InputError {
 public:
  SetupError(const std::string& what, bool report) : InputError(what), report_(report) {}
  bool report() const { return report_; }

 private:
  bool report_;
};

// Collective over the world. The world's size must equal the Program's ranks (checked).
// "rank R: what", unless `what` already starts with that prefix (a message from a rank's own
// setup), so a failure is never reported as "rank 0: rank 0: ...".
std::string on_rank(int rank, std::string_view what);

ValidateResult run_validation(const Program& program, const CommPlan& plan,
                              const TensorLayout& layout, RunWorld& world,
                              const ValidateOptions& options);

}  // namespace meshsim
