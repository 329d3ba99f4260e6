#include <doctest/doctest.h>

#include "validate/cuda/cuda_availability.hpp"

using namespace meshsim;

TEST_CASE("cuda availability: a build without CUDA says how to get it") {
  CudaProbe probe;
  probe.built_with_cuda = false;
  CHECK(cuda_unavailable_message(probe) ==
        "meshsim was built without CUDA (configure with -DMESHSIM_CUDA=ON)");
}

TEST_CASE("cuda availability: no driver or no device is one line naming the runtime's answer") {
  CudaProbe no_driver;
  no_driver.built_with_cuda = true;
  no_driver.status = 35;  // cudaErrorInsufficientDriver
  no_driver.error = "CUDA driver version is insufficient for CUDA runtime version";
  CHECK(cuda_unavailable_message(no_driver) ==
        "no CUDA device visible (cudaGetDeviceCount: CUDA driver version is "
        "insufficient for CUDA runtime version)");
  CudaProbe none;
  none.built_with_cuda = true;
  none.device_count = 0;
  const auto why = cuda_unavailable_message(none);
  REQUIRE(why);
  CHECK(why->starts_with("no CUDA device visible (cudaGetDeviceCount: 0 devices"));
  CHECK(why->find('\n') == std::string::npos);
  CudaProbe ok;
  ok.built_with_cuda = true;
  ok.device_count = 8;
  CHECK_FALSE(cuda_unavailable_message(ok));
}

TEST_CASE("cuda availability: a plugin that did not load is its loader's one line") {
  CudaProbe probe;
  probe.built_with_cuda = true;
  probe.load_error = "the CUDA backend plugin libmeshsim_cuda.so was not found (looked for /x)";
  CHECK(cuda_unavailable_message(probe) == probe.load_error);
}

TEST_CASE("cuda availability: the probe matches the build") {
  const CudaProbe probe = probe_cuda();
#ifdef MESHSIM_CUDA_PLUGIN
  // The build's plugin (next to meshsim, found through the build folder) loads in this process.
  CHECK(probe.built_with_cuda);
  CHECK(probe.load_error == "");
#else
  CHECK_FALSE(probe.built_with_cuda);
  CHECK(cuda_unavailable_message(probe));
#endif
}
