#pragma once
// Numerics of design §5 — THE HOOK, NOT IMPLEMENTED YET.
//
// check_numerics() will compare the run's unsharded outputs (assembled on rank 0 by
// global_tensors.hpp, the same tensors --dump writes) with a float64 one-rank reference computed
// from the same seeded inputs (ValueGenerator: the elements of the global inputs as stored):
//   ring attention: out, lse, dq, dk, dv against full causal (or full) attention;
//   tp-linear: y, dx, dw, db against the unsharded layer;
//   pipeline: gradients against the unpipelined model (needs the builder's tensor slots first);
// reporting per tensor the max absolute and relative error and PASS/FAIL against a tolerance per
// dtype. The reference functions come from kernels/reference (the kernels helper's float64
// loops), and the compute ops must run real kernels (a CPU KernelRunner over kernels/cpu) for the
// comparison to mean anything. Until both are wired, it returns std::nullopt with the reason, and
// `meshsim validate` reports no numerics.
#include <optional>
#include <string>
#include <vector>

#include "validate/global_tensors.hpp"
#include "validate/tensor_layout.hpp"
#include "validate/workload.hpp"

namespace meshsim {

struct TensorNumerics {
  std::string tensor;
  double max_abs_error = 0;
  double max_rel_error = 0;
  double tolerance = 0;
  bool pass = false;
};

struct NumericsReport {
  std::vector<TensorNumerics> tensors;
  bool pass = false;
};

struct NumericsOutcome {
  std::optional<NumericsReport> report;  // empty: not computed
  std::string not_computed_because;
};

NumericsOutcome check_numerics(const Workload& workload, const TensorLayout& layout,
                               const std::vector<GlobalTensorData>& outputs, std::uint64_t seed,
                               bool kernels_ran);

}  // namespace meshsim
