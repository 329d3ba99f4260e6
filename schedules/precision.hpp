#pragma once
// Precision as a plan axis (`--precision`): the low-precision recipes of NVIDIA Transformer Engine
// (TE) as Megatron-LM selects them (--fp8-format hybrid|e4m3, --fp8-recipe delayed | tensorwise |
// blockwise | mxfp8, --fp4-recipe nvfp4), applied to the transformer layers' linears (QKV,
// projection, MLP up and down; the embedding and the output head stay in bf16, as TE's and
// Megatron's first/last-layer defaults leave them outside fp8_autocast's linears).
//
//   bf16           no quantization (the default)
//   fp8-delayed    TE DelayedScaling (Format.HYBRID: E4M3 forward, E5M2 gradients): the scale of
//                  each tensor comes from an amax history of earlier iterations, so the cast
//                  computes the new amax as it goes (one pass); the histories' amaxes are
//                  all-reduced and the scales updated once per step
//   fp8-current    TE Float8CurrentScaling (Megatron's `tensorwise`, torchao's tensorwise): an
//                  amax reduction over each tensor (one read) before its cast; a sequence-parallel
//                  input's amax is also all-reduced over the TP group before the quantized
//                  all-gather
//   fp8-blockwise  TE Float8BlockScaling (DeepSeek-V3's recipe): fp32 scales per 1x128 block
//                  computed inside the cast, no global amax; TE all-gathers sequence-parallel
//                  inputs in bf16 (its FP8 all-gather does not support block scales)
//   mxfp8          TE MXFP8BlockScaling (Blackwell): E8M0 scales per 32 elements inside the cast
//   nvfp4          TE NVFP4BlockScaling (Blackwell): E2M1 with E4M3 scales per 16 elements and a
//                  per-tensor fp32 scale, so an amax pass precedes each cast as with current
//                  scaling; GEMMs on the FP4 tensor cores
// Every recipe keeps a row-wise and a column-wise quantized copy of each weight (per-tensor FP8 on
// Hopper: the weight and its transpose, TE's fp8_cast_transpose; block formats: the two scaling
// directions) and saves the linears' inputs quantized for the weight gradient.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/quant_format.hpp"

namespace meshsim {

struct HardwareProfile;

enum class Precision : std::uint8_t { bf16, fp8_delayed, fp8_current, fp8_blockwise, mxfp8, nvfp4 };
inline constexpr int kPrecisionCount = 6;

// "bf16", "fp8-delayed", "fp8-current", "fp8-blockwise", "mxfp8", "nvfp4".
std::string_view to_string(Precision p);
std::optional<Precision> parse_precision(std::string_view name);
// "bf16|fp8-delayed|...|nvfp4" for help texts and errors.
std::string precision_names();

// The format the linears' GEMM operands are quantized to (none for bf16).
QuantFormat linear_format(Precision p);
// Bytes per element of a linear's saved input: the quantized format's, or `e` (the activation
// dtype's) for bf16.
double saved_linear_input_bytes(Precision p, double e);
// An amax reduction pass over each tensor before its cast (current scaling, NVFP4's per-tensor
// scale).
bool casts_after_amax(Precision p);
// The sequence-parallel all-gathers of a linear's input (forward) and output gradient (row
// backward) send the quantized tensor (TE's gather_along_first_dim with the quantizer); false for
// blockwise, which TE gathers in bf16 and casts after.
bool gathers_quantized(Precision p);
// FSDP all-gathers the linears' weights quantized (torchtitan's enable_fsdp_float8_all_gather,
// torchao's tensorwise dynamic scaling: cast the local shard, then all-gather FP8).
bool fsdp_gathers_quantized(Precision p);

// InputError naming `flag` when the profile has no tensor cores for the precision's format
// (peak_tflops.fp8 for the FP8 recipes, peak_tflops.fp4 for nvfp4).
void check_precision_hardware(Precision p, const HardwareProfile& hardware, std::string_view flag);

}  // namespace meshsim
