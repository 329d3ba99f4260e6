#pragma once
// The CPU backend's KernelRunner: runs each compute op's KernelCall with kernels/cpu on the
// rank's TensorStore (ARCHITECTURE.md §5), single-threaded BLAS per call so streams and ranks
// sharing a machine do not oversubscribe it. An injected fault (a test flag) makes one kernel kind
// compute something slightly wrong, so the numerics check can be seen to FAIL.
#include <cstdint>
#include <optional>
#include <string_view>

#include "sim/program.hpp"
#include "validate/run/kernel_operands.hpp"
#include "validate/run/kernel_runner.hpp"
#include "validate/tensors/tensor_store.hpp"

namespace meshsim {

class CpuKernelRunner final : public KernelRunner {
 public:
  CpuKernelRunner(TensorStore& store, InjectedFault fault = InjectedFault::none);
  void run(const Op& op, const KernelCall& call) override;

 private:
  TensorStore& store_;
  InjectedFault fault_;
};

}  // namespace meshsim
