#pragma once
// Reference losses in float64 (the definitions the fast loss kernels are checked against).
#include <span>

namespace meshsim::kernels::reference {

// L = (1/n) sum (y - t)^2; dy = 2 (y - t) / n (dy may be empty).
double mse_loss(std::span<const double> y, std::span<const double> target, std::span<double> dy);

// L = sum w y; dy = w (dy may be empty).
double dot_loss(std::span<const double> y, std::span<const double> weight, std::span<double> dy);

}  // namespace meshsim::kernels::reference
