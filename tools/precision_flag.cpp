#include "tools/precision_flag.hpp"

#include <fmt/format.h>

namespace meshsim {

OptionSpec precision_option() {
  return {"--precision", precision_names(),
          "the layers' linears (QKV, projection, MLP; not the embedding or head) as Transformer "
          "Engine's recipes: FP8 with delayed or current (tensorwise) scaling, blockwise (1x128) "
          "FP8, MXFP8 or NVFP4 on the profile's FP8 / FP4 peak, with their casts, amax and scale "
          "updates, quantized TP all-gathers and weight copies [bf16]"};
}

void read_precision(const Args& args, const HardwareProfile& hardware, StepPlan& plan) {
  plan.precision = *parse_precision(
      args.get_choice("--precision", "bf16",
                      {"bf16", "fp8-delayed", "fp8-current", "fp8-blockwise", "mxfp8", "nvfp4"}));
  check_precision_hardware(plan.precision, hardware, "--precision");
}

std::string precision_line(const StepPlan& plan, const HardwareProfile& hardware) {
  if (plan.precision == Precision::bf16) return "";
  const QuantFormat f = linear_format(plan.precision);
  const bool fp4 = quant_uses_fp4(f);
  return fmt::format(
      "  precision {}: QKV, projection and MLP GEMMs in {} on the {} peak {:.0f} TFLOP/s\n",
      to_string(plan.precision), to_string(f), fp4 ? "FP4" : "FP8",
      (fp4 ? hardware.fp4_flops : hardware.fp8_flops) / 1e12);
}

}  // namespace meshsim
