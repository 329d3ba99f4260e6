// The plan `meshsim step --json` prints (tools/step_plan_json.cpp): the mesh and batch, every
// setting always, the optional ones only when they are not the default.
#include <doctest/doctest.h>

#include "schedules/model_catalog.hpp"
#include "tools/step_plan_json.hpp"

using namespace meshsim;

TEST_CASE("step plan JSON: the mesh, the batch and the always-present settings") {
  const TransformerModel m = *builtin_model("llama3-8b");
  StepPlan p;
  p.tp = 2;
  p.pp = 2;
  p.dp = 2;
  p.global_batch = 16;
  p.microbatch_size = 1;
  const auto j = plan_json(m, p);
  CHECK(j["model"] == "llama3-8b");
  CHECK(j["tp"] == 2);
  CHECK(j["pp"] == 2);
  CHECK(j["dp"] == 2);
  CHECK(j["gbs"] == 16);
  CHECK(j["microbatches"] == 8);  // gbs / (dp x mbs) = 16 / 2
  CHECK(j["seq"] == 8192);        // the model's sequence length when the plan gives none
  CHECK(j["recompute"] == "none");
  CHECK(j["layer_kernels"] == "fused");
  CHECK(j["overlap_grad_reduce"] == true);
  // Defaults left out: bf16 precision, no TP overlap, no group size, no layout.
  CHECK_FALSE(j.contains("precision"));
  CHECK_FALSE(j.contains("tp_comm_overlap"));
  CHECK_FALSE(j.contains("tp_comm_overlap_rs"));
  CHECK_FALSE(j.contains("microbatch_group_size"));
  CHECK_FALSE(j.contains("layers_per_stage"));
}

TEST_CASE("step plan JSON: non-default settings are named") {
  const TransformerModel m = *builtin_model("llama3-8b");
  StepPlan p;
  p.tp = 8;
  p.global_batch = 8;
  p.precision = Precision::fp8_current;
  p.tp_comm_overlap = true;
  p.tp_overlap_rs = TpOverlapRs::ring_exchange;
  p.microbatch_group_size = 3;
  p.layout.layers_per_stage = {16, 16};
  const auto j = plan_json(m, p);
  CHECK(j["precision"] == "fp8-current");
  CHECK(j["tp_comm_overlap"] == true);
  CHECK(j["tp_comm_overlap_rs"] == "ring-exchange");
  CHECK(j["microbatch_group_size"] == 3);
  CHECK(j["layers_per_stage"] == nlohmann::ordered_json::array({16, 16}));
}
