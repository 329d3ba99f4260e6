#pragma once
// How the data-parallel ranks shard the training state (ARCHITECTURE.md §4.4), and its memory.
//
// ZeRO (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
// Models", §5, Figure 1): over N_d data-parallel ranks (here dp x cp, the ranks that hold the same
// parameters), with mixed-precision Adam (K = 12 bytes of optimizer state per parameter: fp32
// master weights, momentum and variance) and 2-byte parameters and gradients, bytes per parameter
//   none     2 + 2 + K            = 16
//   ZeRO-1   2 + 2 + K / N_d            (P_os: optimizer state sharded)
//   ZeRO-2   2 + (2 + K) / N_d          (P_os+g: gradients too)
//   ZeRO-3   (2 + 2 + K) / N_d          (P_os+g+p: parameters too)
// sharded_bytes_per_parameter states it for any byte sizes (meshsim's default is Megatron's fp32
// gradient buffer: 2 + 4 + 12).
//
// FSDP2 (PyTorch's fully_shard, torchtitan's default MixedPrecisionPolicy(param_dtype=bf16,
// reduce_dtype=fp32)) is ZeRO-3 whose sharded parameters are the fp32 master copy: 4 (fp32
// parameter shard) + 4 (fp32 gradient shard) + 8 (Adam's two moments) = 16 bytes per parameter,
// all / N_d. HSDP (fully_shard on a 2-D mesh ("dp_replicate", "dp_shard")): the state is sharded
// over N_d / R ranks and replicated over R.
//
// Unsharded buffers of ZeRO-3 / FSDP (StageMemory::unsharded): FSDP2 wraps the token embedding,
// each transformer layer and the final norm + output head as units (torchtitan's
// apply_fsdp); before a unit's forward its parameters are all-gathered in the parameter dtype
// (e bytes each), the next unit's all-gather prefetched meanwhile, so two units are unsharded at
// a time; in the backward the same, plus the unit's unsharded gradient in the parameter dtype (e)
// and its fp32 reduce-scatter input (4). Peak: the two largest units x e + the largest x (e + 4).
// Gathered in FP8 (torchtitan's enable_fsdp_float8_all_gather) a unit's linear weights take 1 byte
// each instead of e; its gradients stay e and fp32.
// With reshard_after_forward false, a unit gathered for a forward stays unsharded until that
// microbatch's backward; with microbatches in flight on every layer (any pipeline schedule) the
// rank's whole share stays unsharded: its parameters x e + the largest unit x (e + 4).
// With no_sync (gathers_once_per_step) the rank's share stays gathered for the whole step and
// every parameter's gradient is accumulated unsharded in fp32 over the microbatches (FSDP2
// upcasts it to reduce_dtype, to_accumulated_grad_if_needed) until the one reduction: its
// parameters gathered (x e, or as gathered in FP8) + its parameters x 4 + the largest unit x e (a
// unit's gradient before the upcast).
#include <cstdint>
#include <span>
#include <string>

namespace meshsim {

struct ShardingPlan {
  int zero = 0;       // ZeRO stage: 0 none, 1 optimizer state, 2 + gradients, 3 + parameters
  bool fsdp = false;  // FSDP2: ZeRO-3 with FSDP2's mixed precision (fp32 sharded parameters)
  int replicate = 1;  // HSDP: replicas R; the state is sharded over the other dp x cp / R ranks
  bool reshard_after_forward = true;  // FSDP2's default; false keeps units gathered until bwd
  // FSDP's no_sync gradient accumulation, as torch.distributed.pipelining drives FSDP2 stages
  // (torchtitan's PP): units kept gathered after their first forward of the step, gradients
  // accumulated unsharded in fp32 and reduce-scattered once, after the last microbatch.
  bool no_sync = false;
  bool operator==(const ShardingPlan&) const = default;
};

// Whether parameters are sharded and gathered per unit (ZeRO-3 / FSDP).
inline bool shards_parameters(const ShardingPlan& s) {
  return s.zero >= 3;
}

// Whether units are gathered once per step and their gradients reduced once, after the last
// microbatch, instead of per microbatch (ShardingPlan::no_sync).
inline bool gathers_once_per_step(const ShardingPlan& s) {
  return shards_parameters(s) && s.no_sync;
}

// Throws InputError naming the field: zero in 0..3, replicate >= 1 dividing dp, replicate > 1,
// reshard_after_forward false and no_sync only with zero 3 (FSDP).
void check_sharding(const ShardingPlan& s, int dp);

// "none", "zero-1", "zero-2", "zero-3", "fsdp", "hsdp R" (+ ", no reshard after forward",
// ", no sync").
std::string describe_sharding(const ShardingPlan& s);

// Persistent bytes per parameter on one rank (parameters + gradients + optimizer state) for
// ZeRO stage `zero` over `shards` ranks with the given per-parameter sizes: the formulas above.
struct ParameterBytes {
  double param = 2, grad = 4, optimizer = 12;
};
struct ShardedBytes {
  double weights = 0, gradients = 0, optimizer = 0;  // per parameter
  double total() const { return weights + gradients + optimizer; }
};
// The same for `params` parameters (bytes = params x size / shards for each sharded part).
ShardedBytes sharded_state(double params, int zero, double shards, const ParameterBytes& bytes);
inline ShardedBytes sharded_bytes_per_parameter(int zero, double shards,
                                                const ParameterBytes& bytes) {
  return sharded_state(1, zero, shards, bytes);
}
// FSDP2's per-parameter sizes (fp32 parameter shard, fp32 gradient shard, Adam's m and v).
inline constexpr ParameterBytes kFsdp2Bytes{4, 4, 8};

// One FSDP unit of a rank: its parameters, and the bytes its all-gather leaves unsharded: its
// parameters x e, or with torchtitan's FP8 all-gather (fsdp_gathers_quantized) 1 byte per linear
// weight and e per other parameter (norms).
struct FsdpUnit {
  std::int64_t params = 0;
  double gathered_bytes = 0;
};

// ZeRO-3 / FSDP unsharded buffers of one rank (see the top) for the units it holds, e the
// parameter dtype's bytes: the gathered parameters as each unit's gathered_bytes, the gradients
// by its parameters (in e, and in fp32 for the reduce-scatter or the no_sync accumulation).
double unsharded_unit_bytes(const ShardingPlan& s, std::span<const FsdpUnit> units, double e);

}  // namespace meshsim
