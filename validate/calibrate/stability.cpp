#include "validate/calibrate/stability.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "validate/run/microbench_stats.hpp"
#include "validate/run/robust_stats.hpp"

namespace meshsim {

namespace {

std::vector<double> pooled(const StabilityCheckpoint& c) {
  std::vector<double> all;
  for (const auto& rank : c.reference_s) all.insert(all.end(), rank.begin(), rank.end());
  return all;
}

}  // namespace

double reference_reading(const StabilityCheckpoint& checkpoint) {
  return summarize(pooled(checkpoint), MeasurementKind::throughput).estimate;
}

double checkpoint_spread(const StabilityCheckpoint& checkpoint) {
  double spread = 0;
  for (std::vector<double> rank : checkpoint.reference_s) {
    if (rank.empty()) continue;
    std::sort(rank.begin(), rank.end());
    const double p25 = nearest_rank_percentile(rank, 0.25);
    const double p75 = nearest_rank_percentile(rank, 0.75);
    if (p25 > 0) spread = std::max(spread, p75 / p25 - 1);
  }
  return spread;
}

StabilityVerdict judge_stability(const std::vector<StabilityCheckpoint>& checkpoints, int cores,
                                 int ranks_on_node) {
  MESHSIM_CHECK(!checkpoints.empty(), "stability: no checkpoints");
  StabilityVerdict v;
  double lo = 0, hi = 0;
  std::vector<double> spreads;
  for (std::size_t i = 0; i < checkpoints.size(); ++i) {
    const StabilityCheckpoint& c = checkpoints[i];
    const double reading = reference_reading(c);
    lo = i == 0 ? reading : std::min(lo, reading);
    hi = i == 0 ? reading : std::max(hi, reading);
    spreads.push_back(checkpoint_spread(c));
    v.max_load = std::max(v.max_load, c.load_1min);
  }
  v.spread = median_seconds(spreads);
  v.drift = lo > 0 ? hi / lo - 1 : 0;
  v.stable = v.drift <= kMaxDrift && v.spread <= kMaxSpread;
  const std::string load =
      v.max_load < 0 ? "load average unknown"
                     : fmt::format("load average up to {:.2f} on {} cores, {} of them our ranks",
                                   v.max_load, cores, ranks_on_node);
  v.summary = fmt::format(
      "reference kernel drift {:.0f} % (limit {:.0f} %) and spread {:.0f} % (limit {:.0f} %) "
      "over {} checkpoints; {}",
      100 * v.drift, 100 * kMaxDrift, 100 * v.spread, 100 * kMaxSpread, checkpoints.size(), load);
  return v;
}

std::optional<std::string> stability_refusal(const StabilityVerdict& verdict, int attempts,
                                             bool force) {
  if (verdict.stable || force) return std::nullopt;
  return fmt::format(
      "the machine was not steady enough to calibrate on ({} attempt{}): {}; no profile written "
      "(--force writes it anyway)",
      attempts, attempts == 1 ? "" : "s", verdict.summary);
}

std::optional<double> parse_loadavg(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || value < 0) return std::nullopt;
  if (end != text.data() + text.size() && *end != ' ' && *end != '\n') return std::nullopt;
  return value;
}

nlohmann::ordered_json stability_json(const std::vector<StabilityCheckpoint>& checkpoints,
                                      const StabilityVerdict& verdict) {
  nlohmann::ordered_json j;
  j["stable"] = verdict.stable;
  j["drift"] = verdict.drift;
  j["max_drift"] = kMaxDrift;
  j["spread"] = verdict.spread;
  j["max_spread"] = kMaxSpread;
  j["max_load_1min"] = verdict.max_load;
  auto& list = j["checkpoints"] = nlohmann::ordered_json::array();
  for (const auto& c : checkpoints) {
    const RobustSummary s = summarize(pooled(c), MeasurementKind::throughput);
    list.push_back({{"phase", c.phase},
                    {"reference_s", s.estimate},
                    {"reference_s_p10", s.p10},
                    {"reference_s_p90", s.p90},
                    {"repeats", s.repeats},
                    {"spread", checkpoint_spread(c)},
                    {"load_1min", c.load_1min}});
  }
  j["summary"] = verdict.summary;
  return j;
}

}  // namespace meshsim
