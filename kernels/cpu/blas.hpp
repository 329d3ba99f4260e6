#pragma once
// The raw CBLAS GEMM the CPU kernels call on contiguous math-type scratch (row-major; lda, ldb,
// ldc in elements): C = alpha op(A) op(B) + beta C. Internal to kernels/cpu.
#include <cstdint>

namespace meshsim::kernels::cpu::detail {

void blas_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
               float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
               float beta, float* c, std::int64_t ldc);
void blas_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
               double alpha, const double* a, std::int64_t lda, const double* b, std::int64_t ldb,
               double beta, double* c, std::int64_t ldc);

}  // namespace meshsim::kernels::cpu::detail
