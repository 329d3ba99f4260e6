#include "sim/quant_format.hpp"

#include <array>

#include "sim/enum_names.hpp"

namespace meshsim {
namespace {

constexpr std::array<std::string_view, kQuantFormatCount> kNames = {"none", "fp8", "fp8_block",
                                                                    "mxfp8", "nvfp4"};

}  // namespace

std::string_view to_string(QuantFormat f) {
  return enum_name(kNames, f);
}

std::optional<QuantFormat> parse_quant_format(std::string_view name) {
  return parse_enum_name<QuantFormat>(kNames, name);
}

double quant_element_bytes(QuantFormat f) {
  switch (f) {
    case QuantFormat::none:
      return 0;
    case QuantFormat::fp8:
      return 1;  // one fp32 scale per tensor: negligible
    case QuantFormat::fp8_block:
      return 1 + 4.0 / 128;  // an fp32 scale per 1 x 128 block
    case QuantFormat::mxfp8:
      return 1 + 1.0 / 32;  // an E8M0 (1-byte) scale per 32 elements
    case QuantFormat::nvfp4:
      return 0.5 + 1.0 / 16;  // 4-bit E2M1 values and an E4M3 (1-byte) scale per 16
  }
  return 0;
}

bool quant_uses_fp4(QuantFormat f) {
  return f == QuantFormat::nvfp4;
}

}  // namespace meshsim
