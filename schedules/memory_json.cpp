// The JSON form of a memory estimate (memory_model.hpp's to_json): every stage's parts in bytes.
#include <nlohmann/json.hpp>

#include "schedules/memory_model.hpp"

namespace meshsim {

using nlohmann::json;

json to_json(const MemoryEstimate& est) {
  json stages = json::array();
  for (const auto& st : est.stages) {
    json stage{
        {"rank", st.rank},
        {"layers", st.chunk_layers},
        {"embedding", st.embedding},
        {"output_head", st.output_head},
        {"inflight", st.inflight},
        {"parameters", st.parameters},
        {"weights", st.weights},
        {"gradients", st.gradients},
        {"optimizer", st.optimizer},
        {"activations", st.activations},
        {"recompute_working", st.recompute_working},
        {"cp_buffers", st.cp_buffers},
        {"workspace", st.workspace},
        {"total", st.total()},
    };
    if (st.loss_working > 0) stage["loss_working"] = st.loss_working;
    if (st.unsharded > 0) stage["unsharded"] = st.unsharded;
    if (st.quantized_weights > 0) stage["quantized_weights"] = st.quantized_weights;
    if (st.expert_parameters > 0) {
      stage["expert_parameters"] = st.expert_parameters;
      stage["moe_buffers"] = st.moe_buffers;
    }
    stages.push_back(std::move(stage));
  }
  return json{
      {"oom", est.oom},
      {"peak_bytes", est.peak_bytes},
      {"peak_rank", est.peak_rank},
      {"capacity_bytes", est.capacity_bytes},
      {"layer_split",
       {{"layers", est.split.layers}, {"uneven", est.split.uneven}, {"rule", est.split.rule}}},
      {"stages", std::move(stages)},
  };
}

}  // namespace meshsim
