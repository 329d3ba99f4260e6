#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/error.hpp"
#include "tools/layer_kernels_flag.hpp"

using namespace meshsim;

namespace {

StepPlan read(const std::vector<std::string>& argv) {
  const Args args("step", {layer_kernels_option()}, argv);
  StepPlan p;
  read_layer_kernels(args, p);
  return p;
}

}  // namespace

TEST_CASE("--layer-kernels: Megatron-Core's fused kernels by default, PyTorch's on request") {
  CHECK(read({}).layer_kernels == LayerKernels::fused);
  CHECK(read({"--layer-kernels", "torch-eager"}).layer_kernels == LayerKernels::torch_eager);
  CHECK(read({"--layer-kernels", "torch-compile"}).layer_kernels == LayerKernels::torch_compile);
  CHECK(read({"--layer-kernels", "fused"}).layer_kernels == LayerKernels::fused);
}

TEST_CASE("--layer-kernels: another name is refused naming the flag") {
  CHECK_THROWS_WITH_AS(read({"--layer-kernels", "eager"}), doctest::Contains("--layer-kernels"),
                       InputError);
}
