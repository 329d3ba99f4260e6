#include "schedules/memory_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "schedules/memory_units.hpp"
#include "schedules/moe_memory.hpp"
#include "schedules/pipeline.hpp"
#include "sim/enum_names.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"

namespace meshsim {

using namespace memory_units;

namespace {

constexpr std::array<std::string_view, 4> kRecomputeNames = {"none", "selective", "full",
                                                             "selective-op"};
constexpr std::array<std::string_view, 2> kCoreNames = {"flash", "materialized"};

PipelineShape plan_shape(const MemoryPlan& plan) {
  PipelineShape shape;
  shape.schedule = plan.schedule;
  shape.stages = plan.pp;
  shape.microbatches = plan.microbatches;
  shape.chunks = plan.vp;
  shape.group_size = plan.group_size;
  shape.combined_1f1b = plan.combined_1f1b;
  return shape;
}

// Weights, gradients and optimizer state of a rank's parameters under the plan's ZeRO stage over
// `shards` = dp x cp ranks (/ hsdp replicas for stages 2, 3), and the ZeRO-3 / FSDP unsharded
// buffers of its units (schedules/sharding.hpp).
void fill_state(StageMemory& st, const MemoryPlan& plan, std::span<const FsdpUnit> units,
                double shards) {
  const ShardingPlan& sh = plan.sharding;
  const int zero = std::max(sh.zero, plan.distributed_optimizer ? 1 : 0);
  const ShardedBytes state = sharded_state(
      dbl(st.parameters), zero, zero >= 2 ? shards / sh.replicate : shards,
      sh.fsdp ? kFsdp2Bytes
              : ParameterBytes{plan.param_bytes, plan.grad_bytes, plan.optimizer_bytes});
  st.weights = state.weights;
  st.gradients = state.gradients;
  st.optimizer = state.optimizer;
  st.unsharded = unsharded_unit_bytes(sh, units, kActivationBytes);
}

// StageMemory::quantized_weights: TE's row- and column-wise quantized copies of the linear
// weights of the rank's layers (none under ZeRO-3 / FSDP, which frees gathered weights); an MoE
// layer's are its attention and shared-expert linears / t and its local routed experts (the
// router stays in bf16); the last stage adds its MTP modules'.
double quantized_weight_bytes(const TransformerModel& m, const MemoryPlan& plan,
                              const StageMemory& st, const MoeMemory& moe) {
  if (plan.precision == Precision::bf16 || plan.sharding.zero >= 3) return 0;
  const int layers = std::accumulate(st.chunk_layers.begin(), st.chunk_layers.end(), 0);
  double linear = dbl((layers - st.moe_layers) * layer_linear_parameters_tp(m, plan.tp));
  if (st.moe_layers > 0) {
    linear += dbl(st.moe_layers) * (dbl(moe.moe_linear_params) + dbl(moe.expert_params));
  }
  // The MTP modules on the last stage: the 2h x h projection / t and the module's layer (its
  // output head is the model's, kept in bf16).
  for (int k = 0; st.output_head && k < m.mtp_layers; ++k) {
    linear += dbl(2 * m.hidden * m.hidden / plan.tp);
    linear += is_moe_layer(m, m.layers + k) ? dbl(moe.moe_linear_params) + dbl(moe.expert_params)
                                            : dbl(layer_linear_parameters_tp(m, plan.tp));
  }
  return 2.0 * quant_element_bytes(linear_format(plan.precision)) * linear;
}

}  // namespace

std::int64_t layer_linear_parameters_tp(const TransformerModel& m, std::int64_t t) {
  const std::int64_t h = m.hidden, f = m.ffn_hidden;
  return (attention_matrices(m) + (m.gated_mlp ? 3 : 2) * h * f) / t;
}

std::int64_t layer_parameters_tp(const TransformerModel& m, std::int64_t t) {
  const std::int64_t h = m.hidden, kv = m.kv_hidden(), f = m.ffn_hidden;
  const std::int64_t matrices = attention_matrices(m) + (m.gated_mlp ? 3 : 2) * h * f;
  const std::int64_t column_bias =
      m.linear_bias ? m.q_width() + 2 * kv + (m.gated_mlp ? 2 * f : f) : 0;
  const std::int64_t row_bias = m.linear_bias ? 2 * h : 0;
  return (matrices + column_bias) / t + row_bias + count_parameters(m).norms;
}

std::string_view to_string(Recompute r) {
  return enum_name(kRecomputeNames, r);
}
std::optional<Recompute> parse_recompute(std::string_view s) {
  return parse_enum_name<Recompute>(kRecomputeNames, s);
}
std::string_view to_string(AttentionCore c) {
  return enum_name(kCoreNames, c);
}
std::optional<AttentionCore> parse_attention_core(std::string_view s) {
  return parse_enum_name<AttentionCore>(kCoreNames, s);
}

LayerSplit split_layers(int layers, int stages) {
  if (layers < 1) throw InputError(fmt::format("layers must be at least 1 (got {})", layers));
  if (stages < 1) {
    throw InputError(fmt::format("pipeline stages must be at least 1 (got {})", stages));
  }
  LayerSplit split;
  if (layers % stages == 0) {
    const int k = layers / stages;
    split.layers.assign(static_cast<std::size_t>(stages), k);
    split.first = split.middle = split.last = k;
    split.rule = fmt::format("{} layers over {} pipeline stages: {} per stage", layers, stages, k);
    return split;
  }
  // Megatron's uneven first/last-stage option: middle stages k = ceil(L / n), the first and the
  // last share the rest.
  const int k = (layers + stages - 1) / stages;
  const int rest = layers - (stages - 2) * k;
  if (rest < 0) {
    throw InputError(fmt::format(
        "{} layers cannot be split over {} pipeline stages: not evenly ({} mod {} = {}) and not by "
        "Megatron's uneven first/last-stage option ({} middle stages of ceil({} / {}) = {} layers "
        "need {} > {})",
        layers, stages, layers, stages, layers % stages, stages - 2, layers, stages, k,
        (stages - 2) * k, layers));
  }
  split.uneven = true;
  split.middle = k;
  split.first = (rest + 1) / 2;
  split.last = rest / 2;
  split.layers.assign(static_cast<std::size_t>(stages), k);
  split.layers.front() = split.first;
  split.layers.back() = split.last;
  split.rule = fmt::format(
      "{} layers over {} pipeline stages (not divisible): Megatron's uneven first/last-stage "
      "option, first stage {}, {} middle stages x {} (ceil({} / {})), last stage {}",
      layers, stages, split.first, stages - 2, k, layers, stages, split.last);
  return split;
}

void check_memory_plan(const TransformerModel& model, const MemoryPlan& plan) {
  require_positive(plan.tp, "tp");
  require_positive(plan.pp, "pp");
  require_positive(plan.cp, "cp");
  require_positive(plan.dp, "dp");
  require_positive(plan.vp, "vp");
  require_positive(plan.microbatches, "microbatches");
  require_positive(plan.microbatch_size, "mbs");
  if (plan.seq < 0) require_positive(plan.seq, "seq");
  const std::int64_t seq = plan_seq(model, plan);
  const std::int64_t t = plan.tp;
  const auto tp_divides = [&](std::string_view what, std::int64_t value, std::string_view why) {
    if (value % t != 0) {
      throw InputError(
          fmt::format("`tp` {} must divide the model's {} ({}): {}", t, what, value, why));
    }
  };
  tp_divides("heads", model.heads, "each tensor-parallel rank computes heads / tp query heads");
  tp_divides("kv_heads", model.kv_heads,
             "Megatron shards the KV groups over tensor-parallel ranks");
  tp_divides("ffn_hidden", model.ffn_hidden, "the MLP is split column- and row-wise over tp");
  if (seq % plan.cp != 0) {
    throw InputError(
        fmt::format("`seq` {} must be divisible by `cp` {}: each context-parallel "
                    "rank holds seq / cp tokens",
                    seq, plan.cp));
  }
  if (plan.sequence_parallel && (seq / plan.cp) % t != 0) {
    throw InputError(
        fmt::format("`seq` / `cp` = {} must be divisible by `tp` {} with sequence "
                    "parallelism: each tensor-parallel rank holds a slice of the "
                    "sequence",
                    seq / plan.cp, t));
  }
  if (!(plan.workspace_bytes >= 0) || !(plan.param_bytes >= 0) || !(plan.grad_bytes >= 0) ||
      !(plan.optimizer_bytes >= 0)) {
    throw InputError("memory plan: byte sizes (workspace, per parameter) must be non-negative");
  }
  (void)split_layers(model.layers, plan_shape(plan), plan.layout);
}

namespace {

// An FSDP unit gathered in the parameter dtype (the embedding, the final norm + head, MTP modules).
FsdpUnit whole_unit(std::int64_t params) {
  return {params, dbl(params) * kActivationBytes};
}

// A layer's FSDP unit of `params` parameters of which `linear` linear weights: under ZeRO-3 / FSDP
// with fsdp_gathers_quantized those are all-gathered in the recipe's format (1 byte each for FP8),
// the rest (norms, a router) in the parameter dtype, as the step builder's quantized_unit_gather
// sends them.
FsdpUnit layer_unit(const MemoryPlan& plan, std::int64_t params, std::int64_t linear) {
  if (plan.sharding.zero < 3 || !fsdp_gathers_quantized(plan.precision)) return whole_unit(params);
  return {params, dbl(params - linear) * kActivationBytes +
                      std::round(dbl(linear) * quant_element_bytes(linear_format(plan.precision)))};
}

// What every pipeline rank's estimate shares.
struct StageContext {
  const TransformerModel& model;
  const MemoryPlan& plan;
  PipelineShape shape;
  int chunks = 1, n = 1;  // chunks per rank, global stages
  // Each rank's pipeline order, when the estimate follows it (activations held action by action);
  // null: every in-flight chunk-activation counted as the rank's largest.
  const std::vector<std::vector<PipeAction>>* orders = nullptr;
  ActivationTerms terms{};
  std::int64_t layer_params = 0;
  // A dense layer's FSDP unit (gathered in FP8 under fsdp_gathers_quantized), and an MoE layer's
  // without its routed experts (their own unit).
  FsdpUnit layer_unit{}, moe_layer_unit{};
  ParameterCount full{};
  std::int64_t word_embedding = 0, positions = 0;
  double optimizer_shards = 1;  // the ranks holding the same parameters (dp x cp); ZeRO shards
  MoeMemory moe{};
  std::vector<int> first_layer{};  // of each global stage
  const LayerSplit& split;
};

struct ChunkActivations {
  double largest = 0, largest_whole = 0;  // the largest chunk's, as stored and whole
  std::vector<double> stored, whole;      // each local chunk's, as stored and whole
};

// Rank st.rank's chunks: their layers and parameters, its FSDP units (each layer; the embedding,
// final norm and head are added by stage_memory), and their activations, as stored and whole
// (without recompute).
ChunkActivations stage_chunks(const StageContext& x, StageMemory& st,
                              std::vector<FsdpUnit>& units) {
  ChunkActivations out;
  for (int c = 0; c < x.chunks; ++c) {
    const int g = global_stage(x.shape, st.rank, c);
    const auto gi = static_cast<std::size_t>(g);
    const int layers = x.split.layers[gi];
    st.chunk_layers.push_back(layers);
    st.parameters += layers * x.layer_params;
    double chunk = layers * x.terms.layer_stored, chunk_whole = layers * x.terms.layer_none;
    for (int l = x.first_layer[gi]; l < x.first_layer[gi + 1]; ++l) {
      if (!x.model.moe || !is_moe_layer(x.model, l)) {
        units.push_back(x.layer_unit);
        continue;
      }
      // The layer and its routed experts, gathered together (with ep > 1 the experts are an FSDP
      // unit of their own, all-gathered right after the layer's: both are held at once), the
      // experts in bf16.
      units.push_back(
          {x.moe_layer_unit.params + x.moe.expert_params,
           x.moe_layer_unit.gathered_bytes + whole_unit(x.moe.expert_params).gathered_bytes});
      st.parameters += x.moe.moe_layer_params - x.layer_params + x.moe.expert_params;
      st.expert_parameters += x.moe.expert_params;
      ++st.moe_layers;
      chunk += x.moe.activation_delta;
      chunk_whole += x.moe.activation_delta;
    }
    if (g == 0) {
      st.embedding = true;
      chunk += x.terms.embedding_extra;
      chunk_whole += x.terms.embedding_extra;
    }
    if (g == x.n - 1) {
      st.output_head = true;
      chunk += x.terms.output_extra;
      chunk_whole += x.terms.output_extra;
      for (int k = 0; k < x.model.mtp_layers; ++k) {
        if (!is_moe_layer(x.model, x.model.layers + k)) continue;
        chunk += x.moe.activation_delta;
        chunk_whole += x.moe.activation_delta;
      }
    }
    out.largest = std::max(out.largest, chunk);
    out.largest_whole = std::max(out.largest_whole, chunk_whole);
    out.stored.push_back(chunk);
    out.whole.push_back(chunk_whole);
  }
  return out;
}

// The most activation bytes a rank holds along its pipeline order: a forward of local chunk c
// keeps chunk c's activations until its backward (B, or B + W) releases them, as peak_inflight
// counts them; an overlapped pair's forward keeps its chunk's and its backward releases the pair
// chunk's. With micro-batch-level recompute the k-th forward keeps them whole iff
// k mod window < N (kept_whole's rule, schedules/step_plan.cpp). Counted per chunk, so that a rank
// with one chunk and no whole microbatches gives inflight x its activations.
struct HeldOrder {
  const std::vector<PipeAction>& actions;
  int chunks = 1, window = 1;
  int whole_microbatches = 0;  // N; 0: none kept whole
};

double peak_held(const HeldOrder& o, const ChunkActivations& sizes) {
  const auto v = static_cast<std::size_t>(o.chunks);
  std::vector<int> held(v, 0), held_whole(v, 0);
  std::vector<std::vector<bool>> is_whole(v);
  const auto mark = [&](std::size_t c, int mb, bool w) {
    const auto i = static_cast<std::size_t>(mb);
    if (is_whole[c].size() <= i) is_whole[c].resize(i + 1, false);
    is_whole[c][i] = w;
  };
  const auto release = [&](int chunk, int mb) {
    const auto c = static_cast<std::size_t>(chunk);
    const auto i = static_cast<std::size_t>(mb);
    --(i < is_whole[c].size() && is_whole[c][i] ? held_whole[c] : held[c]);
  };
  double peak = 0;
  int k = 0;
  for (const PipeAction& a : o.actions) {
    if (a.work == PipeWork::forward || a.work == PipeWork::forward_backward) {
      const auto c = static_cast<std::size_t>(a.chunk);
      const bool w = k % o.window < o.whole_microbatches;
      ++k;
      mark(c, a.microbatch, w);
      ++(w ? held_whole[c] : held[c]);
      double now = 0;
      for (std::size_t j = 0; j < v; ++j) {
        now += held[j] * sizes.stored[j];
        if (held_whole[j] > 0) now += held_whole[j] * sizes.whole[j];
      }
      peak = std::max(peak, now);
    }
    if (a.work == PipeWork::backward || a.work == PipeWork::input_grad) {
      release(a.chunk, a.microbatch);
    } else if (a.work == PipeWork::forward_backward) {
      release(a.pair_chunk, a.pair_microbatch);
    }
  }
  return peak;
}

// The MTP modules on the last stage (schedules/step_mtp.cpp), each its own FSDP unit: enorm,
// hnorm and its final norm (h each), the 2h x h projection / t and its layer (an MoE layer's
// local experts counted as experts).
void add_mtp_parameters(const StageContext& x, StageMemory& st, std::vector<FsdpUnit>& units) {
  const std::int64_t h = x.model.hidden;
  for (int k = 0; k < x.model.mtp_layers; ++k) {
    std::int64_t n = 3 * h + 2 * h * h / x.plan.tp;
    if (is_moe_layer(x.model, x.model.layers + k)) {
      n += x.moe.moe_layer_params + x.moe.expert_params;
      st.expert_parameters += x.moe.expert_params;
    } else {
      n += x.layer_params;
    }
    st.parameters += n;
    units.push_back(whole_unit(n));
  }
}

// The routed experts' state shards over the expert-data-parallel group instead of fill_state's
// dp x cp: the optimizer state with the distributed optimizer (Megatron-Core), and under ZeRO-2 /
// ZeRO-3 / FSDP with ep > 1 every part fill_state shards (torchtitan's apply_fsdp shards them over
// the dp_mod_ep mesh; check_step_plan refuses HSDP there).
void shard_experts(StageMemory& st, const MemoryPlan& plan, const StageContext& x) {
  const double experts = dbl(st.expert_parameters);
  const ShardingPlan& sh = plan.sharding;
  if (sh.zero < 2) {
    st.optimizer +=
        experts * plan.optimizer_bytes *
        (plan.distributed_optimizer ? 1.0 / x.moe.expert_data_parallel - 1.0 / x.optimizer_shards
                                    : 0.0);
    return;
  }
  if (plan.ep == 1) return;  // torchtitan shards ep-1 experts with their layer (fill_state's)
  const ParameterBytes b =
      sh.fsdp ? kFsdp2Bytes
              : ParameterBytes{plan.param_bytes, plan.grad_bytes, plan.optimizer_bytes};
  const double delta = 1.0 / x.moe.expert_data_parallel - sh.replicate / x.optimizer_shards;
  st.optimizer += experts * b.optimizer * delta;
  st.gradients += experts * b.grad * delta;
  if (sh.zero >= 3) st.weights += experts * b.param * delta;
}

StageMemory stage_memory(const StageContext& x, int rank, int inflight) {
  const MemoryPlan& plan = x.plan;
  StageMemory st;
  st.rank = rank;
  st.inflight = inflight;
  std::vector<FsdpUnit> units;  // FSDP units: embedding, each layer, final norm + head
  const ChunkActivations chunks = stage_chunks(x, st, units);
  if (st.embedding) {
    st.parameters += x.word_embedding + x.positions;
    units.push_back(whole_unit(x.word_embedding + x.positions));
  }
  if (st.output_head) {
    const std::int64_t before = st.parameters;
    st.parameters += x.full.final_norm;
    // Untied: the head's shard. Tied: Megatron keeps a copy of the word embeddings on the last
    // stage when it is not also the first.
    if (!x.model.tied_embeddings || !st.embedding) st.parameters += x.word_embedding;
    units.push_back(whole_unit(st.parameters - before));
    add_mtp_parameters(x, st, units);
  }
  fill_state(st, plan, units, x.optimizer_shards);
  st.quantized_weights = quantized_weight_bytes(x.model, plan, st, x.moe);
  if (plan.fp8_param_gather) {
    // The linear weights are the FP8 parameters themselves (1 byte each, not 2), and of TE's two
    // quantized copies only the column-wise one (the transpose for the dgrad GEMM) remains.
    const int layers = std::accumulate(st.chunk_layers.begin(), st.chunk_layers.end(), 0);
    const double linear = dbl(layers * layer_linear_parameters_tp(x.model, plan.tp));
    const double q = quant_element_bytes(linear_format(plan.precision));
    st.weights -= linear * (plan.param_bytes - q);
    st.quantized_weights -= linear * q;
  }
  if (st.expert_parameters > 0) {
    shard_experts(st, plan, x);
    st.moe_buffers = x.moe.dispatch_buffers;
  }
  const int whole = plan.recompute != Recompute::none && plan.whole_microbatches
                        ? std::min(*plan.whole_microbatches, st.inflight)
                        : 0;
  if (x.orders != nullptr) {
    const HeldOrder order{(*x.orders)[static_cast<std::size_t>(rank)], x.chunks,
                          std::max(1, warmup_forwards(x.shape, rank)),
                          whole == 0 ? 0 : *plan.whole_microbatches};
    st.activations = peak_held(order, chunks);
  } else if (whole == 0) {
    st.activations = st.inflight * chunks.largest;
  } else {
    st.activations = whole * chunks.largest_whole + (st.inflight - whole) * chunks.largest;
  }
  st.recompute_working = whole < st.inflight ? x.terms.layer_working : 0;
  st.loss_working = st.output_head ? x.terms.loss_working : 0;
  st.cp_buffers = x.terms.cp_buffers;
  st.workspace = plan.workspace_bytes;
  return st;
}

}  // namespace

namespace {

MemoryEstimate estimate(const TransformerModel& model, const MemoryPlan& plan,
                        std::span<const int> inflight,
                        const std::vector<std::vector<PipeAction>>* orders,
                        const HardwareProfile& hardware) {
  check_memory_plan(model, plan);
  MESHSIM_CHECK(inflight.size() == static_cast<std::size_t>(plan.pp),
                "estimate_memory: one in-flight count per pipeline rank");
  MemoryEstimate est;
  const PipelineShape shape = plan_shape(plan);
  est.split = split_layers(model.layers, shape, plan.layout);
  const std::int64_t t = plan.tp;
  StageContext x{.model = model, .plan = plan, .shape = shape, .split = est.split};
  x.chunks = chunks_of(shape);
  x.n = plan.pp * x.chunks;
  x.orders = orders;
  x.terms = activation_terms(model, plan);
  x.layer_params = layer_parameters_tp(model, t);
  x.layer_unit = layer_unit(plan, x.layer_params, layer_linear_parameters_tp(model, t));
  x.full = count_parameters(model);
  x.word_embedding = (model.vocab + t - 1) / t * model.hidden;  // vocabulary-parallel, ceil(V / t)
  x.positions = x.full.embedding - model.vocab * model.hidden;  // replicated
  x.optimizer_shards = static_cast<double>(plan.dp) * plan.cp;
  x.moe = moe_memory(model, plan);
  x.moe_layer_unit = layer_unit(plan, x.moe.moe_layer_params, x.moe.moe_linear_params);
  x.first_layer.push_back(0);
  for (const int l : est.split.layers) x.first_layer.push_back(x.first_layer.back() + l);
  est.capacity_bytes = hardware.memory_bytes;
  for (int r = 0; r < plan.pp; ++r) {
    MESHSIM_CHECK(inflight[static_cast<std::size_t>(r)] >= 0,
                  "estimate_memory: negative in-flight count");
    StageMemory st = stage_memory(x, r, inflight[static_cast<std::size_t>(r)]);
    if (st.total() > est.peak_bytes) {
      est.peak_bytes = st.total();
      est.peak_rank = r;
    }
    est.stages.push_back(std::move(st));
  }
  est.oom = est.peak_bytes > est.capacity_bytes;
  return est;
}

}  // namespace

MemoryEstimate estimate_memory(const TransformerModel& model, const MemoryPlan& plan,
                               std::span<const int> inflight, const HardwareProfile& hardware) {
  return estimate(model, plan, inflight, nullptr, hardware);
}

MemoryEstimate estimate_memory(const TransformerModel& model, const MemoryPlan& plan,
                               const HardwareProfile& hardware) {
  check_memory_plan(model, plan);
  const PipelineShape shape = plan_shape(plan);
  check_pipeline_shape(shape);
  const auto orders = pipeline_orders(shape);
  const std::vector<int> inflight = peak_inflight(orders);
  return estimate(model, plan, inflight, &orders, hardware);
}

}  // namespace meshsim
