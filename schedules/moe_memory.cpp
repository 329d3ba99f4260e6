#include "schedules/moe_memory.hpp"

#include "schedules/precision.hpp"

namespace meshsim {

MoeMemory moe_memory(const TransformerModel& m, const MemoryPlan& plan) {
  MoeMemory out;
  if (!m.moe) return out;
  const MoeBlock& moe = *m.moe;
  const int etp = plan.etp > 0 ? plan.etp : plan.tp;
  const ParameterCount pc = count_parameters(m);
  const std::int64_t gated = m.gated_mlp ? 3 : 2;
  const std::int64_t shared = moe.shared_experts * gated * m.hidden * moe.shared_ffn;
  // The linears' weight matrices (MLA's latent norms and any biases are the layer's, not theirs).
  out.moe_linear_params = (attention_matrices(m) + shared) / plan.tp;
  out.moe_layer_params = (pc.attention + shared) / plan.tp + m.hidden * moe.experts + pc.norms;
  out.expert_params = moe.experts / plan.ep * pc.routed_expert / etp;
  out.expert_data_parallel = plan.tp * plan.cp * plan.dp / (etp * plan.ep);
  const double e = 2, b = static_cast<double>(plan.microbatch_size);
  const double seq = static_cast<double>(plan.seq > 0 ? plan.seq : m.seq_len);
  const double s = seq / plan.cp;
  const double sp = plan.sequence_parallel ? plan.tp : 1.0;
  const double tokens = s * b / sp, k = moe.top_k, h = static_cast<double>(m.hidden);
  // The saved GEMM inputs (down input, permuted input): e, or q with low-precision linears.
  const double lin = saved_linear_input_bytes(plan.precision, e);
  // The dense MLP's term as activation_terms counts it (its down input quantized too).
  const double dense = (static_cast<double>(gated - 1) * e + lin) * s * b *
                       static_cast<double>(m.ffn_hidden) / plan.tp;
  const double routed = (static_cast<double>(gated - 1) * e + lin) * tokens * k *
                            static_cast<double>(moe.expert_ffn) +
                        (lin + e) * tokens * k * h + 4 * tokens * moe.experts;
  const double shared_act = static_cast<double>(gated) * e * s * b *
                            static_cast<double>(moe.shared_experts * moe.shared_ffn) / plan.tp;
  // Eager SwiGLU's third tensor (layer_kernels.hpp), kept where the layer keeps its activations
  // (torchtitan's selective-op policy recomputes it): the routed copies' and shared experts'
  // instead of the dense MLP's, which activation_terms counted.
  const bool keeps = plan.recompute == Recompute::none || plan.recompute == Recompute::selective;
  const double x =
      m.gated_mlp && keeps ? extra_saved_bytes_per_gated_element(plan.layer_kernels) : 0.0;
  const double unfused =
      x *
      (tokens * k * static_cast<double>(moe.expert_ffn) +
       s * b * static_cast<double>(moe.shared_experts * moe.shared_ffn - m.ffn_hidden) / plan.tp);
  out.activation_delta =
      plan.recompute == Recompute::full ? 0 : routed + shared_act - dense + unfused;
  out.dispatch_buffers = 2 * e * tokens * k * h * etp;
  return out;
}

}  // namespace meshsim
