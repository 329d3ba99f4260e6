#pragma once
// A workload meshsim simulates and validates: one builder configuration. What each one builds,
// its tensor layout and its reference are its descriptor's (validate/check/workload_registry).
#include <variant>

#include "schedules/pipeline.hpp"
#include "schedules/ring_attention.hpp"
#include "schedules/tp_linear.hpp"

namespace meshsim {

struct Workload {
  std::variant<RingAttentionConfig, TpLinearConfig, PipelineConfig> config;
};

}  // namespace meshsim
