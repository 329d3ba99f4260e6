#pragma once
// A whole training step as one Program (design §4.4, issue 6): per layer norm, QKV (column
// parallel), attention (the CP ring over the CP group, heads/t per rank), projection (row
// parallel), norm, MLP up (column), activation, MLP down (row), with the TP collectives (all-gather
// / reduce-scatter under sequence parallelism, all-reduce otherwise); embeddings on the first and
// the output head + loss on the last global stage; the pipeline schedule over microbatches; the
// data-parallel gradient reduction bucketed and overlapped with the backward; the optimizer step.
#include <cstdint>
#include <string>
#include <vector>

#include "schedules/memory_model.hpp"
#include "schedules/model_catalog.hpp"
#include "schedules/pipeline_orders.hpp"
#include "schedules/ring_attention.hpp"
#include "sim/dtype.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/program.hpp"

namespace meshsim {

struct StepPlan {
  int tp = 1, pp = 1, cp = 1, dp = 1;
  int vp = 1;                        // chunks per pipeline rank (interleaved); V schedules use 2
  std::int64_t microbatch_size = 1;  // sequences per microbatch
  std::int64_t global_batch = 0;     // sequences per step; microbatches = gbs / (dp x mbs)
  std::int64_t seq = 0;              // 0: the model's seq_len
  bool sequence_parallel = true;
  RingVariant cp_variant = RingVariant::zigzag;
  KvRotation cp_rotation = KvRotation::p2p;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  Recompute recompute = Recompute::none;
  bool distributed_optimizer = false;
  DType dtype = DType::bf16;
  int dp_buckets = 4;  // DP gradient buckets per chunk, reduced as the backward releases them
  // Simulate one DP replica: DP ranks run identical programs, so only dp index 0 is built and its
  // gradient reductions are ops with the analytical time of the whole DP group (see the .cpp).
  bool fold_dp = true;
  bool operator==(const StepPlan&) const = default;
};

int world_size(const StepPlan& plan);
int microbatches(const StepPlan& plan);
MemoryPlan memory_plan(const StepPlan& plan);

// Throws InputError naming the rule the plan breaks (divisibility of heads/kv heads/ffn by tp,
// seq by cp (2 cp for zigzag) and tp under SP, gbs by dp x mbs, layers over pp x vp, the
// schedule's shape rules, world size = tp x pp x cp x dp).
void check_step_plan(const TransformerModel& model, const StepPlan& plan);

Program build_training_step(const TransformerModel& model, const StepPlan& plan,
                            const HardwareProfile& hardware);

}  // namespace meshsim
