#pragma once
// A small MoE model and plans for the MoE step tests (test_step_moe, test_step_overlap).
#include "schedules/step_plan.hpp"
#include "tests/schedules/tiny_models.hpp"

namespace meshsim::test {

// tiny_gqa_model with 8 experts of f_e 32, top 2, one dense layer first: layers 1.. are MoE.
inline TransformerModel tiny_moe(int layers, int shared = 0) {
  TransformerModel m = test::tiny_gqa_model(layers);
  MoeBlock b;
  b.experts = 8;
  b.top_k = 2;
  b.expert_ffn = 32;
  b.shared_experts = shared;
  b.shared_ffn = shared > 0 ? 64 : 0;
  b.first_dense_layers = 1;
  m.moe = b;
  return m;
}

inline StepPlan plan(int tp, int pp, int dp, int ep, std::int64_t gbs) {
  StepPlan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.moe.ep = ep;
  p.global_batch = gbs;
  return p;
}

}  // namespace meshsim::test
