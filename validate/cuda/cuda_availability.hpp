#pragma once
// Whether `--backend cuda` can run here, decided before anything else happens: a build without
// the CUDA backend, a CUDA backend plugin that cannot be found or loaded (a missing libnccl, say),
// or a machine without a usable GPU (no device, or no driver at all: cudaGetDeviceCount then fails
// with "CUDA driver version is insufficient ..."), gets one clear line for the user and exit 2. The
// decision is a pure function of the probe's result, so the non-CUDA build tests every branch.
#include <optional>
#include <string>

namespace meshsim {

struct CudaProbe {
  bool built_with_cuda = false;
  std::string load_error;  // why the plugin (validate/cuda/cuda_plugin.hpp) did not load
  int status = 0;          // cudaGetDeviceCount's cudaError_t (0: cudaSuccess)
  std::string error;       // cudaGetErrorString(status) when status != 0
  int device_count = 0;    // devices this process sees (after CUDA_VISIBLE_DEVICES)
};

// Empty when the CUDA backend can run; otherwise the one line to print (without "error:"; the CLI
// says which flag asked for the backend).
std::optional<std::string> cuda_unavailable_message(const CudaProbe& probe);

// Asks the CUDA runtime through the plugin, loading it (in a build with the CUDA backend; otherwise
// built_with_cuda is false).
CudaProbe probe_cuda();

}  // namespace meshsim
