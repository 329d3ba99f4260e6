#pragma once
// The Program's loss kernel: a scalar loss of an output and its gradient, the seed of a backward
// pass. Sums accumulate in float64; the gradient is rounded once into dy's type.
#include "kernels/views.hpp"

namespace meshsim::kernels::cpu {

// Mean squared error L = (1/n) sum_i (y_i - t_i)^2; writes dy_i = grad_scale * 2 (y_i - t_i) / n
// unless dy.data is null (grad_scale = 1/m averages the loss over m microbatches).
double mse_loss(const VectorView& y, const VectorView& target, const VectorView& dy,
                double grad_scale = 1.0);

// Weighted sum L = sum_i w_i y_i (a linear probe: dL/dy = w is any chosen dout, the way attention
// gradients are checked); writes dy_i = grad_scale * w_i unless dy.data is null.
double dot_loss(const VectorView& y, const VectorView& weight, const VectorView& dy,
                double grad_scale = 1.0);

}  // namespace meshsim::kernels::cpu
