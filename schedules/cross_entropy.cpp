#include "schedules/cross_entropy.hpp"

#include <array>

#include "sim/enum_names.hpp"

namespace meshsim {
namespace {

constexpr std::array<std::string_view, 2> kNames = {"vocab-parallel", "torch-fp32"};

}  // namespace

std::string_view to_string(CrossEntropy c) {
  return enum_name(kNames, c);
}
std::optional<CrossEntropy> parse_cross_entropy(std::string_view s) {
  return parse_enum_name<CrossEntropy>(kNames, s);
}

std::int32_t cross_entropy_fp32_bytes_per_logit(CrossEntropy c) {
  switch (c) {
    case CrossEntropy::vocab_parallel:
      // Forward: .float() writes 4; max reads 4; in-place subtract reads and writes 8; in-place
      // exp 8; sum reads 4; in-place division by the sum 8. Backward: the in-place multiply by
      // the output gradient 8; the cast back reads 4. 4 + 4 + 8 + 8 + 4 + 8 + 8 + 4 = 48.
      return 48;
    case CrossEntropy::torch_fp32:
      // Forward: .float() writes 4; log_softmax over a long row reads it three times (max, sum
      // of exp, output) and writes 4: 16. Backward: nll_loss's zero-filled dense gradient writes
      // 4; log_softmax's backward reads the gradient twice (its sum, then the update) and the
      // saved output once and writes 4: 16; the cast back reads 4. 4 + 16 + 4 + 16 + 4 = 44.
      return 44;
  }
  return 48;
}

double cross_entropy_saved_bytes_per_logit(CrossEntropy /*c*/) {
  // Both keep one fp32 tensor of the logits' shape: Megatron's softmax (exp_logits, saved for
  // backward), PyTorch's log_softmax output (its backward's input). Korthikanti et al. 2022 count
  // the same 4·s·b·v/t.
  return 4;
}

double cross_entropy_working_bytes_per_logit(CrossEntropy c) {
  // Megatron computes the gradient in place in the saved softmax (its bf16 cast is what the head's
  // backward consumes, counted with the head). PyTorch: nll_loss_backward's dense fp32 gradient
  // and log_softmax_backward's fp32 result, 4 + 4, beside the saved output.
  return c == CrossEntropy::torch_fp32 ? 8 : 0;
}

}  // namespace meshsim
