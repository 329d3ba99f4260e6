#pragma once
// The units the memory model's files share (schedules/memory_model.cpp,
// schedules/activation_terms.cpp). Internal to schedules/.
#include <cstdint>

#include "schedules/memory_model.hpp"
#include "schedules/model_catalog.hpp"

namespace meshsim::memory_units {

inline constexpr double kActivationBytes = 2;  // e: bf16 activations
inline constexpr double kMaskBytes = 1;        // dropout masks
inline constexpr double kFp32Bytes = 4;        // log-sum-exp, cross-entropy softmax

inline double dbl(std::int64_t v) {
  return static_cast<double>(v);
}

inline std::int64_t plan_seq(const TransformerModel& model, const MemoryPlan& plan) {
  return plan.seq > 0 ? plan.seq : model.seq_len;
}

}  // namespace meshsim::memory_units
