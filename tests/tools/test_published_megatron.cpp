// The Megatron-Core settings of a published row (tools/published_megatron.cpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "tools/published_megatron.hpp"

using namespace meshsim;
using nlohmann::json;

TEST_CASE("published Megatron settings: absent fields keep the defaults") {
  const auto s = read_megatron_settings(json::object());
  CHECK_FALSE(s.tp_comm_overlap);
  CHECK(s.tp_overlap_rs == TpOverlapRs::pipeline);
  CHECK_FALSE(s.fp8_param_gather);
  CHECK(s.grad_reduce_in_fp32);  // Megatron-LM's bf16 default
  CHECK(read_megatron_settings(json{{"grad_reduce_in_fp32", nullptr}}).grad_reduce_in_fp32);
}

TEST_CASE("published Megatron settings: stated fields reach the plan with a note each") {
  const json par = {{"tp", 8},
                    {"tp_comm_overlap", true},
                    {"tp_comm_overlap_rs", "ring-exchange"},
                    {"fp8_param_gather", true},
                    {"grad_reduce_in_fp32", false}};
  StepPlan plan;
  plan.tp = 8;
  std::vector<std::string> notes;
  apply_megatron_settings(read_megatron_settings(par), load_hardware("h100-sxm"), plan, notes);
  CHECK(plan.tp_comm_overlap);
  CHECK(plan.gpu_sms == 132);  // enable_tp_comm_overlap takes the profile's SM count
  CHECK(plan.tp_overlap_rs == TpOverlapRs::ring_exchange);
  CHECK(plan.fp8_param_gather);
  CHECK_FALSE(plan.grad_reduce_in_fp32);
  CHECK(notes.size() == 4);
}

TEST_CASE("published Megatron settings: a malformed field is an error of the file") {
  CHECK_THROWS_WITH_AS(read_megatron_settings(json{{"tp_comm_overlap_rs", "ring"}}),
                       doctest::Contains("field 'tp_comm_overlap_rs': expected \"pipeline\" or "
                                         "\"ring-exchange\", got 'ring'"),
                       InputError);
  CHECK_THROWS_WITH_AS(read_megatron_settings(json{{"grad_reduce_in_fp32", "no"}}),
                       doctest::Contains("field 'grad_reduce_in_fp32': expected true, false or "
                                         "null"),
                       InputError);
}
