// libmeshsim_cuda.so's entry point (validate/cuda/cuda_plugin.hpp): the CudaPlugin over this
// folder's CUDA backend, returned by the one exported symbol.
#include "validate/cuda/cuda_plugin.hpp"

#include <cuda_runtime_api.h>

#include "validate/cuda/cuda_backend.hpp"
#include "validate/cuda/cuda_calibration.hpp"

namespace meshsim {
namespace {

class CudaBackendPlugin final : public CudaPlugin {
 public:
  std::string version() const override { return MESHSIM_VERSION; }

  CudaProbe probe() const override {
    CudaProbe probe;
    probe.built_with_cuda = true;
    int count = 0;
    const cudaError_t rc = cudaGetDeviceCount(&count);
    probe.status = static_cast<int>(rc);
    if (rc != cudaSuccess) {
      probe.error = cudaGetErrorString(rc);
      (void)cudaGetLastError();  // later calls must not report it again
    } else {
      probe.device_count = count;
    }
    return probe;
  }

  std::function<std::string()> use_backend(ValidateOptions& options, const Program& program,
                                           const CommPlan& plan, RunWorld& world,
                                           InjectedFault fault) const override {
    return use_cuda_backend(options, program, plan, world, fault);
  }

  void run_calibration(const CalibrationOptions& options, CalibrationRun& run) const override {
    run_cuda_calibration(options, run);
  }
};

}  // namespace
}  // namespace meshsim

extern "C" __attribute__((visibility("default"))) const meshsim::CudaPlugin*
meshsim_cuda_plugin_v1() {
  static const meshsim::CudaBackendPlugin plugin;
  return &plugin;
}
