// The step builder's low-precision linears (StepPlan::precision; schedules/precision.hpp): which
// TP layers quantize and when they cast their weights, delayed scaling's per-step amax reduction
// and scale update, and FSDP's quantized parameter all-gather (torchtitan's float8 all-gather).
#include <cmath>

#include "schedules/step_builder.hpp"

namespace meshsim::step_detail {
namespace {

// TE's DelayedScaling default amax_history_len (transformer_engine.common.recipe).
constexpr std::int64_t kAmaxHistory = 1024;
// FP8 tensors per linear layer: its input, its weight and its output gradient (TE's fp8_meta
// holds one amax history and scale for each).
constexpr std::int64_t kTensorsPerLinear = 3;
// The linears of a layer that run in low precision: QKV, projection, MLP up, MLP down.
constexpr std::int64_t kLinearsPerLayer = 4;

}  // namespace

void StepBuilder::quantize_spec(TpLayerSpec& spec, const Ctx& c, const std::string& what) const {
  const QuantFormat format = linear_format(p_.precision);
  // The output head stays in bf16, the MTP module's too (it is the model's shared output layer).
  if (format == QuantFormat::none || what == "head" || what == "mtp head") return;
  spec.quant = format;
  spec.amax_pass = casts_after_amax(p_.precision);
  spec.gather_quantized = gathers_quantized(p_.precision);
  spec.what = what;
  spec.fp8_weight = p_.fp8_param_gather;
  // W is cast by the chunk's first forward of the step and the copies reused by the others (TE's
  // is_first_microbatch, which Megatron sets per step). Under ZeRO-3 / FSDP the gathered weight is
  // freed after use, so every forward casts it again, unless FSDP gathers it already quantized
  // (the dense linears only: quantized_unit_gather; the routed experts are cast every forward).
  if (gathers_params()) {
    const bool gathered_quantized = fsdp_gathers_quantized(p_.precision) && what != "experts";
    spec.cast_weight = c.phase == Phase::fwd && !gathered_quantized;
  } else {
    spec.cast_weight = c.phase == Phase::fwd && first_forward_;
  }
}

// The routed experts (schedules/step_moe.cpp) quantize as the dense linears do.
TpLayerSpec StepBuilder::expert_quant_spec(const Ctx& c) const {
  TpLayerSpec q;
  q.tensors = false;
  q.dtype = p_.dtype;
  quantize_spec(q, c, "experts");
  return q;
}

void StepBuilder::expert_cast(const Ctx& c, const TpLayerSpec& q, const std::string& name,
                              Phase phase, std::int64_t elements) {
  if (q.quant == QuantFormat::none || elements == 0) return;
  tp_ctx_ = c;
  TpLayerEmitter(q).quantize(*this, name, phase, elements, 2);
}

std::int64_t StepBuilder::rank_layers() const {
  std::int64_t layers = 0;
  for (int c = 0; c < v_; ++c) layers += layer_count(gs(pr_, c));
  return layers;
}

// An MoE layer's low-precision linears: QKV and projection, the shared experts' up and down when
// it has any, and the up and down GEMM of each local expert (TE's GroupedLinear keeps one FP8 meta
// per GEMM).
std::int64_t StepBuilder::fp8_tensors() const {
  const auto layer_linears = [&](int l) -> std::int64_t {
    if (!m_.moe || !is_moe_layer(m_, l)) return kLinearsPerLayer;
    const std::int64_t shared = m_.moe->shared_experts > 0 ? 2 : 0;
    return 2 + shared + 2 * static_cast<std::int64_t>(expert_tokens_.size());
  };
  std::int64_t linears = 0;
  for (int c = 0; c < v_; ++c) {
    const int stage = gs(pr_, c);
    for (int l = first_layer(stage); l < first_layer(stage) + layer_count(stage); ++l) {
      linears += layer_linears(l);
    }
    // The last stage's MTP modules: the eh projection and the module's layer.
    for (int k = 0; stage + 1 == stages_ && k < m_.mtp_layers; ++k) {
      linears += 1 + layer_linears(m_.layers + k);
    }
  }
  return linears * kTensorsPerLinear;
}

// TE's delayed scaling reduces the amaxes of all FP8 tensors in one all-reduce (max) over the
// amax reduction group and updates every scale from its amax history
// (nvte_delayed_scaling_recipe_amax_and_scale_update_after_reduction: the [history, tensors]
// fp32 histories rolled, read and written, and the scales written). Megatron's group spans the
// tp x cp x dp ranks of a pipeline stage; the all-reduce is costed over the dp-cp group (its
// inter-node part) with the tree algorithm NCCL uses for a few kilobytes.
void StepBuilder::update_fp8_scales() {
  if (p_.precision != Precision::fp8_delayed) return;
  const std::int64_t tensors = fp8_tensors();
  if (tensors == 0) return;
  if (dp_size_ > 1) {
    std::vector<OpId> deps;
    if (last_compute_ >= 0) deps.push_back(last_compute_);
    CollectiveCall call{CollectiveKind::all_reduce, dp_group_, tensors * 4, DType::fp32};
    call.algo = CollectiveAlgo::tree;
    wait(builder_.add(rank_, dp_comm_, "fp8 amax all-reduce",
                      OpLabels{Phase::optimizer, -1, -1, -1, -1}, call, std::move(deps)));
  }
  const KernelCall update{
      KernelKind::elementwise, DType::fp32, VectorShape{tensors * kAmaxHistory, 2}, {}, {},
      ElementwiseFn::none};
  last_compute_ = builder_.add(rank_, compute_, "fp8 scale update",
                               OpLabels{Phase::optimizer, -1, -1, -1, -1}, update, take_waits());
}

bool StepBuilder::gathers_quantized_unit(int stage, int u) const {
  const bool layer = !(stage == 0 && u == 0) && !(stage + 1 == stages_ && u == head_unit(stage));
  return layer && fsdp_gathers_quantized(p_.precision);
}

// torchtitan's float8 FSDP all-gather (torchao's fsdp_pre_all_gather with tensorwise dynamic
// scaling): each rank casts its shard of the layer's linear weights to FP8 (read the fp32 sharded
// parameter FSDP2 keeps, write one FP8 copy) on the all-gather stream, then the unit all-gathers 1
// byte per linear parameter and the parameter dtype for the rest (norms).
std::int64_t StepBuilder::quantized_unit_gather(const Ctx& c, int stage, int u) {
  const double q = quant_element_bytes(linear_format(p_.precision));
  const int l = unit_layer(stage, u);
  const std::int64_t linear = layer_linear_params(l);
  const std::int64_t shard = (linear + shard_size_ - 1) / shard_size_;
  std::vector<OpId> deps;
  if (last_compute_ >= 0) deps.push_back(last_compute_);
  KernelCall cast{KernelKind::copy, DType::fp32, VectorShape{shard, 2}, {}, {}};
  cast.quant = linear_format(p_.precision);
  builder_.add(rank_, gather_comm_, fmt::format("fsdp fp8 cast c{} unit {}", c.chunk, u),
               OpLabels{c.phase, c.layer, c.mb, -1, c.chunk}, std::move(cast), std::move(deps));
  return (unit_params(stage, u) - linear) * e_ + std::llround(static_cast<double>(linear) * q);
}

// torchtitan's precompute_float8_dynamic_scale_for_fsdp after the optimizer step: the amax of
// every linear weight over the rank's shard (one read of it) and one all-reduce (max) of the
// amaxes over the shard group.
void StepBuilder::precompute_fsdp_scales() {
  if (!gathers_params() || !fsdp_gathers_quantized(p_.precision)) return;
  const std::int64_t layers = rank_layers();
  if (layers == 0) return;
  std::int64_t shard = 0;  // the rank's shard of its layers' linear weights
  for (int c = 0; c < v_; ++c) {
    const int stage = gs(pr_, c);
    for (int l = first_layer(stage); l < first_layer(stage) + layer_count(stage); ++l) {
      shard += (layer_linear_params(l) + shard_size_ - 1) / shard_size_;
    }
  }
  const KernelCall amax{KernelKind::elementwise, DType::fp32, VectorShape{shard, 1}, {}, {},
                        ElementwiseFn::none};
  last_compute_ = builder_.add(rank_, compute_, "fp8 weight amax",
                               OpLabels{Phase::optimizer, -1, -1, -1, -1}, amax, take_waits());
  CollectiveCall call{CollectiveKind::all_reduce, shard_group_, layers * kLinearsPerLayer * 4,
                      DType::fp32};
  call.algo = CollectiveAlgo::tree;
  dp_ops_.push_back(builder_.add(rank_, dp_comm_, "fp8 weight amax all-reduce",
                                 OpLabels{Phase::optimizer, -1, -1, -1, -1}, call,
                                 {last_compute_}));
}

// Megatron-Core's quantize_param_shard under fp8_param_gather (megatron/core/fp8_utils.py, TE's
// cast_master_weights_to_fp8): after the step the optimizer's fp32 master shard of the linear
// weights is cast into their FP8 data (read 4 bytes, write 1 per shard element); under current
// scaling each weight's amax over its shards first, all-reduced (max) over the data-parallel
// group so that every shard casts with one scale.
void StepBuilder::cast_fp8_param_shard() {
  if (!p_.fp8_param_gather) return;
  const std::int64_t layers = rank_layers();
  if (layers == 0) return;
  const std::int64_t shard = (layers * layer_linear_params_ + state_shards() - 1) / state_shards();
  if (casts_after_amax(p_.precision)) {
    const KernelCall amax{KernelKind::elementwise, DType::fp32, VectorShape{shard, 1}, {}, {},
                          ElementwiseFn::none};
    last_compute_ = builder_.add(rank_, compute_, "fp8 param amax",
                                 OpLabels{Phase::optimizer, -1, -1, -1, -1}, amax, take_waits());
    if (dp_size_ > 1) {
      CollectiveCall call{CollectiveKind::all_reduce, dp_group_, layers * kLinearsPerLayer * 4,
                          DType::fp32};
      call.algo = CollectiveAlgo::tree;
      wait(builder_.add(rank_, dp_comm_, "fp8 param amax all-reduce",
                        OpLabels{Phase::optimizer, -1, -1, -1, -1}, call, {last_compute_}));
    }
  }
  KernelCall cast{KernelKind::copy, DType::fp32, VectorShape{shard, 2}, {}, {}};
  cast.quant = linear_format(p_.precision);
  last_compute_ =
      builder_.add(rank_, compute_, "fp8 param cast", OpLabels{Phase::optimizer, -1, -1, -1, -1},
                   std::move(cast), take_waits());
}

// A parameter all-gather of `params` parameters of which `layers` layers' linear weights: those
// in FP8 under fp8_param_gather (1 byte), the rest in the parameters' dtype.
std::int64_t StepBuilder::param_gather_bytes(std::int64_t params, std::int64_t layers) const {
  if (!p_.fp8_param_gather) return params * e_;
  const double q = quant_element_bytes(linear_format(p_.precision));
  const std::int64_t linear = layers * layer_linear_params_;
  return (params - linear) * e_ + std::llround(static_cast<double>(linear) * q);
}

}  // namespace meshsim::step_detail
