#include "tools/published_unread.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace meshsim {
namespace {

// Read by tools/published_*.cpp, or printed by sources and kept as information (the schema of
// data/published/README.md and ../shared/validation/README.md).
constexpr std::array<std::string_view, 14> kModel = {
    "name",     "layers", "hidden", "heads",        "kv_heads",       "ffn",         "vocab", "seq",
    "head_dim", "moe",    "mla",    "architecture", "params_billion", "params_label"};
constexpr std::array<std::string_view, 6> kMoe = {
    "num_experts",       "top_k", "expert_ffn_hidden", "shared_experts", "shared_expert_ffn_hidden",
    "dense_layers_first"};
constexpr std::array<std::string_view, 5> kMla = {"q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
                                                  "qk_nope_head_dim", "v_head_dim"};
constexpr std::array<std::string_view, 9> kCluster = {"gpu",
                                                      "gpus",
                                                      "nodes",
                                                      "gpus_per_node",
                                                      "inter_node_gbps",
                                                      "inter_node",
                                                      "intra_node",
                                                      "peak_fp16_tflops",
                                                      "system"};
constexpr std::array<std::string_view, 23> kParallel = {"tp",
                                                        "pp",
                                                        "dp",
                                                        "cp",
                                                        "vp",
                                                        "ep",
                                                        "etp",
                                                        "micro_batch",
                                                        "global_batch",
                                                        "num_microbatches",
                                                        "sp",
                                                        "recompute",
                                                        "pipeline_schedule",
                                                        "fsdp",
                                                        "sharding",
                                                        "reshard_after_forward",
                                                        "distributed_optimizer",
                                                        "fp8_param_gather",
                                                        "grad_reduce_in_fp32",
                                                        "tp_comm_overlap",
                                                        "tp_comm_overlap_rs",
                                                        "dispatcher",
                                                        "model_parallel_size"};

template <std::size_t N>
void collect(const nlohmann::json& object, std::string_view path,
             const std::array<std::string_view, N>& known, std::vector<std::string>& out) {
  if (!object.is_object()) return;
  for (const auto& item : object.items()) {
    if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
      out.push_back(std::string(path) + "." + item.key());
    }
  }
}

}  // namespace

std::vector<std::string> unread_fields(const PublishedRun& run) {
  std::vector<std::string> out;
  collect(run.model, "model", kModel, out);
  if (run.model.is_object()) {
    if (const auto moe = run.model.find("moe"); moe != run.model.end()) {
      collect(*moe, "model.moe", kMoe, out);
    }
    if (const auto mla = run.model.find("mla"); mla != run.model.end()) {
      collect(*mla, "model.mla", kMla, out);
    }
  }
  collect(run.cluster, "cluster", kCluster, out);
  collect(run.parallel, "parallel", kParallel, out);
  return out;
}

}  // namespace meshsim
