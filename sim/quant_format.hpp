#pragma once
// The low-precision formats a GEMM's operands may be quantized to (Transformer Engine's recipes;
// schedules/precision.hpp maps its --precision names to them) and the bytes each element takes in
// memory, scales included. A KernelCall with a format other than `none` is either a GEMM whose A
// and B operands are in that format (on the profile's FP8 or FP4 tensor-core peak), or, for a
// `copy`, a quantize: it reads its input in the call's dtype and writes quantized copies.
#include <cstdint>
#include <optional>
#include <string_view>

namespace meshsim {

// none: the call's dtype; fp8: E4M3/E5M2 with one fp32 scale per tensor (delayed or current
// scaling); fp8_block: DeepSeek-V3-style blockwise FP8 (TE's Float8BlockScaling: one fp32 scale per
// 1x128 block); mxfp8: OCP microscaling FP8 (one E8M0 scale per 32 elements); nvfp4: E2M1 with one
// E4M3 scale per 16 elements (and one fp32 scale per tensor).
enum class QuantFormat : std::uint8_t { none, fp8, fp8_block, mxfp8, nvfp4 };
inline constexpr int kQuantFormatCount = 5;

std::string_view to_string(QuantFormat f);  // "none", "fp8", "fp8_block", "mxfp8", "nvfp4"
std::optional<QuantFormat> parse_quant_format(std::string_view name);

// Bytes per element in memory, the scales spread over the elements they scale (TE's
// low-precision training docs: per-tensor FP8 1 byte + one fp32 scale per tensor (counted as 0);
// Float8BlockScaling 1 + 4/128; MXFP8 1 + 1/32; NVFP4 1/2 + 1/16). 0 for none.
double quant_element_bytes(QuantFormat f);

// Whether the format's GEMMs run on the FP4 tensor cores (nvfp4) rather than the FP8 ones.
bool quant_uses_fp4(QuantFormat f);

}  // namespace meshsim
