#include "validate/cuda/cuda_plugin_loader.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace meshsim {
namespace {

namespace fs = std::filesystem;

// The folder of the program or shared object this code was linked into: the meshsim executable
// (the main program has an empty link-map name: /proc/self/exe), or the Python module. Unused in
// a build without the plugin.
[[maybe_unused]] std::string module_dir() {
  Dl_info info{};
  link_map* map = nullptr;
  const auto self = reinterpret_cast<void*>(&module_dir);
  std::error_code ec;
  fs::path file;
  if (dladdr1(self, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0 &&
      map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0') {
    file = fs::weakly_canonical(map->l_name, ec);
  } else {
    file = fs::read_symlink("/proc/self/exe", ec);
  }
  return ec ? std::string() : file.parent_path().string();
}

}  // namespace

std::vector<std::string> cuda_plugin_candidates(const char* env, const std::string& dir) {
  if (env != nullptr && env[0] != '\0') return {env};
  std::vector<fs::path> folders;
  if (!dir.empty()) {
    folders.push_back(dir);
    folders.push_back(fs::path(dir).parent_path() / "lib" / "meshsim");
  }
#ifdef MESHSIM_CUDA_PLUGIN_INSTALL_DIR
  folders.push_back(MESHSIM_CUDA_PLUGIN_INSTALL_DIR);
#endif
#ifdef MESHSIM_CUDA_PLUGIN_BUILD_DIR
  folders.push_back(MESHSIM_CUDA_PLUGIN_BUILD_DIR);
#endif
  std::vector<std::string> files;
  for (const auto& f : folders) {
    const std::string file = (f / kCudaPluginFile).lexically_normal().string();
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
  }
  return files;
}

LoadedCudaPlugin load_cuda_plugin(const std::vector<std::string>& candidates) {
  LoadedCudaPlugin loaded;
  for (const auto& file : candidates) {
    std::error_code ec;
    if (!fs::exists(file, ec)) continue;
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed
    if (handle == nullptr) {
      const char* why = dlerror();
      // dlerror names the file that failed: the plugin, or a library it needs (libnccl.so.2).
      loaded.error = fmt::format("cannot load the CUDA backend plugin {} ({})", file,
                                 why ? why : "dlopen failed");
      return loaded;
    }
    const auto factory = reinterpret_cast<CudaPluginFactory>(dlsym(handle, kCudaPluginFactory));
    if (factory == nullptr) {
      loaded.error = fmt::format("{} is not a meshsim CUDA backend plugin (it has no {})", file,
                                 kCudaPluginFactory);
      return loaded;
    }
    const CudaPlugin* plugin = factory();
    if (plugin->version() != MESHSIM_VERSION) {
      loaded.error = fmt::format("{} is from meshsim {}, this is meshsim {}", file,
                                 plugin->version(), MESHSIM_VERSION);
      return loaded;
    }
    loaded.plugin = plugin;
    return loaded;
  }
  std::string tried;
  for (const auto& file : candidates) tried += (tried.empty() ? "" : ", ") + file;
  loaded.error = fmt::format(
      "the CUDA backend plugin {} was not found (looked for {}); set MESHSIM_CUDA_PLUGIN to its "
      "path",
      kCudaPluginFile, tried);
  return loaded;
}

const LoadedCudaPlugin& cuda_plugin() {
#ifdef MESHSIM_CUDA_PLUGIN
  static const LoadedCudaPlugin loaded =
      load_cuda_plugin(cuda_plugin_candidates(std::getenv("MESHSIM_CUDA_PLUGIN"), module_dir()));
#else
  static const LoadedCudaPlugin loaded{nullptr, "meshsim was built without CUDA"};
#endif
  return loaded;
}

}  // namespace meshsim
