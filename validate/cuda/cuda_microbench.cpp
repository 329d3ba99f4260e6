#include "validate/cuda/cuda_microbench.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "kernels/cuda/gemm.hpp"
#include "kernels/views.hpp"
#include "sim/error.hpp"
#include "validate/cuda/cuda_check.hpp"
#include "validate/mpi/mpi_check.hpp"
#include "validate/run/microbench_stats.hpp"

namespace meshsim {
namespace {

ncclDataType_t nccl_data_type(DType t) {
  switch (t) {
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp16:
      return ncclFloat16;
    case DType::fp32:
      return ncclFloat32;
    case DType::fp64:
      return ncclFloat64;
  }
  return ncclFloat32;
}

// Median seconds of options.runs timed calls of `issue` on `stream`, after the warm-up.
double time_median(const std::function<void()>& issue, cudaStream_t stream,
                   const MicrobenchOptions& options, int& runs) {
  runs = std::max(options.runs, 5);
  for (int i = 0; i < options.warmup; ++i) issue();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  cudaEvent_t start = nullptr, end = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&end));
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) {
    CUDA_CHECK(cudaEventRecord(start, stream));
    issue();
    CUDA_CHECK(cudaEventRecord(end, stream));
    CUDA_CHECK(cudaEventSynchronize(end));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, end));
    seconds.push_back(static_cast<double>(ms) * 1e-3);
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(end);
  return median_seconds(seconds);
}

struct DeviceBuffer {
  explicit DeviceBuffer(std::int64_t bytes) {
    CUDA_CHECK(cudaMalloc(&data, static_cast<std::size_t>(std::max<std::int64_t>(bytes, 256))));
    CUDA_CHECK(cudaMemset(data, 0, static_cast<std::size_t>(std::max<std::int64_t>(bytes, 256))));
  }
  ~DeviceBuffer() { (void)cudaFree(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data = nullptr;
};

}  // namespace

std::vector<GemmTiming> cuda_gemm_sweep(const std::vector<GemmBenchShape>& shapes,
                                        const MicrobenchOptions& options) {
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t handle = nullptr;
  CUBLAS_CHECK(cublasCreate(&handle));
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  std::vector<GemmTiming> out;
  for (const GemmBenchShape& s : shapes) {
    const auto t = static_cast<kernels::ScalarType>(s.dtype);
    const std::int64_t e = dtype_bytes(s.dtype);
    DeviceBuffer a(s.m * s.k * e), b(s.k * s.n * e), c(s.m * s.n * e);
    const kernels::MatrixView va = kernels::matrix_view(a.data, t, s.m, s.k);
    const kernels::MatrixView vb = kernels::matrix_view(b.data, t, s.k, s.n);
    const kernels::MatrixView vc = kernels::matrix_view(c.data, t, s.m, s.n);
    GemmTiming timing;
    timing.shape = s;
    timing.seconds = time_median(
        [&] {
          CUBLAS_CHECK(kernels::cuda::gemm(handle, va, false, vb, false, vc, 1.0, 0.0, stream));
        },
        stream, options, timing.runs);
    timing.flops_per_s = timing.seconds > 0
                             ? 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) *
                                   static_cast<double>(s.k) / timing.seconds
                             : 0.0;
    out.push_back(timing);
  }
  (void)cublasDestroy(handle);
  (void)cudaStreamDestroy(stream);
  return out;
}

std::vector<CollectiveTiming> nccl_collective_sweep(const std::vector<CollectiveKind>& kinds,
                                                    const std::vector<std::int64_t>& bytes,
                                                    DType dtype, const MicrobenchOptions& options) {
  int rank = 0, ranks = 1;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks));
  ncclUniqueId id;
  if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, static_cast<int>(sizeof(id)), MPI_BYTE, 0, MPI_COMM_WORLD));
  ncclComm_t comm = nullptr;
  NCCL_CHECK(ncclCommInitRank(&comm, ranks, id, rank));
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const ncclDataType_t type = nccl_data_type(dtype);
  const std::int64_t e = dtype_bytes(dtype);
  std::vector<CollectiveTiming> out;
  for (const CollectiveKind kind : kinds) {
    for (const std::int64_t requested : bytes) {
      const std::int64_t size = requested / (ranks * e) * (ranks * e);
      if (size <= 0) continue;
      const auto total = static_cast<std::size_t>(size / e);           // elements of the buffer
      const auto part = static_cast<std::size_t>(size / (ranks * e));  // per rank
      DeviceBuffer send(size), recv(size);
      std::function<void()> issue;
      switch (kind) {
        case CollectiveKind::all_reduce:
          issue = [&] {
            NCCL_CHECK(ncclAllReduce(send.data, recv.data, total, type, ncclSum, comm, stream));
          };
          break;
        case CollectiveKind::all_gather:
          issue = [&] {
            NCCL_CHECK(ncclAllGather(send.data, recv.data, part, type, comm, stream));
          };
          break;
        case CollectiveKind::reduce_scatter:
          issue = [&] {
            NCCL_CHECK(ncclReduceScatter(send.data, recv.data, part, type, ncclSum, comm, stream));
          };
          break;
        case CollectiveKind::broadcast:
          issue = [&] {
            NCCL_CHECK(ncclBroadcast(send.data, recv.data, total, type, 0, comm, stream));
          };
          break;
        case CollectiveKind::all_to_all:
          issue = [&] {
            NCCL_CHECK(ncclGroupStart());
            for (int p = 0; p < ranks; ++p) {
              const auto offset = static_cast<std::size_t>(p) * part * static_cast<std::size_t>(e);
              NCCL_CHECK(
                  ncclSend(static_cast<char*>(send.data) + offset, part, type, p, comm, stream));
              NCCL_CHECK(
                  ncclRecv(static_cast<char*>(recv.data) + offset, part, type, p, comm, stream));
            }
            NCCL_CHECK(ncclGroupEnd());
          };
          break;
        case CollectiveKind::permute:
        case CollectiveKind::barrier:
          throw InputError(
              fmt::format("nccl_collective_sweep: {} is not benchmarked", to_string(kind)));
      }
      CollectiveTiming timing;
      timing.kind = kind;
      timing.bytes = size;
      timing.ranks = ranks;
      timing.dtype = dtype;
      timing.seconds = time_median(issue, stream, options, timing.runs);
      timing.algbw = algbw(size, timing.seconds);
      timing.busbw = busbw(kind, ranks, size, timing.seconds);
      out.push_back(timing);
    }
  }
  (void)ncclCommDestroy(comm);
  (void)cudaStreamDestroy(stream);
  return out;
}

}  // namespace meshsim
