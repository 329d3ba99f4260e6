#include "kernels/cuda/gemm.hpp"

#include <fmt/format.h>

#include "kernels/cuda/cuda_kernels.hpp"

namespace meshsim::kernels::cuda {
namespace {

cudaDataType_t data_type(ScalarType t) {
  switch (t) {
    case ScalarType::bf16:
      return CUDA_R_16BF;
    case ScalarType::fp16:
      return CUDA_R_16F;
    case ScalarType::fp32:
      return CUDA_R_32F;
    case ScalarType::fp64:
      return CUDA_R_64F;
  }
  return CUDA_R_32F;
}

// A and B of one type, and C of that type or fp32 for 16-bit inputs: cuBLAS takes them as they are.
bool direct(ScalarType a, ScalarType b, ScalarType c) {
  if (a != b) return false;
  if (c == a) return true;
  return c == ScalarType::fp32 && (a == ScalarType::bf16 || a == ScalarType::fp16);
}

cublasStatus_t gemm_direct(cublasHandle_t handle, const MatrixView& a, bool trans_a,
                           const MatrixView& b, bool trans_b, const MatrixView& c, double alpha,
                           double beta, std::int64_t k) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  const auto m = static_cast<int>(c.rows), n = static_cast<int>(c.cols);
  const bool fp64 = a.type == ScalarType::fp64;
  const float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* alpha_p = fp64 ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* beta_p = fp64 ? static_cast<const void*>(&beta) : &beta_f;
  return cublasGemmEx(
      handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
      static_cast<int>(k), alpha_p, b.data, data_type(b.type), static_cast<int>(b.ld), a.data,
      data_type(a.type), static_cast<int>(a.ld), beta_p, c.data, data_type(c.type),
      static_cast<int>(c.ld), fp64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// A contiguous copy of m in type t (stream-ordered scratch), or m itself when it already is.
struct Converted {
  MatrixView view;
  void* owned = nullptr;
};

cublasStatus_t convert(const MatrixView& m, ScalarType t, bool load, cudaStream_t stream,
                       Converted& out) {
  out.view = m;
  if (m.type == t) return CUBLAS_STATUS_SUCCESS;
  MESHSIM_KERNEL_CHECK(m.ld == m.cols, "gemm: converting a strided matrix");
  const std::int64_t n = m.rows * m.cols;
  if (cudaMallocAsync(&out.owned, static_cast<std::size_t>(n * scalar_bytes(t)), stream) !=
      cudaSuccess) {
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  out.view = matrix_view(out.owned, t, m.rows, m.cols);
  if (load && copy(as_vector(m), as_vector(out.view), stream) != cudaSuccess) {
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t gemm(cublasHandle_t handle, const MatrixView& a, bool trans_a, const MatrixView& b,
                    bool trans_b, const MatrixView& c, double alpha, double beta,
                    cudaStream_t stream) {
  const std::int64_t m = trans_a ? a.cols : a.rows, k = trans_a ? a.rows : a.cols;
  const std::int64_t kb = trans_b ? b.cols : b.rows, n = trans_b ? b.rows : b.cols;
  MESHSIM_KERNEL_CHECK(k == kb && c.rows == m && c.cols == n,
                       fmt::format("gemm: op(A) [{}, {}] op(B) [{}, {}] into C [{}, {}]", m, k, kb,
                                   n, c.rows, c.cols));
  MESHSIM_KERNEL_CHECK(m < (1LL << 31) && n < (1LL << 31) && k < (1LL << 31),
                       "gemm: a dimension beyond 2^31");
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  if (direct(a.type, b.type, c.type)) {
    return gemm_direct(handle, a, trans_a, b, trans_b, c, alpha, beta, k);
  }
  const bool fp64 =
      a.type == ScalarType::fp64 || b.type == ScalarType::fp64 || c.type == ScalarType::fp64;
  const ScalarType t = fp64 ? ScalarType::fp64 : ScalarType::fp32;
  Converted ca, cb, cc;
  cublasStatus_t rc = convert(a, t, true, stream, ca);
  if (rc == CUBLAS_STATUS_SUCCESS) rc = convert(b, t, true, stream, cb);
  if (rc == CUBLAS_STATUS_SUCCESS) rc = convert(c, t, beta != 0.0, stream, cc);
  if (rc == CUBLAS_STATUS_SUCCESS) {
    rc = gemm_direct(handle, ca.view, trans_a, cb.view, trans_b, cc.view, alpha, beta, k);
  }
  if (rc == CUBLAS_STATUS_SUCCESS && cc.owned != nullptr &&
      copy(as_vector(cc.view), as_vector(c), stream) != cudaSuccess) {
    rc = CUBLAS_STATUS_EXECUTION_FAILED;
  }
  for (void* p : {ca.owned, cb.owned, cc.owned}) {
    if (p != nullptr) (void)cudaFreeAsync(p, stream);
  }
  return rc;
}

}  // namespace meshsim::kernels::cuda
