#include <doctest/doctest.h>

#include "schedules/precision.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"

using namespace meshsim;

TEST_CASE("precision: Transformer Engine's recipe names round trip") {
  for (int i = 0; i < kPrecisionCount; ++i) {
    const auto p = static_cast<Precision>(i);
    CHECK(parse_precision(to_string(p)) == p);
  }
  CHECK(precision_names() == "bf16|fp8-delayed|fp8-current|fp8-blockwise|mxfp8|nvfp4");
  CHECK_FALSE(parse_precision("fp8").has_value());
}

TEST_CASE("precision: each recipe's format, amax pass and gathers (TE's recipes)") {
  CHECK(linear_format(Precision::bf16) == QuantFormat::none);
  CHECK(linear_format(Precision::fp8_delayed) == QuantFormat::fp8);
  CHECK(linear_format(Precision::fp8_current) == QuantFormat::fp8);
  CHECK(linear_format(Precision::fp8_blockwise) == QuantFormat::fp8_block);
  CHECK(linear_format(Precision::mxfp8) == QuantFormat::mxfp8);
  CHECK(linear_format(Precision::nvfp4) == QuantFormat::nvfp4);
  // Delayed scaling takes the scale from the history; current scaling and NVFP4's per-tensor
  // scale need the tensor's amax first; block scales come out of the cast itself.
  CHECK_FALSE(casts_after_amax(Precision::fp8_delayed));
  CHECK(casts_after_amax(Precision::fp8_current));
  CHECK(casts_after_amax(Precision::nvfp4));
  CHECK_FALSE(casts_after_amax(Precision::mxfp8));
  CHECK_FALSE(casts_after_amax(Precision::fp8_blockwise));
  // TE forces a high-precision TP all-gather for Float8BlockQuantizer only.
  CHECK_FALSE(gathers_quantized(Precision::fp8_blockwise));
  CHECK(gathers_quantized(Precision::mxfp8));
  // torchtitan's float8 FSDP all-gather: tensorwise dynamic (current) scaling.
  CHECK(fsdp_gathers_quantized(Precision::fp8_current));
  CHECK_FALSE(fsdp_gathers_quantized(Precision::mxfp8));
}

TEST_CASE("precision: a profile without the tensor cores is refused naming the flag") {
  const HardwareProfile a100 = load_hardware("a100-sxm");
  CHECK_NOTHROW(check_precision_hardware(Precision::bf16, a100, "--precision"));
  CHECK_THROWS_WITH_AS(check_precision_hardware(Precision::fp8_delayed, a100, "--precision"),
                       doctest::Contains("--precision fp8-delayed: hardware profile 'a100-sxm' "
                                         "has no FP8 tensor cores"),
                       InputError);
  const HardwareProfile h100 = load_hardware("h100-sxm");
  CHECK_NOTHROW(check_precision_hardware(Precision::fp8_current, h100, "--precision"));
  CHECK_THROWS_WITH_AS(check_precision_hardware(Precision::nvfp4, h100, "--precision"),
                       doctest::Contains("no FP4 tensor cores"), InputError);
  CHECK_NOTHROW(check_precision_hardware(Precision::nvfp4, load_hardware("b200"), "--precision"));
}
