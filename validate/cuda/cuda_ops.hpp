#pragma once
// The CUDA backend's kernel launches: each compute op's KernelCall on the rank's slots, as the CPU
// runner does it (validate/run/kernel_operands: same operands, shape checks, row lookups and
// injected faults), with the views' host addresses mapped to the device copy (DeviceMemoryPlan) and
// the kernels of kernels/cuda launched on the op's stream. Nothing waits for the device here.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "sim/program.hpp"
#include "validate/cuda/device_memory.hpp"
#include "validate/run/kernel_operands.hpp"
#include "validate/tensors/tensor_store.hpp"

namespace meshsim {

class CudaOps {
 public:
  CudaOps(TensorStore& store, const DeviceMemoryPlan& memory, std::byte* device_base,
          InjectedFault fault)
      : store_(store), memory_(memory), base_(device_base), fault_(fault) {}

  // `blas` is bound to `stream`.
  void launch(const Op& op, const KernelCall& call, cudaStream_t stream, cublasHandle_t blas);

 private:
  TensorStore& store_;
  const DeviceMemoryPlan& memory_;
  std::byte* base_;
  InjectedFault fault_;
};

}  // namespace meshsim
