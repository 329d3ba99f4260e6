#include "validate/check/numerics.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "validate/check/workload_registry.hpp"

namespace meshsim {

double numerics_tolerance(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return 2e-2;  // 8-bit significand: rounding 2^-9 ~ 2e-3 per stored element
    case DType::fp16:
      return 4e-3;  // 11-bit significand: rounding 2^-12 ~ 2.4e-4
    case DType::fp32:
      return 1e-4;
    case DType::fp64:
      return 1e-9;
  }
  return 0;
}

const GlobalTensorData& find_tensor(const std::vector<GlobalTensorData>& tensors,
                                    const std::string& name) {
  for (const auto& t : tensors) {
    if (t.name == name) return t;
  }
  MESHSIM_CHECK(false, fmt::format("numerics: the run has no tensor '{}'", name));
  return tensors.front();
}

TensorNumerics compare_tensor(const GlobalTensorData& got, const std::vector<double>& expected) {
  MESHSIM_CHECK(got.values.size() == expected.size(),
                fmt::format("numerics: '{}' has {} values, the reference {}", got.name,
                            got.values.size(), expected.size()));
  TensorNumerics n;
  n.tensor = got.name;
  n.dtype = got.dtype;
  double scale = 0;
  bool finite = true;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double g = got.values[i], e = expected[i];
    if (std::isinf(e) && g == e) continue;  // both -inf: an empty softmax row
    if (!std::isfinite(g) || !std::isfinite(e)) finite = false;
    n.max_abs_error = std::max(n.max_abs_error, std::abs(g - e));
    scale = std::max(scale, std::abs(e));
  }
  if (!finite) n.max_abs_error = std::numeric_limits<double>::infinity();
  n.max_rel_error = scale > 0 ? n.max_abs_error / scale : n.max_abs_error;
  n.tolerance = numerics_tolerance(got.dtype);
  n.pass = n.max_rel_error <= n.tolerance;
  return n;
}

NumericsReport check_numerics(const Workload& workload,
                              const std::vector<GlobalTensorData>& gathered) {
  // As --dump names them: the packed K/V tensors as k and v, dk and dv.
  const std::vector<GlobalTensorData> tensors = dump_tensors(tensor_layout(workload), gathered);
  const WorkloadDescriptor& descriptor = workload_descriptor(workload);
  const ReferenceTensors expected = descriptor.reference(workload, tensors);
  NumericsReport report;
  report.pass = true;
  // Pipeline stages hand activations and gradients to each other in the workload's dtype, so a
  // result kept in fp32 (the dW main grad) carries that rounding: judge it by the coarser type.
  const std::optional<DType> exchanged = descriptor.exchange_dtype(workload);
  for (const auto& t : tensors) {  // in the layout's order
    const auto e = expected.find(t.name);
    if (e == expected.end()) continue;
    if (exchanged && numerics_tolerance(*exchanged) > numerics_tolerance(t.dtype)) {
      GlobalTensorData judged = t;
      judged.dtype = *exchanged;
      report.tensors.push_back(compare_tensor(judged, e->second));
      report.tensors.back().dtype = t.dtype;
    } else {
      report.tensors.push_back(compare_tensor(t, e->second));
    }
    report.pass = report.pass && report.tensors.back().pass;
  }
  MESHSIM_CHECK(report.tensors.size() == expected.size(),
                "numerics: a reference tensor is not among the run's tensors");
  return report;
}

}  // namespace meshsim
