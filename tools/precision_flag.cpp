#include "tools/precision_flag.hpp"

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

}  // namespace meshsim
