#include "validate/microbench_stats.hpp"

#include <algorithm>

#include "sim/error.hpp"
#include "sim/network_analytical.hpp"

namespace meshsim {

double median_seconds(std::vector<double> seconds) {
  MESHSIM_CHECK(!seconds.empty(), "median of no timed runs");
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  return n % 2 == 1 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
}

double algbw(std::int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds : 0.0;
}

double busbw(CollectiveKind kind, int ranks, std::int64_t bytes, double seconds) {
  return algbw(bytes, seconds) * busbw_factor(kind, ranks);
}

}  // namespace meshsim
