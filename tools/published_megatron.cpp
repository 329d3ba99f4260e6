#include "tools/published_megatron.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"
#include "tools/published_runs.hpp"
#include "tools/tp_overlap_flag.hpp"

namespace meshsim {

PublishedMegatronSettings read_megatron_settings(const nlohmann::json& parallel) {
  using namespace published_fields;
  PublishedMegatronSettings s;
  s.tp_comm_overlap = flag(parallel, "tp_comm_overlap");
  if (const auto word = text(parallel, "tp_comm_overlap_rs")) {
    const auto rs = parse_tp_overlap_rs(*word);
    if (!rs) {
      throw InputError(fmt::format(
          "field 'tp_comm_overlap_rs': expected \"pipeline\" or \"ring-exchange\", got '{}'",
          *word));
    }
    s.tp_overlap_rs = *rs;
  }
  s.fp8_param_gather = flag(parallel, "fp8_param_gather");
  s.grad_reduce_in_fp32 = flag_or(parallel, "grad_reduce_in_fp32", true);
  return s;
}

void apply_megatron_settings(const PublishedMegatronSettings& s, const HardwareProfile& hardware,
                             StepPlan& plan, std::vector<std::string>& notes) {
  if (s.tp_comm_overlap) {
    enable_tp_comm_overlap(hardware, plan);
    notes.emplace_back("TP communication overlap (the source's --tp-comm-overlap)");
  }
  // check_step_plan refuses a ring-exchange reduce-scatter without the overlap.
  plan.tp_overlap_rs = s.tp_overlap_rs;
  if (s.tp_overlap_rs == TpOverlapRs::ring_exchange) {
    notes.emplace_back(
        "TP communication overlap: ring-exchange reduce-scatter (the run's userbuffers "
        "configuration)");
  }
  plan.fp8_param_gather = s.fp8_param_gather;
  if (s.fp8_param_gather) {
    notes.emplace_back("FP8 parameters, all-gathered in FP8 (the run's fp8_param_gather)");
  }
  plan.grad_reduce_in_fp32 = s.grad_reduce_in_fp32;
  if (!s.grad_reduce_in_fp32) {
    notes.emplace_back(
        "gradients kept and reduced in the parameters' dtype (the run's grad_reduce_in_fp32 "
        "false)");
  }
}

}  // namespace meshsim
