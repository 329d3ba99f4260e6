#include "validate/check/workload_registry.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"
#include "validate/check/pipeline_reference.hpp"
#include "validate/check/ring_attention_reference.hpp"
#include "validate/check/tp_linear_reference.hpp"
#include "validate/tensors/workload_layouts.hpp"

namespace meshsim {
namespace {

template <class Config>
const Config& config_of(const Workload& w) {
  return std::get<Config>(w.config);
}

template <class Config>
constexpr std::size_t alternative_of() {
  return decltype(Workload::config)(Config{}).index();
}

std::optional<DType> no_exchange(const Workload&) {
  return std::nullopt;
}

const WorkloadDescriptor kRegistry[] = {
    {"ring-attention", "float64 full attention on one rank", alternative_of<RingAttentionConfig>(),
     [](const Workload& w) { return build_ring_attention(config_of<RingAttentionConfig>(w)); },
     [](const Workload& w) { return ring_attention_layout(config_of<RingAttentionConfig>(w)); },
     [](const Workload& w, const std::vector<GlobalTensorData>& t) {
       return ring_attention_reference(config_of<RingAttentionConfig>(w), t);
     },
     no_exchange},
    {"tp-linear", "the float64 unsharded layer", alternative_of<TpLinearConfig>(),
     [](const Workload& w) { return build_tp_linear(config_of<TpLinearConfig>(w)); },
     [](const Workload& w) { return tp_linear_layout(config_of<TpLinearConfig>(w)); },
     [](const Workload& w, const std::vector<GlobalTensorData>& t) {
       return tp_linear_reference(config_of<TpLinearConfig>(w), t);
     },
     no_exchange},
    {"pipeline", "the float64 unpipelined model", alternative_of<PipelineConfig>(),
     [](const Workload& w) { return build_pipeline(config_of<PipelineConfig>(w)); },
     [](const Workload& w) { return pipeline_layout(config_of<PipelineConfig>(w)); },
     [](const Workload& w, const std::vector<GlobalTensorData>& t) {
       return pipeline_reference(config_of<PipelineConfig>(w), t);
     },
     [](const Workload& w) -> std::optional<DType> { return config_of<PipelineConfig>(w).dtype; }},
};

}  // namespace

std::span<const WorkloadDescriptor> workload_registry() {
  return kRegistry;
}

const WorkloadDescriptor& workload_descriptor(const Workload& workload) {
  for (const auto& d : kRegistry) {
    if (d.alternative == workload.config.index()) return d;
  }
  MESHSIM_CHECK(false,
                fmt::format("workload alternative {} has no descriptor", workload.config.index()));
  return kRegistry[0];
}

const WorkloadDescriptor* find_workload(std::string_view name) {
  for (const auto& d : kRegistry) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

Program build_program(const Workload& workload) {
  return workload_descriptor(workload).build(workload);
}

TensorLayout tensor_layout(const Workload& workload) {
  return workload_descriptor(workload).layout(workload);
}

}  // namespace meshsim
