#include "validate/run/microbench_stats.hpp"

#include <algorithm>
#include <cmath>

#include "sim/error.hpp"
#include "sim/network_analytical.hpp"

namespace meshsim {

double median_seconds(std::vector<double> seconds) {
  MESHSIM_CHECK(!seconds.empty(), "median of no timed runs");
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  return n % 2 == 1 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
}

double nearest_rank_percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::max<std::size_t>(rank, 1) - 1];
}

double algbw(std::int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds : 0.0;
}

double busbw(CollectiveKind kind, int ranks, std::int64_t bytes, double seconds) {
  return algbw(bytes, seconds) * busbw_factor(kind, ranks);
}

}  // namespace meshsim
