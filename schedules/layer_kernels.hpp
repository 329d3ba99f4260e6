#pragma once
// The kernels a training stack runs for a transformer layer's operators other than the matmuls
// and the attention core: the norms, the rotary position embedding, the gated activation and the
// expansion of grouped-query K/V heads. Three implementations, each counted pass by pass from its
// code in layer_kernels.cpp:
//
//   fused          Megatron-Core with Transformer Engine: one fused kernel per operator (TE's
//                  RMSNorm/LayerNorm, fused RoPE, the fused SwiGLU/bias-GELU), and grouped-query
//                  attention passed to the attention kernel as it is (no K/V copy).
//   torch-eager    PyTorch eager mode as torchtitan's Llama model writes the operators
//                  (torchtitan/models/llama/model.py, torchtitan/models/norms.py): RMSNorm as
//                  x.float() -> pow -> mean -> rsqrt -> mul -> type_as -> mul by the weight, each a
//                  kernel; RoPE as complex multiplication on an fp32 copy; SiLU and the gate
//                  multiplication apart; repeat_kv copying K and V to every query head before SDPA.
//                  Autograd runs the backward of each of those kernels.
//   torch-compile  the same model under torch.compile: Inductor fuses each chain of point-wise
//                  and reduction operators into one generated kernel (counted as the fused
//                  kernels), but SDPA is an external kernel, so repeat_kv's expanded K and V are
//                  still written out.
//
// A LayerNorm is one ATen kernel in eager mode too (nn.LayerNorm), and a non-gated activation one
// kernel (nn.GELU): both cost as fused in every implementation.
#include <cstdint>
#include <optional>
#include <string_view>

#include "schedules/model_catalog.hpp"

namespace meshsim {

enum class LayerKernels : std::uint8_t { fused, torch_eager, torch_compile };
std::string_view to_string(LayerKernels k);  // "fused", "torch-eager", "torch-compile"
std::optional<LayerKernels> parse_layer_kernels(std::string_view s);

// What one operator's kernels move per element of its activation: `operands` passes in the
// activation dtype (read or written) plus `fp32_bytes` of fp32 intermediates.
struct PassBytes {
  std::int32_t operands = 2;
  std::int32_t fp32_bytes = 0;
  bool operator==(const PassBytes&) const = default;
};

// A norm over the layer's hidden width (per element of the tokens x h input).
PassBytes norm_pass(LayerKernels k, NormKind norm, bool backward);
// SwiGLU's SiLU and gate multiplication (per element of the tokens x ffn output).
PassBytes gated_activation_pass(LayerKernels k, bool backward);
// RoPE on Q and K (per element of the rotated tensors).
PassBytes rope_pass(LayerKernels k, bool backward);
// Whether the implementation copies K and V to every query head before the attention kernel
// (torchtitan's repeat_kv), so that the attention kernel and a CP ring see heads_q K/V heads.
bool repeats_kv_heads(LayerKernels k);
// The K/V heads the attention kernel (and a CP ring) receives: every query head's when the
// implementation repeats them (not for MLA, whose K/V are per head already), else the model's.
std::int64_t attention_kv_heads(const TransformerModel& m, LayerKernels k);
// Whether the expanded K and V are what the attention's backward keeps (eager autograd saves
// SDPA's inputs; Inductor's partitioner keeps the smaller tensors and repeats the cheap copy).
bool saves_repeated_kv(LayerKernels k);

// Activation bytes the implementation keeps for the backward beyond the fused kernels' (which
// keep a norm's input and the gated activation's two inputs), per element of the tensors named:
// eager RMSNorm keeps its fp32 upcast and its bf16 normalized output (4 more bytes per element);
// eager SwiGLU keeps SiLU's input and output and the gate (2 more per element of tokens x ffn).
double extra_saved_bytes_per_norm_element(LayerKernels k, NormKind norm);
double extra_saved_bytes_per_gated_element(LayerKernels k);

}  // namespace meshsim
