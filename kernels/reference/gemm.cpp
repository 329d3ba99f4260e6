#include "kernels/reference/gemm.hpp"

#include <cstddef>
#include <stdexcept>

namespace meshsim::kernels::reference {

void gemm(std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a, bool trans_b, double alpha,
          std::span<const double> a, std::span<const double> b, double beta, std::span<double> c) {
  const auto u = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  if (a.size() != u(m * k) || b.size() != u(k * n) || c.size() != u(m * n)) {
    throw std::invalid_argument("reference::gemm: operand sizes do not match m, n, k");
  }
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double av = trans_a ? a[u(p * m + i)] : a[u(i * k + p)];
        const double bv = trans_b ? b[u(j * k + p)] : b[u(p * n + j)];
        sum += av * bv;
      }
      double& cv = c[u(i * n + j)];
      cv = alpha * sum + (beta == 0.0 ? 0.0 : beta * cv);
    }
  }
}

void linear_backward(std::int64_t m, std::int64_t in, std::int64_t out, bool w_out_in,
                     std::span<const double> x, std::span<const double> w,
                     std::span<const double> dy, std::span<double> dx, std::span<double> dw) {
  if (w_out_in) {
    gemm(m, in, out, false, false, 1.0, dy, w, 0.0, dx);  // dX = dY W, W [out, in]
    gemm(out, in, m, true, false, 1.0, dy, x, 1.0, dw);   // dW += dY^T X
  } else {
    gemm(m, in, out, false, true, 1.0, dy, w, 0.0, dx);  // dX = dY W^T, W [in, out]
    gemm(in, out, m, true, false, 1.0, x, dy, 1.0, dw);  // dW += X^T dY
  }
}

}  // namespace meshsim::kernels::reference
