#pragma once
// CUDA_CHECK / CUBLAS_CHECK / NCCL_CHECK(call): a failed call throws CudaError naming the library,
// the call, the file:line and the library's own message. Only the CUDA backend's .cpp files in
// validate/ include this header (and the CUDA, cuBLAS and NCCL headers).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <stdexcept>

namespace meshsim {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void cuda_call_failed(const char* library, const char* message, const char* call,
                                   const char* file, int line);

}  // namespace meshsim

#define CUDA_CHECK(call)                                                                         \
  do {                                                                                           \
    const cudaError_t meshsim_cuda_rc_ = (call);                                                 \
    if (meshsim_cuda_rc_ != cudaSuccess) {                                                       \
      ::meshsim::cuda_call_failed("CUDA", cudaGetErrorString(meshsim_cuda_rc_), #call, __FILE__, \
                                  __LINE__);                                                     \
    }                                                                                            \
  } while (false)

#define CUBLAS_CHECK(call)                                                                    \
  do {                                                                                        \
    const cublasStatus_t meshsim_cublas_rc_ = (call);                                         \
    if (meshsim_cublas_rc_ != CUBLAS_STATUS_SUCCESS) {                                        \
      ::meshsim::cuda_call_failed("cuBLAS", cublasGetStatusString(meshsim_cublas_rc_), #call, \
                                  __FILE__, __LINE__);                                        \
    }                                                                                         \
  } while (false)

#define NCCL_CHECK(call)                                                                         \
  do {                                                                                           \
    const ncclResult_t meshsim_nccl_rc_ = (call);                                                \
    if (meshsim_nccl_rc_ != ncclSuccess) {                                                       \
      ::meshsim::cuda_call_failed("NCCL", ncclGetErrorString(meshsim_nccl_rc_), #call, __FILE__, \
                                  __LINE__);                                                     \
    }                                                                                            \
  } while (false)
