// The low-precision casts of a TP linear layer (TpLayerSpec::quant; schedules/precision.hpp), as
// Transformer Engine's Linear / LayerNormLinear emit them: memory-bound kernels, an amax read
// (current scaling, NVFP4) before each cast, the cast reading the bf16 tensor once and writing its
// quantized copies (kernel_bytes of a quantized `copy`).
#include <cmath>

#include "schedules/tp_emitter.hpp"
#include "sim/error.hpp"

namespace meshsim {

void TpLayerEmitter::quantize(TpEmitHost& host, const std::string& name, Phase phase,
                              std::int64_t elements, std::int32_t copies) const {
  MESHSIM_CHECK(!s_.tensors, "quantized TP layers are emitted without tensors");
  if (s_.amax_pass) {
    // Current scaling: the tensor's amax (one read of it) before the cast can scale it.
    host.tp_kernel(name + " amax", phase,
                   KernelCall{KernelKind::elementwise, s_.dtype, VectorShape{elements, 1}, {}, {}});
  }
  KernelCall cast{KernelKind::copy, s_.dtype, VectorShape{elements, 1 + copies}, {}, {}};
  cast.quant = s_.quant;
  host.tp_kernel(name + " cast", phase, std::move(cast));
}

// W [n, k] of this rank, cast once per step and cached (TE's is_first_microbatch: Megatron casts
// at each step's first microbatch and reuses the copies for the others), row-wise for the forward
// and column-wise (Hopper's transpose) for the dgrad GEMM.
void TpLayerEmitter::cast_weight(TpEmitHost& host, Phase phase) const {
  if (!quantized() || !s_.cast_weight) return;
  if (s_.fp8_weight) {
    // An FP8 parameter: its row-wise data is the weight; TE builds the transpose after the
    // parameter all-gather, once per step (post_all_gather_processing).
    transpose_fp8(host, s_.what + " w", phase, s_.n * s_.k);
    return;
  }
  quantize(host, s_.what + " w", phase, s_.n * s_.k, 2);
}

double TpLayerEmitter::quantize_shard_for_gather(TpEmitHost& host, const std::string& name,
                                                 Phase phase, std::int64_t features,
                                                 std::int32_t copies) const {
  if (!quantized()) return static_cast<double>(dtype_bytes(s_.dtype));
  const std::int64_t local = s_.local_tokens * features;
  if (s_.amax_pass) {
    host.tp_kernel(name + " amax", phase,
                   KernelCall{KernelKind::elementwise, s_.dtype, VectorShape{local, 1}, {}, {}});
    // One fp32 amax all-reduced (max) over the TP group so every shard casts with one scale.
    host.tp_wait(host.tp_collective(name + " amax all-reduce", phase, CollectiveKind::all_reduce, 4,
                                    -1, -1));
  }
  KernelCall cast{KernelKind::copy, s_.dtype, VectorShape{local, 1 + copies}, {}, {}};
  cast.quant = s_.quant;
  host.tp_kernel(name + " cast", phase, std::move(cast));
  return quant_element_bytes(s_.quant);
}

// An FP8 -> FP8 transpose moves one byte in and one out per element (scales aside): costed as the
// same bytes in `dtype` elements read and written once.
void TpLayerEmitter::transpose_fp8(TpEmitHost& host, const std::string& name, Phase phase,
                                   std::int64_t elements) const {
  const double bytes = static_cast<double>(elements) * quant_element_bytes(s_.quant);
  const auto n = std::llround(bytes / static_cast<double>(dtype_bytes(s_.dtype)));
  host.tp_kernel(name + " transpose", phase,
                 KernelCall{KernelKind::copy, s_.dtype, VectorShape{n, 2}, {}, {}});
}

OpId TpLayerEmitter::quantized_gather(TpEmitHost& host, const std::string& name,
                                      const std::string& gather_name, Phase phase,
                                      std::int64_t features, std::int32_t copies) const {
  if (!s_.gather_quantized) {
    // TE all-gathers block-scaled inputs in bf16 and quantizes the whole tensor after.
    host.tp_wait(host.tp_collective(gather_name, phase, CollectiveKind::all_gather,
                                    s_.tokens * features * dtype_bytes(s_.dtype), -1, -1));
    quantize(host, name, phase, s_.tokens * features, copies);
    return -1;
  }
  const double element_bytes = quantize_shard_for_gather(host, name, phase, features, copies);
  return host.tp_collective(gather_name, phase, CollectiveKind::all_gather,
                            std::llround(static_cast<double>(s_.tokens * features) * element_bytes),
                            -1, -1);
}

}  // namespace meshsim
