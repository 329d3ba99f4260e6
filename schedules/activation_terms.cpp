// The activation terms of one layer and of the first and last stages (ActivationTerms,
// schedules/memory_model.hpp): what each recompute choice, attention core, precision and layer
// kernel keeps, and the loss's and the CP ring's buffers.
#include <vector>

#include "schedules/memory_model.hpp"
#include "schedules/memory_units.hpp"
#include "schedules/moe_model.hpp"
#include "schedules/precision.hpp"

namespace meshsim {

using namespace memory_units;

namespace {

// torchtitan's op-level policy (Recompute::selective_op): per layer the layer input (e·sbh, / t
// with sequence parallelism), the outputs of the 1st, 3rd, 5th, ... matmul in forward order (wq,
// wk, wv, wo, w1, w3, w2 for SwiGLU; w1, w2 otherwise): column-parallel outputs / t, a
// row-parallel output (wo, w2) before its reduction whole, and the attention kernel's output (e·sbh
// / t) with its core term.
double selective_op_stored(const TransformerModel& m, double sbh, double sb, double t, double sp,
                           double core) {
  const double e = kActivationBytes, h = dbl(m.hidden), kv = dbl(m.kv_hidden());
  const double f = dbl(m.ffn_hidden);
  struct Linear {
    double width;
    bool row;
  };
  std::vector<Linear> order = {{h, false}, {kv, false}, {kv, false}, {h, true}, {f, false}};
  if (m.gated_mlp) order.push_back({f, false});
  order.push_back({h, true});
  double stored = e * sbh / sp + e * sbh / t + core;
  for (std::size_t i = 0; i < order.size(); i += 2) {
    stored += e * sb * order[i].width / (order[i].row ? 1.0 : t);
  }
  return stored;
}

// What unfused layer kernels keep beyond the fused ones in a layer's tensors divided by t
// (schedules/layer_kernels.hpp), per `sb` tokens: eager SwiGLU's third tensor, and K and V
// expanded to every query head (repeat_kv) where autograd keeps SDPA's inputs.
double unfused_extra_split(const TransformerModel& m, LayerKernels k, double sb) {
  double extra = 0;
  if (m.gated_mlp) extra += extra_saved_bytes_per_gated_element(k) * sb * dbl(m.ffn_hidden);
  if (saves_repeated_kv(k) && !m.mla) {
    extra += 2 * kActivationBytes * sb * (dbl(m.q_width()) - dbl(m.kv_hidden()));
  }
  return extra;
}

}  // namespace

ActivationTerms activation_terms(const TransformerModel& m, const MemoryPlan& plan) {
  check_memory_plan(m, plan);
  const double e = kActivationBytes;
  const double seq = dbl(plan_seq(m, plan));
  const double s = seq / plan.cp;  // tokens per rank
  const double b = dbl(plan.microbatch_size);
  const double h = dbl(m.hidden), a = dbl(m.heads), kv = dbl(m.kv_hidden()), f = dbl(m.ffn_hidden);
  const double t = plan.tp;
  const double sp = plan.sequence_parallel ? t : 1.0;
  const double sbh = s * b * h;

  // The linears' saved inputs: e, or the quantized format's bytes (q) with a low precision.
  const double q = quant_element_bytes(linear_format(plan.precision));
  const double lin = saved_linear_input_bytes(plan.precision, e);
  // Kept whole (divided by t with sequence parallelism): 2 norm inputs, QKV input, MLP-up input,
  // 2 dropout masks.
  const double whole = 2 * e * sbh + lin * sbh + lin * sbh +
                       (m.dropout ? 2 * kMaskBytes * sbh : 0) +
                       2 * extra_saved_bytes_per_norm_element(plan.layer_kernels, m.norm) * sbh;
  // Divided by t: Q, K, V, projection input (and its quantized copy), MLP activation inputs and
  // down input.
  const double mlp = (m.gated_mlp ? 2 : 1) * e * s * b * f + lin * s * b * f;
  const double split = e * sbh + 2 * e * s * b * kv + e * sbh + q * sbh + mlp +
                       unfused_extra_split(m, plan.layer_kernels, s * b);
  // Attention core, divided by t (heads split).
  const double core = plan.attention_core == AttentionCore::flash
                          ? kFp32Bytes * a * s * b / t
                          : (m.dropout ? 2 * e + kMaskBytes : e) * a * s * seq * b / t;
  const double stored_no_core = whole / sp + split / t;

  ActivationTerms terms{};
  terms.layer_none = stored_no_core + core;
  switch (plan.recompute) {
    case Recompute::none:
      terms.layer_stored = terms.layer_none;
      break;
    case Recompute::selective:
      terms.layer_stored = stored_no_core;
      terms.layer_working = plan.attention_core == AttentionCore::materialized ? core : 0;
      break;
    case Recompute::full:
      terms.layer_stored = e * sbh / sp;
      terms.layer_working = terms.layer_none;
      break;
    case Recompute::selective_op:
      terms.layer_stored = selective_op_stored(m, sbh, s * b, t, sp, core);
      // The recomputed tensors of the layer being back-propagated.
      terms.layer_working = std::max(0.0, terms.layer_none - terms.layer_stored);
      break;
  }
  terms.embedding_extra = m.dropout ? kMaskBytes * sbh / sp : 0;
  const double logits = s * b * dbl(m.vocab) / t;
  terms.output_extra =
      2 * e * sbh / sp + cross_entropy_saved_bytes_per_logit(plan.cross_entropy) * logits;
  // Each MTP module (schedules/step_mtp.cpp) keeps its layer (as stored; an MoE layer's excess in
  // stage_chunks), the inputs of enorm, hnorm and of eh_proj (2h wide) and, as the main head,
  // its final norm's and head's inputs and the loss's fp32 logits.
  terms.output_extra += m.mtp_layers * (terms.layer_stored + 4 * e * sbh / sp + terms.output_extra);
  terms.loss_working = cross_entropy_working_bytes_per_logit(plan.cross_entropy) * logits;
  // K and V as the ring moves them: expanded to every query head by repeat_kv (layer_kernels.hpp).
  const double ring_kv = dbl(attention_kv_heads(m, plan.layer_kernels) * m.head_dim());
  terms.kv_rank = 2 * b * s * ring_kv / t * e;
  if (plan.cp > 1) {
    terms.cp_buffers =
        plan.kv_rotation == KvRotation::all_gather ? plan.cp * terms.kv_rank : 2 * terms.kv_rank;
  }
  return terms;
}

}  // namespace meshsim
