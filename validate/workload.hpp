#pragma once
// The workloads `meshsim validate` runs: a builder configuration, the Program it builds, its
// tensor layout, and how its size is given on the command line (for error messages).
#include <string>
#include <variant>

#include "schedules/pipeline.hpp"
#include "schedules/ring_attention.hpp"
#include "schedules/tp_linear.hpp"
#include "sim/program.hpp"
#include "validate/tensor_layout.hpp"

namespace meshsim {

struct Workload {
  std::variant<RingAttentionConfig, TpLinearConfig, PipelineConfig> config;
};

Program build_program(const Workload& workload);
TensorLayout tensor_layout(const Workload& workload);
// The flag that sets the number of ranks with its value: "--cp 4", "--tp 2", "--stages 4".
std::string ranks_flag(const Workload& workload);

}  // namespace meshsim
