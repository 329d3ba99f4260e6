#include <dlfcn.h>
#include <doctest/doctest.h>
#include <link.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

#include "validate/cuda/cuda_plugin_loader.hpp"

using namespace meshsim;

namespace {

// The path of the C library this process loaded (a shared object every process has, without the
// plugin's factory). Found among the loaded objects by name, not through the address of a libc
// function: under a sanitizer that address may be the sanitizer's interceptor in the executable.
std::string loaded_libc() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (name.find("/libc.so") == std::string::npos) return 0;
        *static_cast<std::string*>(out) = name;
        return 1;
      },
      &found);
  return found;
}

}  // namespace

TEST_CASE("cuda plugin: $MESHSIM_CUDA_PLUGIN is the only place looked at when set") {
  CHECK(cuda_plugin_candidates("/opt/p/libx.so", "/usr/bin") ==
        std::vector<std::string>{"/opt/p/libx.so"});
}

TEST_CASE("cuda plugin: next to the program first, then the installed layout") {
  const auto files = cuda_plugin_candidates(nullptr, "/opt/meshsim/bin");
  REQUIRE(files.size() >= 2);
  CHECK(files[0] == "/opt/meshsim/bin/libmeshsim_cuda.so");
  CHECK(files[1] == "/opt/meshsim/lib/meshsim/libmeshsim_cuda.so");
  CHECK(cuda_plugin_candidates("", "/opt/meshsim/bin") == files);  // empty: unset
}

TEST_CASE("cuda plugin: none found names every place looked at") {
  const LoadedCudaPlugin loaded = load_cuda_plugin({"/nonexistent/a.so", "/nonexistent/b.so"});
  CHECK(loaded.plugin == nullptr);
  CHECK(loaded.error ==
        "the CUDA backend plugin libmeshsim_cuda.so was not found (looked for /nonexistent/a.so, "
        "/nonexistent/b.so); set MESHSIM_CUDA_PLUGIN to its path");
}

TEST_CASE("cuda plugin: a file that is no shared object is dlopen's reason, in one line") {
  const auto text = std::filesystem::temp_directory_path() / "meshsim-test-not-a-plugin.so";
  std::ofstream(text) << "not an ELF file\n";
  const LoadedCudaPlugin loaded = load_cuda_plugin({text.string()});
  std::filesystem::remove(text);
  CHECK(loaded.plugin == nullptr);
  CHECK(loaded.error.starts_with("cannot load the CUDA backend plugin " + text.string() + " (" +
                                 text.string() + ": "));
  CHECK(loaded.error.find('\n') == std::string::npos);
}

TEST_CASE("cuda plugin: a shared object without the factory is refused by name") {
  const std::string libc = loaded_libc();
  REQUIRE(!libc.empty());
  const LoadedCudaPlugin loaded = load_cuda_plugin({libc});
  CHECK(loaded.plugin == nullptr);
  CHECK(loaded.error ==
        libc + " is not a meshsim CUDA backend plugin (it has no meshsim_cuda_plugin_v1)");
}

#ifdef MESHSIM_CUDA_PLUGIN
TEST_CASE("cuda plugin: the build's plugin loads and is of this version") {
  const LoadedCudaPlugin& loaded = cuda_plugin();
  REQUIRE(loaded.plugin != nullptr);
  CHECK(loaded.plugin->version() == MESHSIM_VERSION);
  CHECK(loaded.plugin->probe().built_with_cuda);
}
#endif
