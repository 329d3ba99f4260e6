#include "tools/layer_kernels_flag.hpp"

namespace meshsim {

OptionSpec layer_kernels_option() {
  return {"--layer-kernels", "fused|torch-eager|torch-compile",
          "the kernels of the norms, RoPE, SwiGLU and grouped-query K/V: Megatron-Core's fused "
          "Transformer Engine kernels; PyTorch eager as torchtitan's Llama code runs them (RMSNorm "
          "and RoPE as chains of fp32 kernels, SiLU and the gate apart, K/V copied to every query "
          "head before SDPA); or the same under torch.compile (each chain one fused kernel, the "
          "K/V copy kept) [fused]"};
}

void read_layer_kernels(const Args& args, StepPlan& plan) {
  plan.layer_kernels = *parse_layer_kernels(
      args.get_choice("--layer-kernels", "fused", {"fused", "torch-eager", "torch-compile"}));
}

}  // namespace meshsim
