#include "tools/step_plan_json.hpp"

#include "schedules/sharding.hpp"
#include "tools/moe_flags.hpp"
#include "tools/sweep.hpp"

namespace meshsim {

nlohmann::ordered_json plan_json(const TransformerModel& model, const StepPlan& p) {
  nlohmann::ordered_json j;
  j["model"] = model.name;
  put_mesh(j, p);
  j["gbs"] = p.global_batch;
  j["microbatches"] = microbatches(p);
  j["seq"] = p.seq > 0 ? p.seq : model.seq_len;
  j["schedule"] = to_string(p.schedule);
  j["cp_variant"] = to_string(p.cp_variant);
  j["cp_rotate"] = to_string(p.kv_rotation);
  j["recompute"] = to_string(p.recompute);
  j["attention"] = to_string(p.attention);
  j["cross_entropy"] = to_string(p.cross_entropy);
  j["layer_kernels"] = to_string(p.layer_kernels);
  if (p.precision != Precision::bf16) j["precision"] = to_string(p.precision);
  j["distributed_optimizer"] = p.distributed_optimizer;
  if (p.sharding.zero >= 2) j["sharding"] = describe_sharding(p.sharding);
  j["overlap_param_gather"] = p.overlap_param_gather;
  j["overlap_grad_reduce"] = p.overlap_grad_reduce;
  if (!p.grad_reduce_in_fp32) j["grad_reduce_in_fp32"] = false;
  if (p.fp8_param_gather) j["fp8_param_gather"] = true;
  if (p.tp_comm_overlap) j["tp_comm_overlap"] = true;
  if (p.tp_overlap_rs != TpOverlapRs::pipeline)
    j["tp_comm_overlap_rs"] = to_string(p.tp_overlap_rs);
  j["sequence_parallel"] = p.sequence_parallel;
  j["dp_buckets"] = p.dp_buckets;
  j["fold_dp"] = p.fold_dp;
  j["fold_tp"] = p.fold_tp;
  if (p.microbatch_group_size != 0) j["microbatch_group_size"] = p.microbatch_group_size;
  if (const auto& n = p.num_microbatches_with_partial_activation_checkpoints) {
    j["num_microbatches_with_partial_activation_checkpoints"] = *n;
  }
  put_moe_plan(j, model, p);
  if (!p.layout.empty()) {
    const LayerLayout& l = p.layout;
    if (l.decoder_first_pipeline_num_layers) {
      j["decoder_first_pipeline_num_layers"] = *l.decoder_first_pipeline_num_layers;
    }
    if (l.decoder_last_pipeline_num_layers) {
      j["decoder_last_pipeline_num_layers"] = *l.decoder_last_pipeline_num_layers;
    }
    if (!l.layers_per_stage.empty()) j["layers_per_stage"] = l.layers_per_stage;
  }
  return j;
}

}  // namespace meshsim
