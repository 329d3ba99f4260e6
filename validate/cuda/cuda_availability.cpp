#include "validate/cuda/cuda_availability.hpp"

#include <fmt/format.h>

#include "validate/cuda/cuda_plugin_loader.hpp"

namespace meshsim {

std::optional<std::string> cuda_unavailable_message(const CudaProbe& probe) {
  if (!probe.built_with_cuda) {
    return std::string("meshsim was built without CUDA (configure with -DMESHSIM_CUDA=ON)");
  }
  if (!probe.load_error.empty()) return probe.load_error;
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
#ifdef MESHSIM_CUDA_PLUGIN
  const LoadedCudaPlugin& loaded = cuda_plugin();
  if (loaded.plugin != nullptr) return loaded.plugin->probe();
  CudaProbe probe;
  probe.built_with_cuda = true;
  probe.load_error = loaded.error;
  return probe;
#else
  return {};
#endif
}

}  // namespace meshsim
