#include "kernels/reference/vector_ops.hpp"

#include <cstddef>
#include <stdexcept>

namespace meshsim::kernels::reference {
namespace {

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(what);
}

}  // namespace

void accumulate(std::span<const double> x, std::span<double> y, double alpha) {
  require(x.size() == y.size(), "reference::accumulate: sizes differ");
  for (std::size_t i = 0; i < x.size(); ++i) y[i] += alpha * x[i];
}

void add_bias(std::int64_t rows, std::int64_t cols, std::span<double> y,
              std::span<const double> bias) {
  const auto r = static_cast<std::size_t>(rows), c = static_cast<std::size_t>(cols);
  require(y.size() == r * c && bias.size() == c, "reference::add_bias: sizes differ");
  for (std::size_t i = 0; i < r; ++i) {
    for (std::size_t j = 0; j < c; ++j) y[i * c + j] += bias[j];
  }
}

void bias_grad(std::int64_t rows, std::int64_t cols, std::span<const double> dy,
               std::span<double> db) {
  const auto r = static_cast<std::size_t>(rows), c = static_cast<std::size_t>(cols);
  require(dy.size() == r * c && db.size() == c, "reference::bias_grad: sizes differ");
  for (std::size_t i = 0; i < r; ++i) {
    for (std::size_t j = 0; j < c; ++j) db[j] += dy[i * c + j];
  }
}

void activation_forward(Activation f, std::span<const double> x, std::span<double> y) {
  require(x.size() == y.size(), "reference::activation_forward: sizes differ");
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = activation_value(f, x[i]);
}

void activation_backward(Activation f, std::span<const double> x, std::span<const double> dy,
                         std::span<double> dx) {
  require(x.size() == dy.size() && dx.size() == x.size(),
          "reference::activation_backward: sizes differ");
  for (std::size_t i = 0; i < x.size(); ++i) dx[i] = activation_derivative(f, x[i]) * dy[i];
}

}  // namespace meshsim::kernels::reference
