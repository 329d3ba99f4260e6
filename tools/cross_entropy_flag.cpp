#include "tools/cross_entropy_flag.hpp"

namespace meshsim {

OptionSpec cross_entropy_option() {
  return {"--cross-entropy", "vocab-parallel|torch-fp32",
          "the loss: Megatron-LM's vocab-parallel cross entropy (fp32 softmax kept, gradient in "
          "place), or PyTorch's cross_entropy on fp32-upcast logits as torchtitan and Hugging "
          "Face run it (log-softmax kept, two fp32 gradients in its backward) [vocab-parallel; "
          "torch-fp32 with --recompute selective-op, torchtitan's policy and loss]"};
}

std::optional<CrossEntropy> given_cross_entropy(const Args& args) {
  if (!args.has("--cross-entropy")) return std::nullopt;
  return parse_cross_entropy(
      args.get_choice("--cross-entropy", "vocab-parallel", {"vocab-parallel", "torch-fp32"}));
}

void read_cross_entropy(const Args& args, StepPlan& plan) {
  plan.cross_entropy = given_cross_entropy(args).value_or(default_cross_entropy(plan.recompute));
}

}  // namespace meshsim
