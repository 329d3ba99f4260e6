#pragma once
// The workloads `meshsim validate` runs: a builder configuration, the Program it builds and its
// tensor layout.
#include <string>
#include <variant>

#include "schedules/pipeline.hpp"
#include "schedules/ring_attention.hpp"
#include "schedules/tp_linear.hpp"
#include "sim/program.hpp"
#include "validate/tensors/tensor_layout.hpp"

namespace meshsim {

struct Workload {
  std::variant<RingAttentionConfig, TpLinearConfig, PipelineConfig> config;
};

Program build_program(const Workload& workload);
TensorLayout tensor_layout(const Workload& workload);

}  // namespace meshsim
