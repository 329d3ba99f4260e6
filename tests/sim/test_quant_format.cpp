#include <doctest/doctest.h>

#include "sim/quant_format.hpp"

using namespace meshsim;

TEST_CASE("quant formats: names round trip, unknown names are refused") {
  for (const auto f : {QuantFormat::none, QuantFormat::fp8, QuantFormat::fp8_block,
                       QuantFormat::mxfp8, QuantFormat::nvfp4}) {
    CHECK(parse_quant_format(to_string(f)) == f);
  }
  CHECK_FALSE(parse_quant_format("fp6").has_value());
}

TEST_CASE("quant formats: bytes per element with their scales") {
  // Per-tensor FP8: 1 byte, one fp32 scale per tensor (not per element).
  CHECK(quant_element_bytes(QuantFormat::fp8) == 1.0);
  // Blockwise FP8: one fp32 (4-byte) scale per 128 values.
  CHECK(quant_element_bytes(QuantFormat::fp8_block) == doctest::Approx(1.03125));
  // MXFP8: one E8M0 byte per 32 values.
  CHECK(quant_element_bytes(QuantFormat::mxfp8) == doctest::Approx(1.03125));
  // NVFP4: 4 bits per value and one E4M3 byte per 16 values: 0.5 + 0.0625.
  CHECK(quant_element_bytes(QuantFormat::nvfp4) == doctest::Approx(0.5625));
  CHECK(quant_element_bytes(QuantFormat::none) == 0.0);
  CHECK(quant_uses_fp4(QuantFormat::nvfp4));
  CHECK_FALSE(quant_uses_fp4(QuantFormat::mxfp8));
}
