#include "schedules/precision.hpp"

#include <array>

#include <fmt/format.h>

#include "sim/enum_names.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"

namespace meshsim {
namespace {

constexpr std::array<std::string_view, kPrecisionCount> kNames = {
    "bf16", "fp8-delayed", "fp8-current", "fp8-blockwise", "mxfp8", "nvfp4"};

}  // namespace

std::string_view to_string(Precision p) {
  return enum_name(kNames, p);
}

std::optional<Precision> parse_precision(std::string_view name) {
  return parse_enum_name<Precision>(kNames, name);
}

std::string precision_names() {
  std::string s;
  for (const auto name : kNames) s += fmt::format("{}{}", s.empty() ? "" : "|", name);
  return s;
}

double saved_linear_input_bytes(Precision p, double e) {
  const double q = quant_element_bytes(linear_format(p));
  return q > 0 ? q : e;
}

QuantFormat linear_format(Precision p) {
  switch (p) {
    case Precision::bf16:
      return QuantFormat::none;
    case Precision::fp8_delayed:
    case Precision::fp8_current:
      return QuantFormat::fp8;
    case Precision::fp8_blockwise:
      return QuantFormat::fp8_block;
    case Precision::mxfp8:
      return QuantFormat::mxfp8;
    case Precision::nvfp4:
      return QuantFormat::nvfp4;
  }
  return QuantFormat::none;
}

bool casts_after_amax(Precision p) {
  return p == Precision::fp8_current || p == Precision::nvfp4;
}

bool gathers_quantized(Precision p) {
  return p != Precision::bf16 && p != Precision::fp8_blockwise;
}

bool fsdp_gathers_quantized(Precision p) {
  return p == Precision::fp8_current;
}

void check_precision_hardware(Precision p, const HardwareProfile& hardware, std::string_view flag) {
  const QuantFormat f = linear_format(p);
  if (f == QuantFormat::none) return;
  const bool fp4 = quant_uses_fp4(f);
  if ((fp4 ? hardware.fp4_flops : hardware.fp8_flops) > 0) return;
  throw InputError(fmt::format(
      "{} {}: hardware profile '{}' has no {} tensor cores (peak_tflops.{} is not set); use "
      "--precision bf16{}",
      flag, to_string(p), hardware.name, fp4 ? "FP4" : "FP8", fp4 ? "fp4" : "fp8",
      !fp4 || hardware.fp8_flops <= 0 ? "" : " or an FP8 recipe"));
}

}  // namespace meshsim
