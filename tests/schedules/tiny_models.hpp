#pragma once
// Small models shared by the step tests (test_training_step, test_layer_layout,
// test_microbatch_recompute, test_step_layers, ...): every op of a step on them is cheap to build
// and simulate; with the plan and step-time helpers those tests share.
#include <cstdint>

#include "schedules/model_catalog.hpp"
#include "schedules/training_step.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/run.hpp"

namespace meshsim::test {

// A small GQA + SwiGLU model: h 64, 4 heads (d 16), 2 KV heads, f 128, V 256, seq 32.
inline TransformerModel tiny_gqa_model(int layers) {
  TransformerModel m;
  m.name = "tiny";
  m.layers = layers;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn_hidden = 128;
  m.vocab = 256;
  m.seq_len = 32;
  return m;
}

// A plan of that mesh and global batch, everything else the StepPlan defaults.
inline StepPlan plan_of(int tp, int pp, int cp, int dp, std::int64_t gbs) {
  StepPlan p;
  p.tp = tp;
  p.pp = pp;
  p.cp = cp;
  p.dp = dp;
  p.global_batch = gbs;
  return p;
}

// The simulated step time of the plan on the hardware.
inline Nanos step_time(const TransformerModel& m, const StepPlan& p, const HardwareProfile& hw) {
  return run_simulation(build_training_step(m, p, hw.gpus_per_node), hw).metrics.makespan;
}

}  // namespace meshsim::test
