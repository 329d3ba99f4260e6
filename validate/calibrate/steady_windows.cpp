#include "validate/calibrate/steady_windows.hpp"

#include <algorithm>

#include "sim/error.hpp"

namespace meshsim {

std::vector<bool> steady_between(const std::vector<double>& readings, double max_drift) {
  if (readings.size() < 2) return {};
  const double fastest = *std::min_element(readings.begin(), readings.end());
  const double limit = (1 + max_drift) * fastest;
  std::vector<bool> steady(readings.size() - 1);
  for (std::size_t i = 0; i + 1 < readings.size(); ++i) {
    steady[i] = readings[i] <= limit && readings[i + 1] <= limit;
  }
  return steady;
}

KeptRuns split_runs(const std::vector<double>& values, const std::vector<bool>& steady,
                    std::size_t first) {
  MESHSIM_CHECK(values.size() == steady.size(), "runs and their steadiness differ in number");
  KeptRuns kept;
  for (std::size_t i = first; i < values.size(); ++i) {
    (steady[i] ? kept.steady : kept.disturbed).push_back(values[i]);
  }
  return kept;
}

}  // namespace meshsim
