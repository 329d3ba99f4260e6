#pragma once
// Microbenchmarks of the CUDA backend for calibration (ARCHITECTURE.md §5): a cuBLAS GEMM sweep on
// this process's GPU and an NCCL collective sweep over all ranks of MPI_COMM_WORLD. Each point is
// timed with CUDA events around the call, `warmup` untimed runs first, then the median of `runs`
// (at least 5) timed runs; bandwidths with nccl-tests' definitions
// (validate/run/microbench_stats.hpp). Plain structs and no CUDA types; part of the CUDA backend
// plugin (validate/cuda/cuda_plugin.hpp), used by its calibration. Call bind_cuda_device()
// (validate/cuda/cuda_backend.hpp) first.
#include <cstdint>
#include <vector>

#include "sim/dtype.hpp"
#include "sim/program.hpp"

namespace meshsim {

struct MicrobenchOptions {
  int warmup = 2;
  int runs = 5;  // raised to 5 if lower
};

struct GemmBenchShape {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::bf16;  // A, B and C; fp32 accumulation for bf16/fp16
};

struct GemmTiming {
  GemmBenchShape shape;
  int runs = 0;
  double seconds = 0;      // median
  double flops_per_s = 0;  // 2 m n k / seconds
};

struct CollectiveTiming {
  CollectiveKind kind = CollectiveKind::all_reduce;
  std::int64_t bytes = 0;  // nccl-tests' size: the whole buffer (all-gather: the output)
  int ranks = 1;
  DType dtype = DType::bf16;
  int runs = 0;
  double seconds = 0;  // median
  double algbw = 0;    // bytes / s
  double busbw = 0;    // bytes / s
};

std::vector<GemmTiming> cuda_gemm_sweep(const std::vector<GemmBenchShape>& shapes,
                                        const MicrobenchOptions& options = {});

// Collective over MPI_COMM_WORLD (MPI initialized; every rank passes the same arguments). Kinds:
// all_reduce, all_gather, reduce_scatter, all_to_all, broadcast (root 0); sizes are rounded down
// to a multiple of ranks x element size.
std::vector<CollectiveTiming> nccl_collective_sweep(const std::vector<CollectiveKind>& kinds,
                                                    const std::vector<std::int64_t>& bytes,
                                                    DType dtype,
                                                    const MicrobenchOptions& options = {});

}  // namespace meshsim
