#pragma once
// Numerics of ARCHITECTURE.md §5: the unsharded tensors of a run (assembled on rank 0, the same
// tensors
// --dump writes) against a float64 reference computed on one rank from the run's own input
// tensors (as stored) with kernels/reference, independently of the kernels that ran:
//   ring attention: out, lse against full attention; dq, dk, dv against its backward;
//   tp-linear: y, dx, dw, db against the unsharded layer;
//   pipeline: y, dx, dw against the unpipelined model.
// Per tensor: the max absolute error and the normwise relative error max|got - ref| / max|ref|,
// PASS when the relative error is within the tolerance of the tensor's storage dtype (for the
// pipeline, of the coarser of that and the workload's dtype, which the stages exchange).
#include <map>
#include <string>
#include <vector>

#include "sim/dtype.hpp"
#include "validate/tensors/global_tensors.hpp"
#include "validate/tensors/workload.hpp"

namespace meshsim {

struct TensorNumerics {
  std::string tensor;
  DType dtype = DType::fp32;
  double max_abs_error = 0;
  double max_rel_error = 0;  // normwise: max|got - ref| / max|ref|
  double tolerance = 0;
  bool pass = false;
};

struct NumericsReport {
  std::vector<TensorNumerics> tensors;
  bool pass = false;
};

// Tolerance on the normwise relative error for results stored in `dtype` (a few units of its
// rounding, with room for float32 accumulation over long sums): bf16 2e-2, fp16 4e-3, fp32 1e-4,
// fp64 1e-9.
double numerics_tolerance(DType dtype);

// One tensor against its reference (sizes must agree).
TensorNumerics compare_tensor(const GlobalTensorData& got, const std::vector<double>& expected);

// The workload's outputs in `gathered` (assemble_global_tensors' result, inputs included) against
// the reference, per tensor as --dump names them (k, v, dk, dv rather than the packed kv, dkv).
NumericsReport check_numerics(const Workload& workload,
                              const std::vector<GlobalTensorData>& gathered);

// The tensor called `name` (InvariantError when missing); references read their inputs with it.
const GlobalTensorData& find_tensor(const std::vector<GlobalTensorData>& tensors,
                                    const std::string& name);

}  // namespace meshsim
