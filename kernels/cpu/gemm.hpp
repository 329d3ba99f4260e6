#pragma once
// GEMM through CBLAS (OpenBLAS), and a linear layer's backward built from it. Operands of any
// storage type: float32/float64 operands in a matching math type go to BLAS as they are; others
// (bf16, fp16, mixed types, strided C) are converted to contiguous float32 (float64 when any
// operand is fp64) scratch first, and C is rounded back once.
#include <cstdint>
#include <string>

#include "kernels/cpu/convert.hpp"
#include "kernels/views.hpp"

namespace meshsim::kernels::cpu {

enum class Transpose : std::uint8_t { no, yes };

// C = alpha op(A) op(B) + beta C, with C [m, n], op(A) [m, k], op(B) [k, n]; A is stored [m, k]
// (or [k, m] when transposed), B [k, n] (or [n, k]). beta = 0 does not read C (NaNs in it do not
// propagate), beta = 1 accumulates. The Program's GemmShape{m, n, k, trans_a, trans_b,
// accumulate} is gemm(A, trans_a, B, trans_b, C, 1, accumulate ? 1 : 0). C must not overlap A
// or B.
void gemm(const MatrixView& a, Transpose trans_a, const MatrixView& b, Transpose trans_b,
          const MatrixView& c, double alpha = 1.0, double beta = 0.0);

// How a linear layer stores its weight.
enum class WeightLayout : std::uint8_t {
  in_out,  // W [in, out], Y = X W (the pipeline builder's stage layer)
  out_in,  // W [out, in], Y = X W^T (torch.nn.Linear; the tensor-parallel builder)
};

// The backward of Y [m, out] = X [m, in] op(W): dX = dY op(W)^T (overwritten) and
// dW (+)= X^T dY (in_out) or dY^T X (out_in), accumulated by default like a main-grad buffer.
// The Program's linear_bwd kernel (GemmShape of the forward: m tokens, n outputs, k inputs).
void linear_backward(const MatrixView& x, const MatrixView& w, const MatrixView& dy,
                     const MatrixView& dx, const MatrixView& dw, WeightLayout layout,
                     Store dw_mode = Store::accumulate);

// OpenBLAS's thread count. Its pthread build defaults to one thread per core; an executor running
// several ranks and streams on one machine should set 1 (or OPENBLAS_NUM_THREADS=1).
int blas_threads();
void set_blas_threads(int threads);
// The BLAS build's self-description (OpenBLAS's openblas_get_config()).
std::string blas_config();

}  // namespace meshsim::kernels::cpu
