#pragma once
// The Program's optimizer_update kernel: one Adam/AdamW step over a parameter shard (the
// per-element arithmetic is adam_element() in kernels/elementwise_math.hpp).
#include <cstdint>

#include "kernels/views.hpp"

namespace meshsim::kernels::cpu {

struct AdamConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // decoupled (AdamW); 0 is plain Adam
};

// Step `step` (1-based) over param, with grad and the moments exp_avg, exp_avg_sq (usually fp32,
// updated in place). With a master copy (master.data not null, usually fp32 beside bf16 params),
// the step reads and updates the master and param becomes its rounding; otherwise param is
// updated through the math type directly. Math in float32 unless an operand is fp64.
void adam_update(const AdamConfig& config, std::int64_t step, const VectorView& param,
                 const VectorView& grad, const VectorView& exp_avg, const VectorView& exp_avg_sq,
                 const VectorView& master = VectorView{});

}  // namespace meshsim::kernels::cpu
