#include "kernels/reference/loss.hpp"

#include <stdexcept>

namespace meshsim::kernels::reference {

double mse_loss(std::span<const double> y, std::span<const double> target, std::span<double> dy) {
  if (y.size() != target.size() || (!dy.empty() && dy.size() != y.size()) || y.empty()) {
    throw std::invalid_argument("reference::mse_loss: sizes differ or empty");
  }
  const double n = static_cast<double>(y.size());
  double sum = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double e = y[i] - target[i];
    sum += e * e;
    if (!dy.empty()) dy[i] = 2.0 * e / n;
  }
  return sum / n;
}

double dot_loss(std::span<const double> y, std::span<const double> weight, std::span<double> dy) {
  if (y.size() != weight.size() || (!dy.empty() && dy.size() != y.size())) {
    throw std::invalid_argument("reference::dot_loss: sizes differ");
  }
  double sum = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    sum += weight[i] * y[i];
    if (!dy.empty()) dy[i] = weight[i];
  }
  return sum;
}

}  // namespace meshsim::kernels::reference
