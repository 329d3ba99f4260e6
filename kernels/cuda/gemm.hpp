#pragma once
// GEMM on a CUDA device through cuBLAS, row-major as kernels/cpu/gemm.hpp:
// C = alpha op(A) op(B) + beta C with A [m, k] (or [k, m] transposed), B [k, n] (or [n, k]).
// bf16/fp16 operands with float32 accumulation (CUBLAS_COMPUTE_32F; C bf16/fp16 or fp32), fp32 in
// float32, fp64 in float64. Other type combinations (A and B of different types, e.g. a bf16
// activation times an fp32 gradient) are converted to float32 (float64 when any is fp64) in
// stream-ordered scratch first. The handle must be bound to `stream` (cublasSetStream).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "kernels/views.hpp"

namespace meshsim::kernels::cuda {

// The status of the first failing step (a scratch allocation failure is
// CUBLAS_STATUS_ALLOC_FAILED, a failed conversion CUBLAS_STATUS_EXECUTION_FAILED).
cublasStatus_t gemm(cublasHandle_t handle, const MatrixView& a, bool trans_a, const MatrixView& b,
                    bool trans_b, const MatrixView& c, double alpha, double beta,
                    cudaStream_t stream);

}  // namespace meshsim::kernels::cuda
