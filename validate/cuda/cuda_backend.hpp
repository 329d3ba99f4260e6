#pragma once
// The CUDA + NCCL backend of the validate mode (ARCHITECTURE.md §5), in the plugin
// libmeshsim_cuda.so (validate/cuda/cuda_plugin.hpp): one MPI process per GPU. A CudaBackend binds
// this process to its GPU (the local rank among the node's processes,
// validate/cuda/gpu_binding.hpp), creates a cudaStream_t and a cuBLAS handle per Program stream and
// the NCCL communicators of validate/cuda/nccl_plan.hpp (bootstrapped over MPI_COMM_WORLD), once
// for every run of the Program.
//
// run() replaces the host-thread Executor (ValidateOptions::run_rank): the rank's prepared
// TensorStore is uploaded into one device allocation (DeviceMemoryPlan), then one host thread walks
// launch_plan() in launch order: cudaStreamWaitEvent for each cross-stream dep, a start event, the
// kernel (validate/cuda/cuda_ops.hpp) or NCCL call (nccl_call()), an end event. The device applies
// the readiness rules itself (stream order, event waits); the single-queue rule is the launch
// order itself, which CUDA_DEVICE_MAX_CONNECTIONS=1 (set here for single-queue Programs unless
// the environment says otherwise) makes the hardware's order too. Once the device is idle the
// events become OpRecords (validate/cuda/event_timing.hpp) and the results are downloaded into the
// TensorStore, from where gathering, numerics and dumps proceed as on the CPU.
//
// No CUDA type appears here: the plugin's interface passes what use_cuda_backend returns.
#include <functional>
#include <memory>
#include <string>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"
#include "validate/cpu/cpu_kernel_runner.hpp"
#include "validate/run/executor.hpp"
#include "validate/run/rank_setup.hpp"
#include "validate/run/run_world.hpp"
#include "validate/run/validate_driver.hpp"

namespace meshsim {

struct CudaDevice {
  int index = 0;  // among the devices this process sees
  int local_rank = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
};

// Selects this process's GPU (cudaSetDevice) from its local rank; MPI must be initialized when the
// launcher gave no local rank in the environment.
CudaDevice bind_cuda_device();

class CudaBackend {
 public:
  // Collective over the MPI world (every rank constructs one; a one-rank Program needs no MPI).
  CudaBackend(const Program& program, const CommPlan& plan, int rank, InjectedFault fault);
  ~CudaBackend();
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  // One run of this rank's ops on its setup (see above); `align` is the barrier before timing.
  RankRun run(RankSetup& setup, const std::function<void()>& align);
  // "cuda+nccl (NVIDIA H100 80GB HBM3, device 0, NCCL 2.28.3)"
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Makes every run_validation() with these options run through one CudaBackend (created by the
// first run, collectively over the world). A failure is an ExecutionError where the world can
// unwind; otherwise options.report_failure (set before this call) prints it and the job is
// aborted, as NCCL calls of other ranks cannot be woken. Returns the backend's description for
// the report (valid after the first run).
std::function<std::string()> use_cuda_backend(ValidateOptions& options, const Program& program,
                                              const CommPlan& plan, RunWorld& world,
                                              InjectedFault fault);

}  // namespace meshsim
