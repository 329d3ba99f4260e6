#pragma once
// The CUDA + NCCL backend as a plugin (ARCHITECTURE.md §5): libmeshsim_cuda.so, built from
// validate/cuda's CUDA sources with the CUDA runtime (static), cuBLAS and NCCL, is opened with
// dlopen only when a command asks for `--backend cuda` (validate/cuda/cuda_plugin_loader.hpp), so
// meshsim and the Python module link none of those libraries and start in milliseconds.
//
// The interface is this class: the plugin's one exported symbol, kCudaPluginFactory, is a
// function with C linkage that returns the plugin's CudaPlugin (a static object, never freed). Both
// sides are built from the same sources by the same compiler in one build, and the loader refuses
// a plugin whose version() differs from the core's MESHSIM_VERSION.
#include <functional>
#include <string>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"
#include "validate/cuda/cuda_availability.hpp"
#include "validate/run/kernel_operands.hpp"
#include "validate/run/run_world.hpp"
#include "validate/run/validate_driver.hpp"

namespace meshsim {

struct CalibrationOptions;
struct CalibrationRun;

class CudaPlugin {
 public:
  virtual ~CudaPlugin() = default;
  // The MESHSIM_VERSION the plugin was built with.
  virtual std::string version() const = 0;
  // cudaGetDeviceCount's answer (validate/cuda/cuda_availability.hpp).
  virtual CudaProbe probe() const = 0;
  // use_cuda_backend (validate/cuda/cuda_backend.hpp).
  virtual std::function<std::string()> use_backend(ValidateOptions& options, const Program& program,
                                                   const CommPlan& plan, RunWorld& world,
                                                   InjectedFault fault) const = 0;
  // run_cuda_calibration (validate/cuda/cuda_calibration.hpp).
  virtual void run_calibration(const CalibrationOptions& options, CalibrationRun& run) const = 0;
};

// The factory's name in the plugin (the "v1" names this interface; a changed interface gets a new
// name, so an old plugin is refused by name, before any call).
inline constexpr const char* kCudaPluginFactory = "meshsim_cuda_plugin_v1";
using CudaPluginFactory = const CudaPlugin* (*)();

}  // namespace meshsim
