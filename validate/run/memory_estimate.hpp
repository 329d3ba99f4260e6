#pragma once
// What a validation will allocate per rank, computed from the Program and the workload's tensor
// layout before anything is allocated (ARCHITECTURE.md §5): the CLI prints it and refuses a run
// that would not fit (`--max-memory`). Counted, per rank r:
//   slots      every tensor slot of r (TensorStore: shape x dtype bytes, 64-byte aligned);
//   comm       the communication scratch of r's streams (comm_scratch_bytes);
//   kernels    scratch operands of kernel calls without slots (ShapeKernelRunner: per stream
//              the largest call, its kernel_bytes(), kept and reused by that stream's thread);
//   gather     on rank 0 when the tensors are gathered (numerics, --dump): every rank's mapped
//              slots as received, the global tensors widened to double, and the float64
//              reference as large again.
// It is an estimate: allocator slack, MPI's buffers and the BLAS workspace are not counted.
#include <cstdint>
#include <string>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"
#include "validate/tensors/tensor_layout.hpp"

namespace meshsim {

struct RankMemoryEstimate {
  int rank = 0;  // the rank with the largest total
  std::int64_t slots = 0;
  std::int64_t comm = 0;
  std::int64_t kernels = 0;
  std::int64_t gather = 0;
  std::int64_t total() const { return slots + comm + kernels + gather; }
};

// The estimate of one rank.
RankMemoryEstimate estimate_rank_memory(const Program& program, const CommPlan& plan,
                                        const TensorLayout& layout, bool gather_tensors, int rank);

// The rank that needs the most (the first such rank on ties).
RankMemoryEstimate estimate_peak_memory(const Program& program, const CommPlan& plan,
                                        const TensorLayout& layout, bool gather_tensors);

// "1.25 GB", "512 MB" (decimal units: B, kB, MB, GB, TB; three significant digits).
std::string format_bytes(std::int64_t bytes);

}  // namespace meshsim
