#include "validate/tensors/workload.hpp"

#include <fmt/format.h>

#include "validate/tensors/workload_layouts.hpp"

namespace meshsim {
namespace {

template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

}  // namespace

Program build_program(const Workload& w) {
  return std::visit(Overload{[](const RingAttentionConfig& c) { return build_ring_attention(c); },
                             [](const TpLinearConfig& c) { return build_tp_linear(c); },
                             [](const PipelineConfig& c) { return build_pipeline(c); }},
                    w.config);
}

TensorLayout tensor_layout(const Workload& w) {
  return std::visit(Overload{[](const RingAttentionConfig& c) { return ring_attention_layout(c); },
                             [](const TpLinearConfig& c) { return tp_linear_layout(c); },
                             [](const PipelineConfig& c) { return pipeline_layout(c); }},
                    w.config);
}

}  // namespace meshsim
