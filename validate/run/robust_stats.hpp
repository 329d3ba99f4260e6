#pragma once
// Honest statistics of repeated measurements (ARCHITECTURE.md §5): every measured figure is the
// robust estimate of its timed repeats (warm-up discarded) with its spread, and the repeats of
// several configurations are interleaved rather than run back to back, so that a slow period of
// the machine spreads over every configuration instead of biasing one.
//
// The estimator depends on what is measured:
//   latency     microbenchmarks bounded by a fixed cost (p2p ping-pong, collectives): noise on a
//               shared machine only ever adds time, so the unloaded cost is the low end of the
//               samples — the nearest-rank 10th percentile (the minimum below 10 repeats; one
//               freak fast sample cannot pull it further than the second smallest of 10).
//   throughput  work whose sustained rate matters (compute kernels, whole makespans): the median,
//               which is what a step repeated many times takes half the time or less.
// The spread is the nearest-rank 10th and 90th percentiles of the same samples.
#include <cstdint>
#include <string_view>
#include <vector>

namespace meshsim {

enum class MeasurementKind : std::uint8_t { latency, throughput };
std::string_view to_string(MeasurementKind kind);
// "p10 (low quantile)" or "median": what the estimate of a kind is, for reports.
std::string_view estimator_name(MeasurementKind kind);

struct RobustSummary {
  double estimate = 0;  // the kind's estimator
  double p10 = 0;
  double p90 = 0;
  int repeats = 0;  // timed samples (warm-up excluded)
};

// The summary of timed samples (warm-up already removed); InvariantError when empty.
RobustSummary summarize(std::vector<double> samples, MeasurementKind kind);

// The samples after dropping the first `warmup` (none left when there are not more).
std::vector<double> drop_warmup(const std::vector<double>& samples, int warmup);

// The order in which `configs` configurations are each run `rounds` times (warm-up rounds
// first), one run per configuration per round: round r runs every configuration once, starting at r
// mod configs (so no configuration is always first; with 3 or more, none runs twice in a row).
// Entry i is the configuration of the i-th run.
std::vector<int> interleaved_order(int configs, int rounds);

}  // namespace meshsim
