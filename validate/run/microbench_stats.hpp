#pragma once
// The statistics of the calibration microbenchmarks (nccl-tests' definitions): the median of the
// timed runs, the algorithm bandwidth algbw = bytes / seconds (bytes: the larger of the input and
// the output buffer of one rank, i.e. the whole gathered/scattered/reduced buffer) and the bus
// bandwidth busbw = algbw * busbw_factor (sim/network_analytical.hpp: 2(n-1)/n for all-reduce,
// (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 for broadcast and permute).
#include <cstdint>
#include <vector>

#include "sim/program.hpp"

namespace meshsim {

// The median (mean of the two middle values for an even count); the input must not be empty.
double median_seconds(std::vector<double> seconds);

// Nearest-rank percentile of sorted values: the smallest value with at least q of them <= it
// (0 for none).
double nearest_rank_percentile(const std::vector<double>& sorted, double q);

double algbw(std::int64_t bytes, double seconds);
double busbw(CollectiveKind kind, int ranks, std::int64_t bytes, double seconds);

}  // namespace meshsim
