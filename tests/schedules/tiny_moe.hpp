#pragma once
// A small MoE model and plans for the MoE step tests (test_step_moe, test_step_deepep,
// test_step_overlap), and what they count in a step.
#include <iterator>
#include <string>
#include <string_view>

#include "schedules/step_plan.hpp"
#include "sim/comm_volume.hpp"
#include "sim/program.hpp"
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

// The index of a mesh dimension in comm_bytes_per_rank's entries.
inline std::size_t dim_index(std::string_view dim) {
  for (std::size_t i = 0; i < std::size(kCommDims); ++i) {
    if (kCommDims[i] == dim) return i;
  }
  return 0;
}

// Ops whose name contains `part`.
inline int count_named(const Program& p, std::string_view part) {
  int n = 0;
  for (const Op& op : p.ops) n += op.name.find(part) != std::string::npos ? 1 : 0;
  return n;
}

}  // namespace meshsim::test
