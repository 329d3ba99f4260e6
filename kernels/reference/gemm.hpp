#pragma once
// Reference GEMM and linear-layer backward: plain float64 loops over contiguous row-major arrays.
// Used only to check the fast kernels (and by the validate mode's float64 references).
#include <cstdint>
#include <span>

namespace meshsim::kernels::reference {

// C [m, n] = alpha op(A) op(B) + beta C; A stored [m, k] or, with trans_a, [k, m]; B [k, n] or,
// with trans_b, [n, k]. beta = 0 does not read C.
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a, bool trans_b, double alpha,
          std::span<const double> a, std::span<const double> b, double beta, std::span<double> c);

// Backward of Y [m, out] = X [m, in] W (w_out_in false: W [in, out]) or X W^T (w_out_in true:
// W [out, in]): dX = dY W^T (or dY W), dW += X^T dY (or dY^T X).
void linear_backward(std::int64_t m, std::int64_t in, std::int64_t out, bool w_out_in,
                     std::span<const double> x, std::span<const double> w,
                     std::span<const double> dy, std::span<double> dx, std::span<double> dw);

}  // namespace meshsim::kernels::reference
