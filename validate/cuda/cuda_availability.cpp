#include "validate/cuda/cuda_availability.hpp"

#include <fmt/format.h>

#ifdef MESHSIM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace meshsim {

std::optional<std::string> cuda_unavailable_message(const CudaProbe& probe) {
  if (!probe.built_with_cuda) {
    return std::string("meshsim was built without CUDA (configure with -DMESHSIM_CUDA=ON)");
  }
  if (probe.status != 0) {
    return fmt::format("no CUDA device visible (cudaGetDeviceCount: {})", probe.error);
  }
  if (probe.device_count <= 0) {
    return std::string(
        "no CUDA device visible (cudaGetDeviceCount: 0 devices; check "
        "CUDA_VISIBLE_DEVICES and the job's GPU allocation)");
  }
  return std::nullopt;
}

CudaProbe probe_cuda() {
  CudaProbe probe;
#ifdef MESHSIM_HAVE_CUDA
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
#endif
  return probe;
}

}  // namespace meshsim
