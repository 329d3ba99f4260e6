#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/error.hpp"
#include "tools/precision_flag.hpp"

using namespace meshsim;

namespace {

StepPlan read(const std::vector<std::string>& argv, const std::string& hardware = "h100-sxm") {
  const Args args("step", {precision_option()}, argv);
  StepPlan p;
  read_precision(args, load_hardware(hardware), p);
  return p;
}

}  // namespace

TEST_CASE("--precision: bf16 by default, each recipe by its Transformer Engine name") {
  CHECK(read({}).precision == Precision::bf16);
  CHECK(read({"--precision", "fp8-delayed"}).precision == Precision::fp8_delayed);
  CHECK(read({"--precision", "fp8-current"}).precision == Precision::fp8_current);
  CHECK(read({"--precision", "mxfp8"}, "b200").precision == Precision::mxfp8);
  CHECK(read({"--precision", "nvfp4"}, "b200").precision == Precision::nvfp4);
  CHECK(precision_option().value_name == precision_names());
}

TEST_CASE("--precision: an unknown name lists the recipes; missing tensor cores name the flag") {
  CHECK_THROWS_WITH_AS(read({"--precision", "fp8"}),
                       "--precision expects one of "
                       "bf16|fp8-delayed|fp8-current|fp8-blockwise|mxfp8|nvfp4, got 'fp8'",
                       InputError);
  CHECK_THROWS_WITH_AS(read({"--precision", "fp8-current"}, "a100-sxm"),
                       doctest::Contains("--precision fp8-current: hardware profile 'a100-sxm' "
                                         "has no FP8 tensor cores"),
                       InputError);
}

TEST_CASE("--precision: the step's line names the format and the peak it runs at") {
  const HardwareProfile b200 = load_hardware("b200");
  StepPlan p;
  CHECK(precision_line(p, b200).empty());  // bf16: the output says nothing (unchanged)
  p.precision = Precision::nvfp4;
  // B200's dense FP4 peak: 9,000 TFLOP/s (NVIDIA's HGX B200 datasheet, sim/builtin_hardware.cpp).
  CHECK(precision_line(p, b200) ==
        "  precision nvfp4: QKV, projection and MLP GEMMs in nvfp4 on the FP4 peak 9000 TFLOP/s\n");
  p.precision = Precision::fp8_blockwise;
  CHECK(precision_line(p, b200) ==
        "  precision fp8-blockwise: QKV, projection and MLP GEMMs in fp8_block on the FP8 peak "
        "4500 TFLOP/s\n");
}
