#include "validate/run/robust_stats.hpp"

#include <algorithm>

#include "sim/error.hpp"
#include "validate/run/microbench_stats.hpp"

namespace meshsim {

std::string_view to_string(MeasurementKind kind) {
  return kind == MeasurementKind::latency ? "latency" : "throughput";
}

std::string_view estimator_name(MeasurementKind kind) {
  return kind == MeasurementKind::latency ? "p10 (low quantile)" : "median";
}

RobustSummary summarize(std::vector<double> samples, MeasurementKind kind) {
  MESHSIM_CHECK(!samples.empty(), "summary of no timed samples");
  std::sort(samples.begin(), samples.end());
  RobustSummary s;
  s.repeats = static_cast<int>(samples.size());
  s.p10 = nearest_rank_percentile(samples, 0.1);
  s.p90 = nearest_rank_percentile(samples, 0.9);
  s.estimate = kind == MeasurementKind::latency ? s.p10 : median_seconds(samples);
  return s;
}

std::vector<double> drop_warmup(const std::vector<double>& samples, int warmup) {
  const auto skip = static_cast<std::size_t>(std::max(warmup, 0));
  if (samples.size() <= skip) return {};
  return {samples.begin() + static_cast<std::ptrdiff_t>(skip), samples.end()};
}

std::vector<int> interleaved_order(int configs, int rounds) {
  std::vector<int> order;
  if (configs <= 0 || rounds <= 0) return order;
  order.reserve(static_cast<std::size_t>(configs) * static_cast<std::size_t>(rounds));
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < configs; ++i) order.push_back((r + i) % configs);
  }
  return order;
}

}  // namespace meshsim
