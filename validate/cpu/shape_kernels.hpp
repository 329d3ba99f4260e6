#pragma once
// Kernels run for their time only: a KernelCall without tensor slots (a training-step Program, a
// calibration microbenchmark) runs the same kernels/cpu code the slot-backed runner calls, on
// scratch operands of the call's shape (zero-filled, reused per thread, grown on demand). Calls
// that name tensor slots go to the wrapped runner. Nothing here checks numerics: it is what makes
// every Program executable for timing, and what calibration times.
#include <memory>

#include "sim/program.hpp"
#include "validate/run/kernel_runner.hpp"

namespace meshsim {

// Whether a call names no tensor slot (it can only run on scratch operands).
bool runs_on_scratch(const KernelCall& call);

// Runs one call's kernel on this thread's scratch operands.
void run_kernel_on_scratch(const KernelCall& call);

class ShapeKernelRunner final : public KernelRunner {
 public:
  // slots: the runner for calls that name tensor slots (null: such a call is an error).
  explicit ShapeKernelRunner(std::unique_ptr<KernelRunner> slots = nullptr);
  void run(const Op& op, const KernelCall& call) override;

 private:
  std::unique_ptr<KernelRunner> slots_;
};

}  // namespace meshsim
