#pragma once
// Finds and opens the CUDA backend plugin (validate/cuda/cuda_plugin.hpp) on first use. Where it
// looks, in order: $MESHSIM_CUDA_PLUGIN when set (a file; then nowhere else); next to the program
// or Python module holding this code (the build puts the plugin next to meshsim); the installed
// library folder (<prefix>/lib/meshsim, also relative to the program's folder); the build folder.
#include <optional>
#include <string>
#include <vector>

#include "validate/cuda/cuda_plugin.hpp"

namespace meshsim {

inline constexpr const char* kCudaPluginFile = "libmeshsim_cuda.so";

// The files tried, in order (see above); `env` is $MESHSIM_CUDA_PLUGIN, `module_dir` the folder of
// the program or shared object holding this code.
std::vector<std::string> cuda_plugin_candidates(const char* env, const std::string& module_dir);

struct LoadedCudaPlugin {
  const CudaPlugin* plugin = nullptr;  // null: `error` says why
  std::string error;                   // one line, without "error:"
};

// Opens the first candidate that exists (dlopen, then the factory, then the version check).
LoadedCudaPlugin load_cuda_plugin(const std::vector<std::string>& candidates);

// This process's plugin: loaded once, on the first call, from cuda_plugin_candidates().
const LoadedCudaPlugin& cuda_plugin();

}  // namespace meshsim
