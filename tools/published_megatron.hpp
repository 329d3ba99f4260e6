#pragma once
// The Megatron-Core settings a published run states beyond its sizes (data/published/README.md),
// each applied only where the row says the run had it (the Megatron-Bridge rows take them from
// their recipes):
//   parallel.tp_comm_overlap      true: --tp-comm-overlap (TE's userbuffers TP overlap)
//   parallel.tp_comm_overlap_rs   "ring-exchange": --tp-comm-overlap-rs ring-exchange; absent, null
//                                 or "pipeline": TE's default
//   parallel.fp8_param_gather     true: --fp8-param-gather (FP8 parameters)
//   parallel.grad_reduce_in_fp32  false: --no-grad-reduce-in-fp32; absent or null: fp32
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/step_plan.hpp"
#include "sim/hardware_profile.hpp"

namespace meshsim {

struct PublishedMegatronSettings {
  bool tp_comm_overlap = false;
  TpOverlapRs tp_overlap_rs = TpOverlapRs::pipeline;
  bool fp8_param_gather = false;
  bool grad_reduce_in_fp32 = true;
};

// The settings of a row's `parallel` object; InputError naming the field when one is malformed
// (an error of the file).
PublishedMegatronSettings read_megatron_settings(const nlohmann::json& parallel);

// The settings applied to the plan, with a note each; InputError when the plan cannot take them
// (the row is then skipped with the reason).
void apply_megatron_settings(const PublishedMegatronSettings& s, const HardwareProfile& hardware,
                             StepPlan& plan, std::vector<std::string>& notes);

}  // namespace meshsim
