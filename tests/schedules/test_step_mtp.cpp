// The MTP modules of schedules/step_mtp.cpp on the last stage: their kernels, parameters and
// activations.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <variant>

#include "schedules/memory_model.hpp"
#include "schedules/step_plan.hpp"
#include "schedules/training_step.hpp"
#include "tests/schedules/tiny_models.hpp"
#include "tests/schedules/tiny_moe.hpp"

using namespace meshsim;

namespace {

int compute_ops(const Program& p) {
  return static_cast<int>(
      std::count_if(p.ops.begin(), p.ops.end(), [](const Op& op) { return op.is_compute(); }));
}

bool has_op(const Program& p, const std::string& name) {
  return std::any_of(p.ops.begin(), p.ops.end(), [&](const Op& op) { return op.name == name; });
}

}  // namespace

TEST_CASE("mtp: one module adds its kernels to the last stage, forward and backward") {
  TransformerModel m = test::tiny_gqa_model(2);
  const StepPlan p = test::plan_of(1, 1, 1, 1, 1);
  const Program without = build_training_step(m, p, 8);
  m.mtp_layers = 1;
  const Program with = build_training_step(m, p, 8);
  // Forward: embedding lookup, enorm, hnorm, eh_proj GEMM, the layer's 11 kernels (norm, qkv,
  // RoPE, attention, proj, residual, norm, up, activation, down, residual), final norm, head GEMM,
  // loss = 18. Backward: head dgrad + wgrad, final norm bwd, the layer's 15 (test_training_step's
  // count), eh_proj dgrad + wgrad, hnorm and enorm bwd, embedding grad = 23. tp 1: no collective.
  CHECK(compute_ops(with) - compute_ops(without) == 18 + 23);
  CHECK(with.ops.size() - without.ops.size() == 18 + 23);
  CHECK(has_op(with, "mtp eh proj gemm"));
  CHECK(has_op(with, "mtp loss"));
  CHECK_FALSE(has_op(without, "mtp loss"));
}

TEST_CASE("mtp: the last stage holds the module's parameters and activations") {
  TransformerModel m = test::tiny_gqa_model(4);
  MemoryPlan plan;
  plan.pp = 2;
  plan.microbatches = 2;
  const std::vector<int> inflight = {2, 1};
  const HardwareProfile hw = load_hardware("h100-sxm");
  const MemoryEstimate without = estimate_memory(m, plan, inflight, hw);
  const ActivationTerms t0 = activation_terms(m, plan);
  m.mtp_layers = 1;
  const MemoryEstimate with = estimate_memory(m, plan, inflight, hw);
  // enorm, hnorm, final norm 3h + eh_proj 2h·h + one layer (count_parameters' per_layer).
  const std::int64_t h = 64;
  const std::int64_t module = 3 * h + 2 * h * h + count_parameters(m).per_layer;
  CHECK(with.stages[1].parameters - without.stages[1].parameters == module);
  CHECK(with.stages[0].parameters == without.stages[0].parameters);
  // Per in-flight microbatch (1 on the last rank): the layer as stored, 4 e·sbh of norm and
  // projection inputs, and the head's output_extra again.
  const double sbh = 32.0 * 64;
  const double extra = t0.layer_stored + 4 * 2 * sbh + t0.output_extra;
  CHECK(with.stages[1].activations - without.stages[1].activations == doctest::Approx(extra));
  CHECK(with.stages[0].activations == without.stages[0].activations);
}

TEST_CASE("mtp: an MoE module's experts are reduced over the expert-data-parallel group") {
  TransformerModel m = test::tiny_moe(2);
  StepPlan p = test::plan_of(1, 1, 1, 4, 4);
  p.moe.ep = 2;
  const Program without = build_training_step(m, p, 8);
  m.mtp_layers = 1;
  const Program with = build_training_step(m, p, 8);
  CHECK(has_op(with, "mtp eh proj gemm"));
  // The module's layer (index 2) is an MoE layer: its router runs in the MTP forward, once per
  // microbatch of the built rank (gbs 4 / (dp 4 x mbs 1) = 1 microbatch; DP folded: one rank).
  int routers_without = 0, routers_with = 0;
  for (const Op& op : without.ops) routers_without += op.name == "router" ? 1 : 0;
  for (const Op& op : with.ops) routers_with += op.name == "router" ? 1 : 0;
  CHECK(routers_with - routers_without == 1);
  // The expert gradients' all-reduce over edp = dp 4 / ep 2 = 2 grows by the module's local
  // experts in fp32: 8 / ep 2 experts x one routed expert's parameters x 4 bytes.
  const auto expert_bytes = [](const Program& prog) {
    for (const Op& op : prog.ops) {
      if (op.name.rfind("expert grad", 0) == 0) return std::get<CollectiveCall>(op.body).bytes;
    }
    return std::int64_t{-1};
  };
  CHECK(expert_bytes(with) - expert_bytes(without) ==
        8 / 2 * count_parameters(m).routed_expert * 4);
}
