#include "kernels/cpu/loss.hpp"

#include <algorithm>
#include <vector>

#include "kernels/cpu/convert.hpp"

namespace meshsim::kernels::cpu {
namespace {

constexpr std::int64_t kChunk = 4096;

// Runs f(y chunk, other chunk, gradient chunk, n) over both inputs in float64 and stores the
// gradient chunk into dy when it has data; returns the sum of what f returns.
template <class F>
double chunked(const VectorView& y, const VectorView& other, const VectorView& dy, F&& f) {
  MESHSIM_KERNEL_CHECK(other.size == y.size, "the two inputs' sizes differ");
  MESHSIM_KERNEL_CHECK(dy.data == nullptr || dy.size == y.size, "dy size differs from y's");
  const auto chunk = static_cast<std::size_t>(std::min(kChunk, y.size));
  std::vector<double> ys(chunk), os(chunk), gs(chunk);
  double total = 0.0;
  for (std::int64_t i0 = 0; i0 < y.size; i0 += kChunk) {
    const std::int64_t n = std::min(kChunk, y.size - i0);
    load(element_address(y.data, y.type, i0), y.type, n, ys.data());
    load(element_address(other.data, other.type, i0), other.type, n, os.data());
    total += f(ys.data(), os.data(), gs.data(), static_cast<std::size_t>(n));
    if (dy.data != nullptr) store(gs.data(), n, element_address(dy.data, dy.type, i0), dy.type);
  }
  return total;
}

}  // namespace

double mse_loss(const VectorView& y, const VectorView& target, const VectorView& dy,
                double grad_scale) {
  MESHSIM_KERNEL_CHECK(y.size > 0, "empty output");
  const double inv_n = 1.0 / static_cast<double>(y.size);
  const double sum =
      chunked(y, target, dy, [&](const double* ys, const double* ts, double* gs, std::size_t n) {
        double s = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
          const double e = ys[i] - ts[i];
          s += e * e;
          gs[i] = grad_scale * 2.0 * e * inv_n;
        }
        return s;
      });
  return sum * inv_n;
}

double dot_loss(const VectorView& y, const VectorView& weight, const VectorView& dy,
                double grad_scale) {
  return chunked(y, weight, dy, [&](const double* ys, const double* ws, double* gs, std::size_t n) {
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      s += ws[i] * ys[i];
      gs[i] = grad_scale * ws[i];
    }
    return s;
  });
}

}  // namespace meshsim::kernels::cpu
