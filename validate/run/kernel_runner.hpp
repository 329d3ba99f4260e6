#pragma once
// How an executor runs a compute op: a backend's KernelRunner turns the op's KernelCall into a
// kernel launch on the tensors it was constructed with (the CPU runner calls kernels/cpu on a
// TensorStore; a CUDA runner would launch on device buffers). run() returns when the kernel's
// results are in place. Runners are called concurrently from several stream threads.
#include <chrono>

#include "sim/program.hpp"

namespace meshsim {

class KernelRunner {
 public:
  KernelRunner() = default;
  KernelRunner(const KernelRunner&) = delete;
  KernelRunner& operator=(const KernelRunner&) = delete;
  virtual ~KernelRunner() = default;

  virtual void run(const Op& op, const KernelCall& call) = 0;
};

// Runs nothing: executes a Program's scheduling and communication only.
class NullKernelRunner final : public KernelRunner {
 public:
  void run(const Op& /*op*/, const KernelCall& /*call*/) override {}
};

// Sleeps a fixed time per kernel (a stand-in with a visible duration in traces and tests).
class SleepKernelRunner final : public KernelRunner {
 public:
  explicit SleepKernelRunner(std::chrono::nanoseconds duration) : duration_(duration) {}
  void run(const Op& op, const KernelCall& call) override;

 private:
  std::chrono::nanoseconds duration_;
};

}  // namespace meshsim
