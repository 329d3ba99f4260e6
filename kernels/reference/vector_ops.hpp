#pragma once
// Reference elementwise kernels in float64 over contiguous arrays: accumulate, the linear layer's
// bias (forward add, backward column sums) and activations.
#include <cstdint>
#include <span>

#include "kernels/elementwise_math.hpp"

namespace meshsim::kernels::reference {

// y += alpha x.
void accumulate(std::span<const double> x, std::span<double> y, double alpha = 1.0);

// y [rows, cols]: y[i, j] += bias[j].
void add_bias(std::int64_t rows, std::int64_t cols, std::span<double> y,
              std::span<const double> bias);

// db[j] += sum_i dy[i, j], dy [rows, cols].
void bias_grad(std::int64_t rows, std::int64_t cols, std::span<const double> dy,
               std::span<double> db);

// y = f(x); dx = f'(x) dy.
void activation_forward(Activation f, std::span<const double> x, std::span<double> y);
void activation_backward(Activation f, std::span<const double> x, std::span<const double> dy,
                         std::span<double> dx);

}  // namespace meshsim::kernels::reference
