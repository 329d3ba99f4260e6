#pragma once
// The language-model loss over the output head's logits, as the two implementations that training
// stacks use compute it. Both are unfused chains of memory-bound passes over the s·b·V/t logits of
// a microbatch; they differ in the fp32 tensors they keep, hence in memory.
//
//   vocab-parallel  Megatron-LM's vocab_parallel_cross_entropy
//                   (megatron/core/tensor_parallel/cross_entropy.py): logits cast to fp32, the max
//                   subtracted, exp and the normalisation done in place, the softmax saved for the
//                   backward, whose gradient is computed in place and cast back to bf16.
//   torch-fp32      PyTorch's F.cross_entropy on logits upcast to fp32, as torchtitan
//                   (torchtitan/components/loss.py: cross_entropy(pred.flatten(0, 1).float(), ...))
//                   and Hugging Face's default loss do: log_softmax (output saved) + nll_loss;
//                   nll_loss's backward writes a dense fp32 gradient and log_softmax's backward a
//                   second one, both alive beside the saved output.
#include <cstdint>
#include <optional>
#include <string_view>

namespace meshsim {

enum class CrossEntropy : std::uint8_t { vocab_parallel, torch_fp32 };
std::string_view to_string(CrossEntropy c);  // "vocab-parallel", "torch-fp32"
std::optional<CrossEntropy> parse_cross_entropy(std::string_view s);

// Bytes each pass moves per logit, forward and backward, beyond reading the bf16/fp16 logits and
// writing their gradient in the same dtype (the two operands of the loss kernel): the fp32 passes
// listed in cross_entropy.cpp.
std::int32_t cross_entropy_fp32_bytes_per_logit(CrossEntropy c);

// Memory per logit element: kept from the forward to the backward (the fp32 softmax /
// log-softmax output), and the further transient of the loss backward.
double cross_entropy_saved_bytes_per_logit(CrossEntropy c);
double cross_entropy_working_bytes_per_logit(CrossEntropy c);

}  // namespace meshsim
